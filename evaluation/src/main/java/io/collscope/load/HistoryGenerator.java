package io.collscope.load;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Classification;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.avro.WindowFinding;
import io.collscope.flink.alert.AlertFunction;
import io.collscope.flink.alert.Streak;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.flink.history.ParquetFormat;
import io.collscope.flink.history.WindowFindings;
import io.collscope.model.CommunicatorKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.io.LocalOutputFile;

/**
 * Writes synthetic history, as the job's history sinks would have written it for a cluster whose
 * communicators are groups of consecutive ranks (tensor-parallel groups of 8 ranks on one host),
 * straight into the Parquet layout of {@link HistoryLayout}: the load for the history queries and
 * their benchmark, and a history with known answers for their tests.
 *
 * <p>Every window of every communicator has one {@link RankWindow} per present rank and one {@link
 * Attribution}; mean phase times and per-peer lateness carry a few percent of noise. On top, the
 * {@link Episode}s of {@link #EPISODES} (placed at fixed fractions of the span, on communicators
 * chosen by index modulo their number) make culprits, alerts and a before/after change for the
 * queries to find. Every value is a function of the seed, the communicator and the window, so the
 * same arguments write the same rows whatever the thread count.
 */
public final class HistoryGenerator {

  /** What generate was asked for. */
  public record Config(
      int ranks,
      int ranksPerCommunicator,
      Duration span,
      Duration window,
      Instant end,
      long seed,
      String cluster,
      String job,
      int threads,
      java.util.Set<String> tables) {

    /** Every table. */
    public Config(
        int ranks,
        int ranksPerCommunicator,
        Duration span,
        Duration window,
        Instant end,
        long seed,
        String cluster,
        String job,
        int threads) {
      this(
          ranks,
          ranksPerCommunicator,
          span,
          window,
          end,
          seed,
          cluster,
          job,
          threads,
          java.util.Set.copyOf(HistoryLayout.TABLES));
    }

    public Config {
      if (tables.isEmpty() || !HistoryLayout.TABLES.containsAll(tables)) {
        throw new IllegalArgumentException(
            "--tables must name some of " + HistoryLayout.TABLES + ", got " + tables);
      }
      if (ranks < 2) throw new IllegalArgumentException("--ranks must be >= 2, got " + ranks);
      if (ranksPerCommunicator < 2 || ranksPerCommunicator > ranks) {
        throw new IllegalArgumentException(
            "--ranks-per-communicator must be in 2..--ranks, got " + ranksPerCommunicator);
      }
      if (ranks % ranksPerCommunicator != 0) {
        throw new IllegalArgumentException(
            "--ranks " + ranks + " is not a multiple of --ranks-per-communicator");
      }
      if (window.toMillis() < 1000 || 3_600_000 % window.toMillis() != 0) {
        throw new IllegalArgumentException(
            "--window must be at least 1s and divide an hour, got " + window);
      }
      if (span.compareTo(window) < 0) {
        throw new IllegalArgumentException("the span must hold at least one window");
      }
      if (threads < 1) throw new IllegalArgumentException("--threads must be >= 1");
    }

    int communicators() {
      return ranks / ranksPerCommunicator;
    }

    long windows() {
      return span.toMillis() / window.toMillis();
    }

    /** End of the last window: {@code end} rounded down to a whole window. */
    long endMillis() {
      return Math.floorDiv(end.toEpochMilli(), window.toMillis()) * window.toMillis();
    }

    long startMillis() {
      return endMillis() - windows() * window.toMillis();
    }
  }

  /**
   * A fault on a communicator from one fraction of the span to another: in a share of its windows
   * ({@code everyWindow}: all), ranks wait {@code delayUs} longer on {@code rank} (SLOW_RANK), or
   * rank {@code rank} sees {@code fromRank}'s flag later (SLOW_LINK), or every phase costs {@code
   * factor} times as much (UNIFORM_SLOWDOWN; with {@code shift} it is a lasting change, not a
   * finding), or {@code rank} stops reporting while its peers time out on it (SILENT_RANK).
   */
  public record Episode(
      FindingKind kind,
      int communicator,
      int rank,
      int fromRank,
      double delayUs,
      double factor,
      double from,
      double to,
      double share,
      boolean shift,
      Cause cause) {

    boolean alerts() {
      return share >= 1 && !shift;
    }

    AlertKind alertKind() {
      return switch (kind) {
        case SLOW_RANK -> AlertKind.SLOW_RANK;
        case SLOW_LINK -> AlertKind.SLOW_LINK;
        case SILENT_RANK -> AlertKind.DEAD_RANK;
        default -> AlertKind.LATENCY_REGRESSION;
      };
    }
  }

  /** The injected culprits and changes; docs/HISTORY.md lists what the queries find. */
  public static final List<Episode> EPISODES =
      List.of(
          // a rank late for six hours (a throttled GPU), and the alert it raised
          new Episode(
              FindingKind.SLOW_RANK, 3, 5, -1, 300, 1, 0.20, 0.24, 1, false, Cause.ARRIVED_LATE),
          // a degraded NVLink for a few hours
          new Episode(FindingKind.SLOW_LINK, 17, 6, 3, 150, 1, 0.40, 0.42, 1, false, Cause.LINK),
          // a whole group slower for two hours (a noisy neighbour on the host)
          new Episode(
              FindingKind.UNIFORM_SLOWDOWN, 42, -1, -1, 0, 1.4, 0.60, 0.612, 1, false, Cause.LINK),
          // a rank that died and came back after half an hour
          new Episode(
              FindingKind.SILENT_RANK, 100, 2, -1, 1000, 1, 0.80, 0.803, 1, false, Cause.TIMED_OUT),
          // a flaky rank: late in one window of ten, all week, never long enough to alert
          new Episode(FindingKind.SLOW_RANK, 7, 1, -1, 120, 1, 0, 1, 0.1, false, Cause.RING_FULL),
          // a slow link in the last day
          new Episode(FindingKind.SLOW_LINK, 60, 0, 7, 200, 1, 0.93, 0.95, 1, false, Cause.LINK),
          // a lasting regression of one group from the middle on (a driver upgrade): compare's
          // SLOWER
          new Episode(
              FindingKind.UNIFORM_SLOWDOWN, 42, -1, -1, 0, 1.2, 0.5, 1, 1, true, Cause.UNKNOWN),
          // and a lasting improvement of another: compare's FASTER
          new Episode(
              FindingKind.UNIFORM_SLOWDOWN, 9, -1, -1, 0, 0.8, 0.5, 1, 1, true, Cause.UNKNOWN));

  /** Collectives per second per rank, and the message size, of every communicator. */
  static final double CALLS_PER_SECOND = 200;

  static final long BYTES_PER_CALL = 1 << 20;

  /** The collective every communicator runs, as an emitter names it. */
  static final String COLLECTIVE = "allreduce_oneshot_bf16";

  /** Mean µs per collective of guard, copy, publish, wait, reduce when nothing is wrong. */
  private static final double[] BASE_PHASES_US = {1.5, 6.0, 2.0, 12.0, 9.0};

  private static final double CLOCK_HZ = 1.98e9;

  /**
   * Row groups of about 2 MB (some 3,500 attributions): a dozen or more per hour file, each of a
   * few communicators, so that a filter on a communicator or a verdict skips most of a file by the
   * row groups' statistics before reading its wide columns.
   */
  private static final long ROW_GROUP_BYTES = 2L << 20;

  private static final int FIRE_AFTER = 3;

  private static final long HOUR_MS = 3_600_000L;

  /** What was written. */
  public record Summary(long rankWindows, long attributions, long alerts, long files, long bytes) {}

  private final Config config;
  private final List<Episode> episodes;
  private final String[] communicatorNames;

  /** Eight ranks per host, as on an 8-GPU node. */
  private final String[] hostNames;

  public HistoryGenerator(Config config) {
    this(config, EPISODES);
  }

  HistoryGenerator(Config config, List<Episode> episodes) {
    this.config = config;
    this.episodes = episodes;
    int n = config.communicators();
    int digits = Integer.toString(n - 1).length();
    communicatorNames = new String[n];
    for (int c = 0; c < n; c++) {
      communicatorNames[c] = String.format(Locale.ROOT, "tp%0" + Math.max(3, digits) + "d", c);
    }
    hostNames = new String[(config.ranks() + 7) / 8];
    for (int h = 0; h < hostNames.length; h++) {
      hostNames[h] = String.format(Locale.ROOT, "node%04d", h);
    }
  }

  /** The communicator an episode lands on: its index modulo the number of communicators. */
  int communicatorOf(Episode e) {
    return e.communicator() % config.communicators();
  }

  public String communicatorName(int c) {
    return communicatorNames[c];
  }

  /** Writes every hour of the span under {@code base}, one file per table and hour. */
  public Summary write(Path base) throws IOException, InterruptedException {
    long first =
        Math.floorDiv(config.startMillis() + config.window().toMillis(), HOUR_MS) * HOUR_MS;
    long last = Math.floorDiv(config.endMillis(), HOUR_MS) * HOUR_MS;
    List<Long> hours = new ArrayList<>();
    for (long h = first; h <= last; h += HOUR_MS) hours.add(h);
    Map<String, List<Alert>> alertsByPartition = alertsByPartition();
    AtomicLong rankWindows = new AtomicLong();
    AtomicLong attributions = new AtomicLong();
    AtomicLong alerts = new AtomicLong();
    AtomicLong files = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(config.threads());
    try {
      List<Future<?>> done = new ArrayList<>();
      for (long h : hours) {
        done.add(
            pool.submit(
                () -> {
                  writeHour(base, h, rankWindows, attributions, files);
                  return null;
                }));
      }
      for (Future<?> f : done) {
        try {
          f.get();
        } catch (java.util.concurrent.ExecutionException e) {
          if (e.getCause() instanceof IOException io) throw io;
          throw new IllegalStateException(e.getCause());
        }
      }
    } finally {
      pool.shutdownNow();
    }
    if (!config.tables().contains(HistoryLayout.ALERTS)) alertsByPartition = Map.of();
    for (Map.Entry<String, List<Alert>> e : alertsByPartition.entrySet()) {
      write(base, HistoryLayout.ALERTS, e.getKey(), Alert.class, e.getValue());
      alerts.addAndGet(e.getValue().size());
      files.incrementAndGet();
    }
    return new Summary(
        rankWindows.get(), attributions.get(), alerts.get(), files.get(), sizeOf(base));
  }

  private void writeHour(
      Path base, long hourStart, AtomicLong rankWindows, AtomicLong attributions, AtomicLong files)
      throws IOException {
    long w = config.window().toMillis();
    // The windows whose end lies in this hour (their partition) and in the span.
    long firstEnd = Math.max(config.startMillis() + w, Math.floorDiv(hourStart + w - 1, w) * w);
    long lastEnd = Math.min(config.endMillis(), Math.floorDiv(hourStart + HOUR_MS - 1, w) * w);
    if (firstEnd > lastEnd) return;
    String partition = HistoryLayout.partition(hourStart);
    boolean writeWindows = config.tables().contains(HistoryLayout.RANK_WINDOWS);
    boolean writeAttributions = config.tables().contains(HistoryLayout.ATTRIBUTIONS);
    boolean writeFindings = config.tables().contains(HistoryLayout.FINDINGS);
    List<WindowFinding> findings = new ArrayList<>();
    long rw = 0;
    long at = 0;
    try (ParquetWriter<RankWindow> rwOut =
            writeWindows
                ? ParquetFormat.writer(
                    RankWindow.class,
                    new LocalOutputFile(inProgress(base, HistoryLayout.RANK_WINDOWS, partition)),
                    ROW_GROUP_BYTES)
                : null;
        ParquetWriter<Attribution> atOut =
            writeAttributions
                ? ParquetFormat.writer(
                    Attribution.class,
                    new LocalOutputFile(inProgress(base, HistoryLayout.ATTRIBUTIONS, partition)),
                    ROW_GROUP_BYTES)
                : null) {
      // Communicator by communicator, so each row group holds few communicators.
      for (int c = 0; c < config.communicators(); c++) {
        for (long end = firstEnd; end <= lastEnd; end += w) {
          Window win = window(c, end);
          if (rwOut != null) {
            for (RankWindow r : win.rankWindows) rwOut.write(r);
            rw += win.rankWindows.size();
          }
          if (atOut != null) {
            atOut.write(win.attribution);
            at++;
          }
          if (writeFindings) findings.addAll(WindowFindings.of(win.attribution));
        }
      }
    }
    if (writeWindows) commit(base, HistoryLayout.RANK_WINDOWS, partition);
    if (writeAttributions) commit(base, HistoryLayout.ATTRIBUTIONS, partition);
    // As the job's sink: an hour without a finding has no findings file.
    if (!findings.isEmpty()) {
      write(base, HistoryLayout.FINDINGS, partition, WindowFinding.class, findings);
      files.incrementAndGet();
    }
    files.addAndGet((writeWindows ? 1 : 0) + (writeAttributions ? 1 : 0));
    rankWindows.addAndGet(rw);
    attributions.addAndGet(at);
  }

  /** One communicator's window ending at {@code endMs}: its rank windows and its attribution. */
  /** One window of one communicator: its ranks' windows and its attribution (for tests). */
  public record Window(List<RankWindow> rankWindows, Attribution attribution) {}

  public Window window(int c, long endMs) {
    int n = config.ranksPerCommunicator();
    long windowMs = config.window().toMillis();
    long index = (endMs - config.startMillis()) / windowMs - 1;
    SplittableRandom rnd = new SplittableRandom(mix(config.seed(), c, endMs));
    double position = (double) index / config.windows();

    double factor = 1;
    double[] extraWait = new double[n];
    double[][] extraLate = new double[n][n];
    boolean[] silent = new boolean[n];
    long[] timeouts = new long[n];
    List<Finding> findings = new ArrayList<>();
    for (Episode e : episodes) {
      if (communicatorOf(e) != c || position < e.from() || position >= e.to()) continue;
      if (e.share() < 1 && rnd.nextDouble() >= e.share()) continue;
      double delay = e.delayUs() * (1 + 0.05 * rnd.nextGaussian());
      switch (e.kind()) {
        case SLOW_RANK -> {
          for (int r = 0; r < n; r++) {
            if (r == e.rank()) continue;
            extraWait[r] += delay;
            extraLate[r][e.rank()] += delay;
          }
          findings.add(finding(e, delay, "column " + e.rank() + " high: peers wait"));
        }
        case SLOW_LINK -> {
          extraWait[e.rank()] += delay;
          extraLate[e.rank()][e.fromRank()] += delay;
          findings.add(finding(e, delay, "cell " + e.rank() + "<-" + e.fromRank() + " high"));
        }
        case SILENT_RANK -> {
          silent[e.rank()] = true;
          for (int r = 0; r < n; r++) {
            if (r == e.rank()) continue;
            extraWait[r] += delay;
            extraLate[r][e.rank()] += delay;
          }
          findings.add(finding(e, delay, "rank missing; peers time out on it"));
        }
        case UNIFORM_SLOWDOWN -> {
          factor *= e.factor();
          if (!e.shift()) {
            double excess = (e.factor() - 1) * Arrays.stream(BASE_PHASES_US).sum();
            findings.add(finding(e, excess, "collective over its baseline"));
          }
        }
        default -> {}
      }
      if (e.kind() == FindingKind.SILENT_RANK) {
        long calls = Math.round(CALLS_PER_SECOND * windowMs / 1000.0);
        for (int r = 0; r < n; r++) if (r != e.rank()) timeouts[r] = calls / 2;
      }
    }
    findings.sort((a, b) -> Double.compare(b.getExcessWaitUs(), a.getExcessWaitUs()));

    CommunicatorKey key = new CommunicatorKey(config.cluster(), config.job(), communicatorName(c));
    Instant end = Instant.ofEpochMilli(endMs);
    Instant start = Instant.ofEpochMilli(endMs - windowMs);
    int hostIndex = (c * n) / 8;
    List<RankWindow> rows = new ArrayList<>(n);
    List<RankPhases> phases = new ArrayList<>(n);
    List<Integer> missing = new ArrayList<>();
    double collective = Double.MAX_VALUE;
    int maxWaitRank = -1;
    double maxWait = -1;
    for (int r = 0; r < n; r++) {
      if (silent[r]) {
        missing.add(r);
        continue;
      }
      long calls =
          Math.round(CALLS_PER_SECOND * windowMs / 1000.0 * (1 + 0.01 * rnd.nextGaussian()));
      double[] ph = new double[BASE_PHASES_US.length];
      for (int p = 0; p < ph.length; p++) {
        ph[p] = BASE_PHASES_US[p] * factor * (1 + 0.04 * rnd.nextGaussian());
      }
      ph[3] += extraWait[r];
      List<Double> late = new ArrayList<>(n);
      List<Double> lateP99 = new ArrayList<>(n);
      List<Double> peerWait = new ArrayList<>(n);
      List<Long> arrivedLast = new ArrayList<>(n);
      double lateSum = 0;
      double[] l = new double[n];
      for (int p = 0; p < n; p++) {
        l[p] = p == r ? 0 : 2.0 * factor * (0.5 + rnd.nextDouble()) + extraLate[r][p];
        lateSum += l[p];
      }
      for (int p = 0; p < n; p++) {
        late.add(l[p]);
        lateP99.add(p == r ? 0.0 : bucketEdge(l[p] * 1.5 + 4 * factor));
        peerWait.add(lateSum == 0 ? 0.0 : ph[3] * l[p] / lateSum);
        arrivedLast.add(lateSum == 0 ? 0L : Math.round(calls * l[p] / lateSum));
      }
      double total = ph[0] + ph[1] + ph[2] + ph[3] + ph[4];
      double p99 = bucketEdge(total * 1.6);
      collective = Math.min(collective, total);
      if (ph[3] > maxWait) {
        maxWait = ph[3];
        maxWaitRank = r;
      }
      rows.add(
          RankWindow.newBuilder()
              .setCluster(key.cluster())
              .setJob(key.job())
              .setCommunicator(key.communicator())
              .setCollective(COLLECTIVE)
              .setRank(r)
              .setWorldSize(n)
              .setHost(hostNames[hostIndex + r / 8])
              .setWindowStart(start)
              .setWindowEnd(end)
              .setCalls(calls)
              .setBytes(calls * BYTES_PER_CALL)
              .setTimeouts(timeouts[r])
              .setGuardMeanUs(ph[0])
              .setCopyMeanUs(ph[1])
              .setPublishMeanUs(ph[2])
              .setWaitMeanUs(ph[3])
              .setReduceMeanUs(ph[4])
              .setP50Us(bucketEdge(total))
              .setP99Us(p99)
              .setClockHz(CLOCK_HZ)
              .setPeerWaitMeanUs(peerWait)
              .setPeerLateMeanUs(late)
              .setPeerLateP99Us(lateP99)
              .setPeerArrivedLast(arrivedLast)
              .build());
      phases.add(
          new RankPhases(r, calls, ph[0], ph[1], ph[2], ph[3], ph[4], p99, 0.0, 0.0, 0.0, null));
    }
    double baseline = Arrays.stream(BASE_PHASES_US).sum();
    Verdict verdict =
        findings.isEmpty()
            ? Verdict.NONE
            : findings.size() > 1 ? Verdict.MULTIPLE : verdictOf(findings.get(0).getKind());
    Attribution a =
        Attribution.newBuilder()
            .setCluster(key.cluster())
            .setJob(key.job())
            .setCommunicator(key.communicator())
            .setCollective(COLLECTIVE)
            .setWindowStart(start)
            .setWindowEnd(end)
            .setWorldSize(n)
            .setRanks(phases)
            .setMaxWaitRank(maxWaitRank)
            .setMaxWaitMeanUs(Math.max(0, maxWait))
            .setVerdict(verdict)
            .setFindings(findings)
            .setConfidence(findings.isEmpty() ? 0.95 : findings.get(0).getConfidence())
            .setCollectiveUs(collective == Double.MAX_VALUE ? 0 : collective)
            .setBytesPerCall(BYTES_PER_CALL)
            .setBaselineUs(baseline)
            .setThresholdUs(round(Math.max(5, baseline / 4)))
            .setNoiseUs(1.5 + 0.2 * rnd.nextDouble())
            .setMissingRanks(missing)
            .build();
    return new Window(rows, a);
  }

  private static Finding finding(Episode e, double excess, String evidence) {
    return Finding.newBuilder()
        .setKind(e.kind())
        .setRank(e.rank())
        .setFromRank(e.fromRank())
        .setCause(e.cause())
        .setConfidence(0.9)
        .setExcessWaitUs(round(excess))
        .setEvidence(String.format(Locale.ROOT, "%s: %.1fus excess (synthetic)", evidence, excess))
        .build();
  }

  private static Verdict verdictOf(FindingKind k) {
    return switch (k) {
      case SLOW_RANK -> Verdict.SLOW_RANK;
      case SLOW_LINK -> Verdict.SLOW_LINK;
      case SILENT_RANK -> Verdict.SILENT_RANK;
      case UNIFORM_SLOWDOWN -> Verdict.UNIFORM_SLOWDOWN;
      default -> Verdict.UNKNOWN;
    };
  }

  /**
   * Each alerting episode's FIRING transition {@value #FIRE_AFTER} windows after it started and its
   * RESOLVED one as many after it ended (hysteresis, as the job's alerts), by partition.
   */
  Map<String, List<Alert>> alertsByPartition() {
    Map<String, List<Alert>> out = new TreeMap<>();
    long w = config.window().toMillis();
    for (Episode e : episodes) {
      if (!e.alerts()) continue;
      long firstEnd = config.startMillis() + (long) Math.ceil(e.from() * config.windows()) * w + w;
      long lastEnd = config.startMillis() + (long) Math.ceil(e.to() * config.windows()) * w;
      long firing = firstEnd + (FIRE_AFTER - 1) * w;
      long resolved = lastEnd + FIRE_AFTER * w;
      if (firing > config.endMillis() || firing > lastEnd) continue;
      int c = communicatorOf(e);
      Streak st = new Streak();
      st.severity = e.kind() == FindingKind.SILENT_RANK ? "critical" : "warning";
      st.sizeBucket = AlertFunction.sizeBucket(BYTES_PER_CALL);
      st.collective = COLLECTIVE;
      st.startsAt = firing;
      String subject =
          e.kind()
              + (e.kind() == FindingKind.SLOW_LINK
                  ? ":" + e.fromRank() + "->" + e.rank()
                  : e.rank() >= 0 ? ":" + e.rank() : "");
      CommunicatorKey key =
          new CommunicatorKey(config.cluster(), config.job(), communicatorName(c));
      Map<String, String> labels = AlertFunction.labels(key, e.alertKind(), subject, st);
      String summary =
          String.format(
              Locale.ROOT,
              "%s on %s: %s (synthetic)",
              e.alertKind(),
              key,
              subject.contains(":") ? subject.substring(subject.indexOf(':') + 1) : "all ranks");
      double baseline = Arrays.stream(BASE_PHASES_US).sum();
      double current =
          e.kind() == FindingKind.UNIFORM_SLOWDOWN ? baseline * e.factor() : e.delayUs();
      add(out, alert(labels, e, st, AlertState.FIRING, firing, null, baseline, current, summary));
      if (resolved <= config.endMillis()) {
        add(
            out,
            alert(
                labels,
                e,
                st,
                AlertState.RESOLVED,
                resolved,
                resolved,
                baseline,
                current,
                summary));
      }
    }
    return out;
  }

  private static void add(Map<String, List<Alert>> out, Alert a) {
    out.computeIfAbsent(HistoryLayout.partition(HistoryLayout.eventTime(a)), k -> new ArrayList<>())
        .add(a);
  }

  private static Alert alert(
      Map<String, String> labels,
      Episode e,
      Streak st,
      AlertState state,
      long windowEnd,
      Long endsAt,
      double baseline,
      double current,
      String summary) {
    return Alert.newBuilder()
        .setAlertId(AlertFunction.fingerprint(labels))
        .setCluster(labels.get("cluster"))
        .setJob(labels.get("job"))
        .setCommunicator(labels.get("communicator"))
        .setKind(e.alertKind())
        .setState(state)
        .setSeverity(st.severity)
        .setLabels(labels)
        .setAnnotations(Map.of("summary", summary))
        .setStartsAt(Instant.ofEpochMilli(st.startsAt))
        .setEndsAt(endsAt == null ? null : Instant.ofEpochMilli(endsAt))
        .setClassification(
            e.alertKind() == AlertKind.LATENCY_REGRESSION
                ? Classification.SLOWER
                : Classification.UNKNOWN)
        .setMetric(
            e.alertKind() == AlertKind.LATENCY_REGRESSION ? "latency_mean_us" : "excess_wait_us")
        .setBaseline(baseline)
        .setCurrent(current)
        .setNoise(1.5)
        .setWindowEnd(Instant.ofEpochMilli(windowEnd))
        .setMessage(summary)
        .build();
  }

  private static <T extends SpecificRecordBase> void write(
      Path base, String table, String partition, Class<T> type, List<T> records)
      throws IOException {
    try (ParquetWriter<T> out =
        ParquetFormat.writer(
            type, new LocalOutputFile(inProgress(base, table, partition)), ROW_GROUP_BYTES)) {
      for (T r : records) out.write(r);
    }
    commit(base, table, partition);
  }

  /**
   * Where a partition's file is written: a hidden name that readers' {@code *.parquet} globs skip,
   * renamed by {@link #commit} once complete, as FileSink does, so a query running while the
   * generator writes never opens a half-written file.
   */
  private static Path inProgress(Path base, String table, String partition) throws IOException {
    Path f = committed(base, table, partition);
    Files.createDirectories(f.getParent());
    Path tmp = f.resolveSibling("." + f.getFileName() + ".inprogress");
    Files.deleteIfExists(tmp);
    return tmp;
  }

  private static void commit(Path base, String table, String partition) throws IOException {
    Path f = committed(base, table, partition);
    Files.move(
        f.resolveSibling("." + f.getFileName() + ".inprogress"),
        f,
        StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  private static Path committed(Path base, String table, String partition) {
    return base.resolve(table)
        .resolve(partition)
        .resolve(HistoryLayout.FILE_PREFIX + "-generated-0" + HistoryLayout.FILE_SUFFIX);
  }

  private static long sizeOf(Path base) throws IOException {
    try (var s = Files.walk(base)) {
      return s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
    }
  }

  /** The upper edge of the factor-of-two latency bucket holding {@code us}, in µs. */
  static double bucketEdge(double us) {
    double cycles = Math.max(1, us * CLOCK_HZ / 1e6);
    long edge = Long.highestOneBit((long) cycles) << 1;
    return round(edge * 1e6 / CLOCK_HZ);
  }

  /** Nanosecond resolution, for values people read (excess, thresholds). */
  private static double round(double us) {
    return Math.rint(us * 1000) / 1000;
  }

  /** splitmix64 over the seed, the communicator and the window. */
  private static long mix(long seed, int c, long endMs) {
    long z = seed ^ (c * 0x9E3779B97F4A7C15L) ^ (endMs * 0xBF58476D1CE4E5B9L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
