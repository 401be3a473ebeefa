package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the job's rank windows must hold, computed from the snapshots read back (each counted once),
 * against the rank windows it committed: a window is expected wherever a snapshot other than its
 * boot's first (the baseline) falls, with the calls its snapshots added (counters are cumulative:
 * {@code calls(seq) - calls(seq - 1)}). A window committed twice, or one whose calls exceed the
 * expected, counts snapshots twice (duplicated after the job's dedupe); a window missing, or short
 * of calls, lost them. Counted in calls, reported in windows and in calls; {@code mismatches} names
 * the first 20 windows that differ.
 */
public record WindowCount(
    long expectedWindows,
    long seenWindows,
    long windowsCommittedTwice,
    long expectedCalls,
    long seenCalls,
    long missingCalls,
    long excessCalls,
    List<String> mismatches) {

  /**
   * @param snapshots snapshots read back (copies are ignored: the first of each key counts)
   * @param windowMs the job's window length
   * @param from only windows ending after this (ms)
   * @param to only windows ending at or before this (ms): ones the watermark has certainly closed
   * @param committed the rank windows read back read_committed, of the same communicators
   */
  public static WindowCount of(
      Collection<CounterSnapshot> snapshots,
      long windowMs,
      long from,
      long to,
      Collection<RankWindow> committed) {
    Map<String, List<CounterSnapshot>> byBoot = new HashMap<>();
    Map<String, Boolean> seenKey = new HashMap<>();
    for (CounterSnapshot s : snapshots) {
      if (seenKey.put(DeliveryCount.key(s), true) != null) continue;
      byBoot
          .computeIfAbsent(
              s.getCluster()
                  + "/"
                  + s.getJob()
                  + "/"
                  + s.getCommunicator()
                  + "/"
                  + s.getRank()
                  + "/"
                  + s.getBootId(),
              k -> new ArrayList<>())
          .add(s);
    }
    Map<String, Long> expected = new TreeMap<>(); // communicator/rank@end -> calls
    for (List<CounterSnapshot> boot : byBoot.values()) {
      boot.sort(Comparator.comparingLong(CounterSnapshot::getSeq));
      // As the job's delta stage counts (DeltaFunction): a boot's first snapshot (seq 1) is a
      // delta from zero, its counters having started at zero; a first sighting later in a boot
      // only sets the baseline.
      for (int i = boot.get(0).getSeq() == 1 ? 0 : 1; i < boot.size(); i++) {
        CounterSnapshot s = boot.get(i);
        long t = s.getEventTime().toEpochMilli();
        long end = (Math.floorDiv(t, windowMs) + 1) * windowMs;
        if (end <= from || end > to) continue;
        expected.merge(
            key(s.getCommunicator(), s.getRank(), end),
            s.getCalls() - (i == 0 ? 0 : boot.get(i - 1).getCalls()),
            Long::sum);
      }
    }
    Map<String, long[]> seen = new HashMap<>(); // key -> {copies, calls}
    for (RankWindow w : committed) {
      String k = key(w.getCommunicator(), w.getRank(), w.getWindowEnd().toEpochMilli());
      if (!expected.containsKey(k)) continue;
      long[] c = seen.computeIfAbsent(k, x -> new long[2]);
      c[0]++;
      c[1] += w.getCalls();
    }
    long expectedCalls = 0;
    long seenCalls = 0;
    long missing = 0;
    long excess = 0;
    long twice = 0;
    List<String> mismatches = new ArrayList<>();
    for (Map.Entry<String, Long> e : expected.entrySet()) {
      long[] c = seen.getOrDefault(e.getKey(), new long[2]);
      if ((c[0] != 1 || c[1] != e.getValue()) && mismatches.size() < 20) {
        mismatches.add(
            e.getKey()
                + ": "
                + c[0]
                + " windows, calls "
                + c[1]
                + " (expected "
                + e.getValue()
                + ")");
      }
      expectedCalls += e.getValue();
      seenCalls += c[1];
      missing += Math.max(0, e.getValue() - c[1]);
      excess += Math.max(0, c[1] - e.getValue());
      twice += Math.max(0, c[0] - 1);
    }
    return new WindowCount(
        expected.size(), seen.size(), twice, expectedCalls, seenCalls, missing, excess, mismatches);
  }

  private static String key(CharSequence communicator, int rank, long end) {
    return communicator + "/" + rank + "@" + end;
  }

  /** No window missing, none twice, every call counted once. */
  public boolean exact() {
    return seenWindows == expectedWindows
        && windowsCommittedTwice == 0
        && missingCalls == 0
        && excessCalls == 0;
  }

  /** "0 windows committed twice, 0 calls counted twice": duplicates after the job's dedupe. */
  public String describeDuplicates() {
    return windowsCommittedTwice
        + " windows committed twice, "
        + excessCalls
        + " calls counted twice";
  }

  /** "22 of 22 rank windows (0 twice; 8,800 of 8,800 calls)". */
  public String describe() {
    return seenWindows
        + " of "
        + expectedWindows
        + " rank windows ("
        + windowsCommittedTwice
        + " committed twice; calls "
        + seenCalls
        + " of "
        + expectedCalls
        + ")";
  }
}
