package io.collscope.flink.history;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.RankPhases;
import io.collscope.avro.WindowFinding;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.util.Collector;

/**
 * An attribution's findings as rows of the history's {@code findings} table: one per finding, with
 * the window's context (and nothing for a window without a culprit). Culprits are rare — a few
 * windows in a thousand — so a question about them reads these rows instead of decoding the
 * per-rank phase table and the findings list of every window (docs/BENCHMARKS.md, "History").
 */
public final class WindowFindings implements FlatMapFunction<Attribution, WindowFinding> {

  @Override
  public void flatMap(Attribution a, Collector<WindowFinding> out) {
    for (WindowFinding f : of(a)) out.collect(f);
  }

  /** The rows of one attribution. */
  public static List<WindowFinding> of(Attribution a) {
    List<WindowFinding> rows = new ArrayList<>(a.getFindings().size());
    if (a.getFindings().isEmpty()) return rows;
    long calls = 0;
    for (RankPhases r : a.getRanks()) calls = Math.max(calls, r.getCalls());
    int i = 0;
    for (Finding f : a.getFindings()) {
      rows.add(
          WindowFinding.newBuilder()
              .setCluster(a.getCluster())
              .setJob(a.getJob())
              .setCommunicator(a.getCommunicator())
              .setCollective(a.getCollective())
              .setWindowStart(a.getWindowStart())
              .setWindowEnd(a.getWindowEnd())
              .setWorldSize(a.getWorldSize())
              .setPresentRanks(a.getRanks().size())
              .setCalls(calls)
              .setVerdict(a.getVerdict().name())
              .setFindingIndex(i++)
              .setKind(f.getKind().name())
              .setRank(f.getRank())
              .setFromRank(f.getFromRank())
              .setCause(f.getCause().name())
              .setConfidence(f.getConfidence())
              .setExcessWaitUs(f.getExcessWaitUs())
              .setEvidence(f.getEvidence() == null ? "" : f.getEvidence().toString())
              .setNode(f.getNode() == null ? "" : f.getNode().toString())
              .setHardwareCause(f.getHardwareCause().name())
              .setHardwareEvidence(
                  f.getHardwareEvidence() == null ? "" : f.getHardwareEvidence().toString())
              .build());
    }
    return rows;
  }
}
