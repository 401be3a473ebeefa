package io.collscope.flink.health;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.HardwareCause;
import io.collscope.avro.NvLinkCounters;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Gives each finding of a window the hardware evidence of its GPUs: the {@link GpuHealth} reads of
 * the finding's ranks in the window, judged against the communicator's other GPUs in the same
 * window.
 *
 * <p>The rule, per condition, on one GPU's reads in the window (counters as growth since the last
 * read before the window):
 *
 * <ul>
 *   <li>XID, ECC, LINK_ERRORS (NVLink replay + recovery + CRC), PCIE_ERRORS: the counter grew, by
 *       more than it grew on the median peer GPU;
 *   <li>HW_SLOWDOWN (clock events 0x8 or 0x80 without thermal 0x40), THERMAL (0x20 or 0x40),
 *       POWER_CAP (0x4): set in at least {@link #MIN_SHARE} of the GPU's reads, and in {@link
 *       #MIN_SHARE} more of them than on the median peer GPU, or with a mean SM clock {@link
 *       #CLOCK_DROP} or more below the peers' median. A power cap every GPU hits under load at the
 *       same clocks (an H100 at its 700 W limit, as in the recorded runs) explains no one rank;
 *   <li>CONTENDED: more compute processes on the GPU than on the median peer GPU.
 * </ul>
 *
 * The first condition present, in order of severity ({@link #RANK_ORDER}; a slow link looks at link
 * and PCIe errors before clocks, {@link #LINK_ORDER}), is the finding's {@code hardware_cause};
 * none: {@code NONE}. A finding's GPUs are its rank's (SLOW_RANK, SILENT_RANK: a silent rank's
 * reporter may still read its GPU), both ends' (SLOW_LINK), the node's (SLOW_NODE) or every GPU
 * (UNIFORM_SLOWDOWN, where the condition must hold on the median GPU against none). Ranks that
 * share a GPU count it once. The verdict and every other field are never changed: a window without
 * health records (older emitters, a node without NVML) keeps NONE and an empty evidence string.
 */
public final class HardwareRule {

  /** The share of a window's reads a clock event must be set in to be a cause. */
  public static final double MIN_SHARE = 0.2;

  /** How far below the peers' median SM clock a GPU whose clock event they share must run. */
  public static final double CLOCK_DROP = 0.10;

  static final List<HardwareCause> RANK_ORDER =
      List.of(
          HardwareCause.XID,
          HardwareCause.ECC,
          HardwareCause.HW_SLOWDOWN,
          HardwareCause.THERMAL,
          HardwareCause.POWER_CAP,
          HardwareCause.CONTENDED,
          HardwareCause.LINK_ERRORS,
          HardwareCause.PCIE_ERRORS);

  static final List<HardwareCause> LINK_ORDER =
      List.of(
          HardwareCause.XID,
          HardwareCause.ECC,
          HardwareCause.LINK_ERRORS,
          HardwareCause.PCIE_ERRORS,
          HardwareCause.HW_SLOWDOWN,
          HardwareCause.THERMAL,
          HardwareCause.POWER_CAP,
          HardwareCause.CONTENDED);

  static final long POWER_CAP_BIT = 0x4;
  static final long HW_SLOWDOWN_BITS = 0x8 | 0x80;
  static final long HW_THERMAL_BIT = 0x40;
  static final long THERMAL_BITS = 0x20 | HW_THERMAL_BIT;

  private HardwareRule() {}

  /** One GPU over one window: what its reads say. */
  public record GpuWindow(
      String host,
      int gpuIndex,
      List<Integer> ranks,
      int reads,
      double smMhz,
      int smMaxMhz,
      int maxTemperatureC,
      double powerW,
      double powerLimitW,
      double hwSlowdownShare,
      double thermalShare,
      double powerCapShare,
      long xids,
      long lastXid,
      long ecc,
      long linkErrors,
      long pcieReplays,
      int processes) {

    double score(HardwareCause c) {
      return switch (c) {
        case XID -> xids;
        case ECC -> ecc;
        case LINK_ERRORS -> linkErrors;
        case PCIE_ERRORS -> pcieReplays;
        case HW_SLOWDOWN -> hwSlowdownShare;
        case THERMAL -> thermalShare;
        case POWER_CAP -> powerCapShare;
        case CONTENDED -> processes;
        default -> 0;
      };
    }

    String key() {
      return host + "/" + gpuIndex;
    }
  }

  /**
   * Summarises each GPU's reads of a window. {@code before}: per rank, its last read before the
   * window (the base of the counters' growth), or none.
   */
  public static List<GpuWindow> gpus(List<GpuHealth> window, Map<Integer, GpuHealth> before) {
    Map<String, List<GpuHealth>> byGpu = new LinkedHashMap<>();
    List<GpuHealth> sorted = new ArrayList<>(window);
    sorted.sort(Comparator.comparing(GpuHealth::getEventTime).thenComparing(GpuHealth::getRank));
    for (GpuHealth h : sorted) {
      byGpu.computeIfAbsent(h.getHost() + "/" + h.getGpuIndex(), k -> new ArrayList<>()).add(h);
    }
    List<GpuWindow> out = new ArrayList<>();
    for (List<GpuHealth> reads : byGpu.values()) {
      // Ranks sharing a GPU carry the same reads: one rank's reads stand for the GPU.
      int firstRank = reads.get(0).getRank();
      List<Integer> ranks = reads.stream().map(GpuHealth::getRank).distinct().sorted().toList();
      List<GpuHealth> own = reads.stream().filter(h -> h.getRank() == firstRank).toList();
      GpuHealth base = before.getOrDefault(firstRank, own.get(0));
      GpuHealth last = own.get(own.size() - 1);
      double sm = 0, power = 0, limit = 0;
      int smN = 0, powerN = 0, smMax = -1, temp = -1, procs = -1, reasonsN = 0;
      int hw = 0, thermal = 0, cap = 0;
      long xids = 0, lastXid = -1;
      for (GpuHealth h : own) {
        if (h.getSmClockMhz() >= 0) {
          sm += h.getSmClockMhz();
          smN++;
        }
        smMax = Math.max(smMax, h.getSmClockMaxMhz());
        temp = Math.max(temp, h.getTemperatureC());
        if (h.getPowerMw() >= 0) {
          power += h.getPowerMw() / 1e3;
          powerN++;
        }
        limit = Math.max(limit, h.getPowerLimitMw() / 1e3);
        procs = Math.max(procs, h.getProcesses());
        long r = h.getClockEventReasons();
        if (r >= 0) {
          reasonsN++;
          if ((r & THERMAL_BITS) != 0) thermal++;
          if ((r & HW_SLOWDOWN_BITS) != 0 && (r & HW_THERMAL_BIT) == 0) hw++;
          if ((r & POWER_CAP_BIT) != 0) cap++;
        }
        if (h.getXidEvents() > 0) {
          xids += h.getXidEvents();
          lastXid = h.getLastXid();
        }
      }
      out.add(
          new GpuWindow(
              last.getHost(),
              last.getGpuIndex(),
              ranks,
              own.size(),
              smN == 0 ? -1 : sm / smN,
              smMax,
              temp,
              powerN == 0 ? -1 : power / powerN,
              limit,
              reasonsN == 0 ? 0 : (double) hw / reasonsN,
              reasonsN == 0 ? 0 : (double) thermal / reasonsN,
              reasonsN == 0 ? 0 : (double) cap / reasonsN,
              xids,
              lastXid,
              grew(base.getEccCorrected(), last.getEccCorrected())
                  + grew(base.getEccUncorrected(), last.getEccUncorrected()),
              linkErrors(last) - linkErrors(base) > 0 ? linkErrors(last) - linkErrors(base) : 0,
              grew(base.getPcieReplays(), last.getPcieReplays()),
              procs));
    }
    return out;
  }

  private static long grew(long from, long to) {
    return from < 0 || to < 0 ? 0 : Math.max(0, to - from);
  }

  private static long linkErrors(GpuHealth h) {
    long sum = 0;
    for (NvLinkCounters l : h.getNvlinks()) {
      sum +=
          Math.max(0, l.getReplay()) + Math.max(0, l.getRecovery()) + Math.max(0, l.getCrcFlit());
    }
    return sum;
  }

  /**
   * The attribution with each finding's hardware cause and evidence; {@code a} itself when the
   * window has no health records.
   */
  public static Attribution join(Attribution a, List<GpuWindow> gpus) {
    if (gpus.isEmpty() || a.getFindings().isEmpty()) return a;
    Attribution out = Attribution.newBuilder(a).build();
    List<Finding> findings = new ArrayList<>();
    for (Finding f : a.getFindings()) {
      Finding g = Finding.newBuilder(f).build();
      Judged j = judge(f, gpus);
      g.setHardwareCause(j.cause());
      g.setHardwareEvidence(j.evidence());
      findings.add(g);
    }
    out.setFindings(findings);
    return out;
  }

  /** A finding's hardware cause and the numbers behind it. */
  public record Judged(HardwareCause cause, String evidence) {}

  public static Judged judge(Finding f, List<GpuWindow> gpus) {
    List<GpuWindow> culprits = new ArrayList<>();
    boolean uniform = f.getKind() == FindingKind.UNIFORM_SLOWDOWN;
    for (GpuWindow g : gpus) {
      boolean mine =
          switch (f.getKind()) {
            case SLOW_LINK ->
                g.ranks().contains(f.getRank()) || g.ranks().contains(f.getFromRank());
            case SLOW_NODE ->
                f.getNode() != null && !f.getNode().isEmpty()
                    ? g.host().equals(f.getNode())
                    : g.ranks().contains(f.getRank());
            case UNIFORM_SLOWDOWN -> true;
            default -> g.ranks().contains(f.getRank());
          };
      if (mine) culprits.add(g);
    }
    if (culprits.isEmpty()) return new Judged(HardwareCause.NONE, "");
    List<GpuWindow> peers =
        uniform ? List.of() : gpus.stream().filter(g -> !culprits.contains(g)).toList();
    List<HardwareCause> order = f.getKind() == FindingKind.SLOW_LINK ? LINK_ORDER : RANK_ORDER;
    for (HardwareCause c : order) {
      double peer = median(peers.stream().mapToDouble(g -> g.score(c)).toArray());
      GpuWindow worst = null;
      if (uniform) {
        double typical = median(culprits.stream().mapToDouble(g -> g.score(c)).toArray());
        if (present(c, typical, 0)) {
          worst = culprits.stream().max(Comparator.comparingDouble(g -> g.score(c))).get();
        }
      } else {
        double peerSm =
            median(
                peers.stream().filter(g -> g.smMhz() >= 0).mapToDouble(GpuWindow::smMhz).toArray());
        for (GpuWindow g : culprits) {
          boolean slower = peerSm > 0 && g.smMhz() >= 0 && g.smMhz() <= (1 - CLOCK_DROP) * peerSm;
          if ((present(c, g.score(c), peer) || clockEventWithSlowerClocks(c, g, slower))
              && (worst == null || g.score(c) > worst.score(c))) {
            worst = g;
          }
        }
      }
      if (worst != null) return new Judged(c, evidence(c, worst, peers, culprits.size(), peer));
    }
    return new Judged(
        HardwareCause.NONE,
        evidence(HardwareCause.NONE, culprits.get(0), peers, culprits.size(), 0));
  }

  /**
   * A clock event every GPU shows (all at their power cap, say) still names the GPU whose clocks it
   * held {@link #CLOCK_DROP} or more below the peers' median clock.
   */
  static boolean clockEventWithSlowerClocks(HardwareCause c, GpuWindow g, boolean slower) {
    return slower
        && (c == HardwareCause.HW_SLOWDOWN
            || c == HardwareCause.THERMAL
            || c == HardwareCause.POWER_CAP)
        && g.score(c) >= MIN_SHARE;
  }

  static boolean present(HardwareCause c, double score, double peerMedian) {
    return switch (c) {
      case HW_SLOWDOWN, THERMAL, POWER_CAP -> score >= MIN_SHARE && score - peerMedian >= MIN_SHARE;
      case CONTENDED -> score > peerMedian && peerMedian >= 0;
      default -> score > 0 && score > peerMedian;
    };
  }

  static double median(double[] v) {
    if (v.length == 0) return 0;
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static String evidence(
      HardwareCause c, GpuWindow g, List<GpuWindow> peers, int culpritGpus, double peerMedian) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "GPU %d of %s (rank%s %s): SM %,.0f/%,d MHz, %d °C, %,.0f/%,.0f W",
            g.gpuIndex(),
            g.host(),
            g.ranks().size() > 1 ? "s" : "",
            g.ranks().stream().map(String::valueOf).reduce((x, y) -> x + "," + y).orElse(""),
            g.smMhz(),
            g.smMaxMhz(),
            g.maxTemperatureC(),
            g.powerW(),
            g.powerLimitW()));
    switch (c) {
      case HW_SLOWDOWN, THERMAL, POWER_CAP ->
          b.append(
              String.format(
                  Locale.ROOT,
                  "; %s %.0f %% of the window's %d reads (peers' median %.0f %%, SM %,.0f MHz)",
                  c,
                  100 * g.score(c),
                  g.reads(),
                  100 * peerMedian,
                  median(
                      peers.stream()
                          .filter(x -> x.smMhz() >= 0)
                          .mapToDouble(GpuWindow::smMhz)
                          .toArray())));
      case XID ->
          b.append(
              String.format(Locale.ROOT, "; %d XID event(s), last XID %d", g.xids(), g.lastXid()));
      case ECC -> b.append(String.format(Locale.ROOT, "; ECC errors +%d in the window", g.ecc()));
      case LINK_ERRORS ->
          b.append(
              String.format(
                  Locale.ROOT,
                  "; NVLink replay/recovery/CRC +%,d in the window (peers' median %,.0f)",
                  g.linkErrors(),
                  peerMedian));
      case PCIE_ERRORS ->
          b.append(
              String.format(
                  Locale.ROOT,
                  "; PCIe replays +%,d in the window (peers' median %,.0f)",
                  g.pcieReplays(),
                  peerMedian));
      case CONTENDED ->
          b.append(
              String.format(
                  Locale.ROOT,
                  "; %d processes on the GPU (peers' median %.0f)",
                  g.processes(),
                  peerMedian));
      default ->
          b.append(
              String.format(
                  Locale.ROOT,
                  "; nothing stands out against %d peer GPU(s): clock events HW %.0f %%, thermal %.0f"
                      + " %%, power cap %.0f %% of %d reads, XID %d, ECC +%d, NVLink +%d, PCIe +%d,"
                      + " %d processes",
                  peers.size(),
                  100 * g.hwSlowdownShare(),
                  100 * g.thermalShare(),
                  100 * g.powerCapShare(),
                  g.reads(),
                  g.xids(),
                  g.ecc(),
                  g.linkErrors(),
                  g.pcieReplays(),
                  g.processes()));
    }
    if (culpritGpus > 1) b.append(String.format(Locale.ROOT, " (worst of %d GPUs)", culpritGpus));
    return b.toString();
  }
}
