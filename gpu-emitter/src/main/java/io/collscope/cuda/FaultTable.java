package io.collscope.cuda;

import io.collscope.collective.ConfigException;
import io.collscope.collective.FaultPlan;
import io.collscope.collective.FaultPlan.Fault;
import java.util.List;

/**
 * The faults injected into one rank, as the kernel reads them from its parameter array ({@code
 * P_N_FAULTS} entries at {@code P_FAULTS}, layout in {@code osar_params.h}): per entry what it
 * delays (and, for a link, from which peer), the delay, the fraction as a threshold per 2^32 of
 * {@link FaultPlan#mix} and the fault's index in the plan. The kernel sums the entries whose
 * pattern selects the collective's sequence, as {@link FaultPlan}'s getters do on the CPU.
 *
 * <p>Active intervals are the host's part: a fault outside its interval has its delay written as 0,
 * and the dispatcher rewrites the table when that changes ({@link RankBuffers#updateFaults}),
 * between two batches of launches.
 */
final class FaultTable {

  private FaultTable() {}

  /** Whether fault {@code f} delays something of rank {@code rank} in the kernel. */
  private static int what(Fault f, int rank) {
    return switch (f.kind()) {
      case SLOW_RANK -> f.rank() == rank ? OsarLayout.F_ARRIVAL : -1;
      case SLOW_COPY -> f.rank() == rank ? OsarLayout.F_COPY : -1;
      case SLOW_PUBLISH -> f.rank() == rank ? OsarLayout.F_PUBLISH : -1;
      case SLOW_ACK -> f.rank() == rank ? OsarLayout.F_ACK : -1;
      case SLOW_LINK -> f.rank() == rank ? OsarLayout.F_LINK | f.from() << 8 : -1;
      case SLOW_ALL -> OsarLayout.F_ALL;
      case DEAD_RANK, REBOOT_RANK -> -1; // the host's: the dispatcher and the reporter
    };
  }

  /** The table's words for rank {@code rank} at run time {@code elapsedNanos}. */
  static long[] of(FaultPlan plan, int rank, long elapsedNanos) {
    List<Fault> faults = plan.faults();
    long[] t = new long[OsarLayout.F_WORDS * count(plan, rank)];
    int e = 0;
    for (int i = 0; i < faults.size(); i++) {
      Fault f = faults.get(i);
      int what = what(f, rank);
      if (what < 0) continue;
      int at = OsarLayout.F_WORDS * e++;
      t[at + OsarLayout.F_WHAT] = what;
      t[at + OsarLayout.F_DELAY] = f.activeAt(elapsedNanos) ? f.nanos() : 0;
      t[at + OsarLayout.F_THRESHOLD] = FaultPlan.threshold(f.percent());
      t[at + OsarLayout.F_INDEX] = i;
    }
    return t;
  }

  /** Entries of rank {@code rank}'s table. */
  static int count(FaultPlan plan, int rank) {
    int c = 0;
    for (Fault f : plan.faults()) {
      if (what(f, rank) >= 0) c++;
    }
    return c;
  }

  /** Throws unless the kernel can run {@code plan}: tables fit, no reboot-rank. */
  static void check(FaultPlan plan, int worldSize) {
    for (Fault f : plan.faults()) {
      if (f.kind() == FaultPlan.Kind.REBOOT_RANK) {
        throw new ConfigException(
            "fault", "'" + f + "': reboot-rank is supported on the cpu backend only");
      }
    }
    for (int r = 0; r < worldSize; r++) {
      if (count(plan, r) > OsarLayout.MAX_FAULTS) {
        throw new ConfigException(
            "fault",
            "rank "
                + r
                + " has "
                + count(plan, r)
                + " faults; the cuda backend takes at most "
                + OsarLayout.MAX_FAULTS
                + " per rank");
      }
    }
  }

  /**
   * What the kernel's {@code fault_delays} computes from a table, for tests: the rank's own delays
   * by F_ARRIVAL..F_ACK, then the delay of each peer's flag.
   */
  static long[] delays(long[] table, long seq, int rank, int world) {
    long[] d = new long[OsarLayout.F_ALL + world];
    for (int at = 0; at < table.length; at += OsarLayout.F_WORDS) {
      long ns = table[at + OsarLayout.F_DELAY];
      long h = FaultPlan.mix(seq, (int) table[at + OsarLayout.F_INDEX]) >>> 32;
      if (ns == 0 || h >= table[at + OsarLayout.F_THRESHOLD]) continue;
      int what = (int) (table[at + OsarLayout.F_WHAT] & 0xff);
      if (what == OsarLayout.F_LINK) {
        d[OsarLayout.F_ALL + (int) (table[at + OsarLayout.F_WHAT] >> 8)] += ns;
      } else if (what == OsarLayout.F_ALL) {
        for (int p = 0; p < world; p++) if (p != rank) d[OsarLayout.F_ALL + p] += ns;
      } else {
        d[what] += ns;
      }
    }
    return d;
  }
}
