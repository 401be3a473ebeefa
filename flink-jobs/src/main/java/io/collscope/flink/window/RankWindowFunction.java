package io.collscope.flink.window;

import io.collscope.avro.RankWindow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/** Turns a rank's window sums into per-collective means: the {@link RankWindow} record. */
public final class RankWindowFunction
    extends ProcessWindowFunction<RankWindowAccumulator, RankWindow, String, TimeWindow> {

  @Override
  public void process(
      String key, Context ctx, Iterable<RankWindowAccumulator> in, Collector<RankWindow> out) {
    for (RankWindowAccumulator a : in) {
      out.collect(toRankWindow(a, ctx.window().getStart(), ctx.window().getEnd()));
    }
  }

  public static RankWindow toRankWindow(RankWindowAccumulator a, long start, long end) {
    double per = a.calls == 0 ? 0 : 1.0 / a.calls;
    List<Double> peerWait = new ArrayList<>(a.peerWaitUs.length);
    List<Long> peerLast = new ArrayList<>(a.peerArrivedLast.length);
    for (int p = 0; p < a.peerWaitUs.length; p++) {
      peerWait.add(a.peerWaitUs[p] * per);
      peerLast.add(a.peerArrivedLast[p]);
    }
    return RankWindow.newBuilder()
        .setCommunicator(a.communicator)
        .setRank(a.rank)
        .setWorldSize(a.worldSize)
        .setHost(a.host)
        .setWindowStartMs(Instant.ofEpochMilli(start))
        .setWindowEndMs(Instant.ofEpochMilli(end))
        .setCalls(a.calls)
        .setBytes(a.bytes)
        .setGuardUs(a.guardUs * per)
        .setCopyUs(a.copyUs * per)
        .setPublishUs(a.publishUs * per)
        .setWaitUs(a.waitUs * per)
        .setReduceUs(a.reduceUs * per)
        .setP50Us(Histograms.quantileUs(a.histogram, 0.50, a.cyclesPerSecond))
        .setP99Us(Histograms.quantileUs(a.histogram, 0.99, a.cyclesPerSecond))
        .setPeerWaitUs(peerWait)
        .setPeerArrivedLast(peerLast)
        .setTimeouts(a.timeouts)
        .build();
  }
}
