package io.collscope.sim;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.Backoff;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * A discrete-event simulator of the one-shot all-reduce <em>protocol</em> of {@code CpuCollective}
 * (guard → copy → publish → wait → reduce, a ring of slots with acks, bounded waits), for worlds
 * too large for CPU threads or one node's GPUs (64 to 1024 ranks). It counts exactly what the CPU
 * backend counts and produces the records its reporter would, in simulated event time: the input of
 * the attribution's accuracy evaluation. It simulates the protocol, not the attribution rule's
 * model of it.
 *
 * <h2>Model</h2>
 *
 * Per rank r and collective s (all times simulated ns since the start):
 *
 * <ul>
 *   <li><b>arrival</b> t0 = end of r's collective s-1 + compute gap + injected arrival delay. The
 *       gap is {@code computeGapNanos} + an exponential draw of mean {@code computeJitterNanos},
 *       from a {@link SplittableRandom} per rank seeded from {@code seed}. Each rank draws the same
 *       numbers per collective whatever happens, so a run with faults differs from the clean run of
 *       the same seed only by the faults.
 *   <li><b>guard</b> until every peer p's ack of the collective that last used the slot (s -
 *       ringSlots) is visible: p's first ack of any sequence ≥ s - ringSlots (acks are "last
 *       sequence reduced", as in CpuCollective) + {@code linkLatencyNanos} + injected ack delay of
 *       r. A peer that is dead or never acked makes the guard time out.
 *   <li><b>copy</b> {@code bytes} / {@code copyBytesPerSecond} × (1 + U·{@code phaseJitter}) +
 *       injected copy delay; <b>publish</b> {@code publishNanos} + injected publish delay. The flag
 *       of p is visible to r at p's publication + link latency + injected link delay p→r.
 *   <li><b>wait</b> r polls with {@link Backoff}'s schedule: the first {@value #HOT_SPINS} + 1
 *       polls every {@code pollNanos}, then sleeps doubling from {@value #FIRST_SLEEP_NANOS} ns to
 *       {@value #MAX_SLEEP_NANOS} ns between polls (each poll still costs {@code pollNanos}). A
 *       peer is seen at the first poll at or after its visible time; peers first seen at the same
 *       poll tie. A peer already visible is late by one poll. Counted as CpuCollective counts them:
 *       each peer's lateness (seen - own publication) and its histogram; the whole wait billed to
 *       the peers seen at the last poll (equal integer shares) and each of them counted
 *       arrived-last — or r itself when all were there at the first poll.
 *   <li><b>reduce</b> {@code bytes} × W / {@code reduceBytesPerSecond} × (1 + U·{@code
 *       phaseJitter}), then the ack of s, visible to peers after the link latency.
 *   <li><b>timeouts</b>: a guard or wait still unsatisfied at the first poll more than {@code
 *       waitBudgetNanos} after it began aborts the collective: timeouts and calls +1, no ack, and
 *       the rank goes on with the next collective. A timed-out wait counts each peer still missing
 *       as late by the whole wait and bills the wait to them in equal shares; a guard timeout
 *       counts no lateness. A rank that aborted in guard never publishes that collective, and its
 *       peers time out waiting for it (CpuCollective would accept its flag of a later collective
 *       arriving within the budget, which needs faults longer than the budget to matter).
 *   <li><b>dead</b> ranks ({@link FaultModel#isDead}, checked at each arrival and each report)
 *       never run, publish, ack or report again.
 *   <li><b>clock</b>: cycles are ns and {@code cycles_per_second} is 1e9, as on the CPU backend;
 *       each collective adds its latency (guard start to its end) to both clock samples.
 *   <li><b>snapshots</b>: rank r's reporter reads r's totals at k·{@code snapshotIntervalNanos} +
 *       offset_r (offset_r drawn once in [0, {@code snapshotSkewNanos})), k ≥ 1, up to {@code
 *       durationNanos}; the totals contain the collectives that ended by then. Records as {@code
 *       Reporter} stamps them: event_time = start + simulated time (ms), seq per boot from 1, one
 *       boot_id per rank derived from the seed, host {@code sim-node-<r/8>}, device and backend
 *       {@code sim}. A rank skips reports until its first collective ended, as the reporter skips a
 *       block never published.
 * </ul>
 *
 * <p>Left out: data (no sums are computed or checked), per-link latency differences (one latency
 * for every link; NVLink vs network is a fault away), contention (copy and reduce bandwidths do not
 * depend on what the peers do), clock drift between ranks, torn reads, emitter restarts (one boot
 * per rank), GPU-only behaviour (counter publication every k-th collective, a peer's abort cutting
 * waits short).
 *
 * <h2>Cost</h2>
 *
 * Timing is computed collective by collective in O(W) (the latest ack and flag over peers come from
 * the two largest, plus the links a {@link FaultModel} may delay); the per-peer counters take O(W²)
 * per collective (about 10 ns per rank pair), counted just before the reports from a trace of the
 * collectives since the last ones (six longs and an int per rank and collective), for {@value
 * #GROUP} ranks at a time so each trace row is read once while their counters stay in cache, and
 * for each rank over its peers in order of publication so the poll lookups are predictable. A
 * record carries 19·W per-peer longs, mostly small varints: about 30 KB at W = 1024, 7.8 KB at 256,
 * 2.2 KB at 64; at the default one-second interval a simulated second is W records, 30 MB at W =
 * 1024.
 *
 * <p>Measured with the defaults (5 ms compute gap, 1 MiB) and no faults, 20 simulated seconds, on
 * the 2-core development VM while other builds ran: W = 64: 3,703 collectives, 1,216 records, 2.6
 * MB, 2.0 s wall; W = 256: 3,611 collectives, 4,864 records, 38 MB, 5.5 s; W = 1024: 3,332
 * collectives, 19,456 records, 574 MB, 35 s without a sink and 52 s recording to a file (boxing and
 * Avro-encoding the records takes the difference).
 */
public final class OneShotSimulator {

  /** Hot spins before the first sleep, as {@code Backoff}. */
  public static final int HOT_SPINS = Backoff.HOT_SPINS;

  /** First sleep between polls after the hot spins, as {@code Backoff}. */
  public static final long FIRST_SLEEP_NANOS = Backoff.FIRST_SLEEP_NANOS;

  /** Longest sleep between polls, as {@code Backoff}. */
  public static final long MAX_SLEEP_NANOS = Backoff.MAX_SLEEP_NANOS;

  /** Cycles are simulated nanoseconds, as on the CPU backend. */
  public static final long CYCLES_PER_SECOND = 1_000_000_000L;

  public static final String BACKEND = "sim";

  /** Ranks per simulated node: an HGX node's eight GPUs. {@link NodeFaults} uses the same. */
  public static final int RANKS_PER_NODE = 8;

  /** The host of rank {@code r}: {@code sim-node-<r / 8>}. */
  public static String host(int r) {
    return "sim-node-" + r / RANKS_PER_NODE;
  }

  /** A time that never comes: far beyond any run, yet sums of it and delays do not overflow. */
  static final long NEVER = 1L << 60;

  /** Ranks whose reports are counted together (their scratch stays in cache). */
  static final int GROUP = 8;

  static final byte ABSENT = 0;
  static final byte OK = 1;
  static final byte GUARD_TIMEOUT = 2;
  static final byte WAIT_TIMEOUT = 3;

  private final SimSpec spec;
  private final FaultModel faults;
  private final SimIdentity identity;
  private final SnapshotSink sink;
  private final int n;
  private final int ring;
  private final int ackHistory;
  private final long latency;
  private final long copyNanos;
  private final long reduceNanos;

  // The poll schedule after a wait begins: offsets of the polls from its start.
  // Up to tailBase a table: bucket k = d >> shift holds at most one poll offset (buckets are no
  // wider than a poll), so the first offset >= d is nearOffset[k] or, past it, nextOffset[k].
  // Beyond tailBase polls are stride apart.
  private final long poll;
  private final int shift;
  private final long[] nearOffset;
  private final long[] nextOffset;
  private final long tailBase;
  private final long stride;
  private final double invStride;

  // Per rank.
  private final SplittableRandom[] rng;
  private final long[] end;
  private final long[] deadAt;
  private final long[] ackedUpTo;
  private final long[] ackFirst; // [p * ackHistory + seq % ackHistory]: p's first ack >= seq
  private final int[][] suspects; // [to]: senders whose link to `to` may be delayed
  private final long[] reduceDur;
  private final RankTotals[] totals;
  private final long[] cursor; // next collective to count into totals
  private final long[] reportSeq;
  private final long[] offset;
  private final int[] reportOrder;
  private final boolean[] retired;
  private final String[] bootIds;
  private final long[] lastCalls;
  private final long[] lastTimeouts;

  // The trace: collectives not yet counted by every rank, row (seq & (cap - 1)) * n.
  private int cap;
  private long[] tStart;
  private long[] tGuard;
  private long[] tCopy;
  private long[] tPub;
  private long[] tWait;
  private long[] tEnd;
  private byte[] status;
  private int[] byPublication; // ranks of a row in order of publication
  private long traceLow = 1;

  private final long[] scratch;
  private final int[] gaters;
  private final long[] sortKeys;
  private final int idBits;
  private final long idMask;
  // The lateness counted for each member m of a report group, bucket-major (lateCount[(m * 16 + b)
  // * n + p]): a collective's peers fall in few buckets, so the counts it touches are adjacent;
  // added to the totals at the report.
  private final long[] lateSum;
  private final int[] lateCount;
  private long seqs;
  private long records;

  OneShotSimulator(SimSpec spec, FaultModel faults, SimIdentity identity, SnapshotSink sink) {
    this.spec = spec;
    this.faults = faults;
    this.identity = identity;
    this.sink = sink;
    this.n = spec.worldSize();
    this.ring = spec.ringSlots();
    this.ackHistory = ring + 1;
    this.latency = spec.linkLatencyNanos();
    this.copyNanos = spec.copyNanos();
    this.reduceNanos = spec.reduceNanos();

    this.poll = spec.pollNanos();
    List<Long> offs = new ArrayList<>();
    for (int i = 0; i <= HOT_SPINS; i++) offs.add((i + 1) * poll);
    long o = (HOT_SPINS + 1) * poll;
    for (long sleep = FIRST_SLEEP_NANOS; sleep < MAX_SLEEP_NANOS; sleep *= 2) {
      o += sleep + poll;
      offs.add(o);
    }
    this.tailBase = o;
    this.stride = MAX_SLEEP_NANOS + poll;
    this.invStride = 1.0 / stride;
    this.shift = 63 - Long.numberOfLeadingZeros(poll);
    int buckets = (int) (tailBase >> shift) + 1;
    this.nearOffset = new long[buckets];
    this.nextOffset = new long[buckets];
    int j = 0;
    for (int k = 0; k < buckets; k++) {
      long lo = (long) k << shift;
      while (j < offs.size() && offs.get(j) < lo) j++;
      nearOffset[k] = offs.get(Math.min(j, offs.size() - 1));
      nextOffset[k] = j + 1 < offs.size() ? offs.get(j + 1) : tailBase + stride;
    }

    this.rng = new SplittableRandom[n];
    this.end = new long[n];
    this.deadAt = new long[n];
    this.ackedUpTo = new long[n];
    this.ackFirst = new long[n * ackHistory];
    this.suspects = new int[n][];
    this.reduceDur = new long[n];
    this.totals = new RankTotals[n];
    this.cursor = new long[n];
    this.reportSeq = new long[n];
    this.offset = new long[n];
    this.retired = new boolean[n];
    this.bootIds = new String[n];
    this.lastCalls = new long[n];
    this.lastTimeouts = new long[n];
    SplittableRandom offsets = new SplittableRandom(SimFaults.mix(spec.seed() ^ 0x0FF5E7L));
    int[] buf = new int[n];
    for (int r = 0; r < n; r++) {
      rng[r] = new SplittableRandom(SimFaults.mix(spec.seed() * 0x9E3779B97F4A7C15L + r));
      deadAt[r] = NEVER;
      totals[r] = new RankTotals(n, spec.histogramBuckets());
      cursor[r] = 1;
      offset[r] = spec.snapshotSkewNanos() > 0 ? offsets.nextLong(spec.snapshotSkewNanos()) : 0;
      bootIds[r] =
          new UUID(SimFaults.mix(spec.seed() ^ (r * 2L + 1)), SimFaults.mix(~spec.seed() ^ r))
              .toString();
      int k = 0;
      for (int p = 0; p < n; p++) {
        if (p != r && faults.mayDelayLink(p, r)) buf[k++] = p;
      }
      suspects[r] = Arrays.copyOf(buf, k);
    }
    this.reportOrder =
        java.util.stream.IntStream.range(0, n)
            .boxed()
            .sorted((a, b) -> offset[a] != offset[b] ? Long.compare(offset[a], offset[b]) : a - b)
            .mapToInt(Integer::intValue)
            .toArray();

    this.cap = 256;
    allocateTrace(cap);
    this.scratch = new long[n];
    this.gaters = new int[n];
    this.sortKeys = new long[n];
    this.idBits = 32 - Integer.numberOfLeadingZeros(n - 1);
    this.idMask = (1L << idBits) - 1;
    this.lateSum = new long[GROUP * n];
    this.lateCount = new int[GROUP * n * RankTotals.LATE_BUCKETS];
  }

  /**
   * Simulates {@code spec} with {@code faults} and sends every rank's snapshots to {@code sink} in
   * event-time order (the sink is neither flushed nor closed).
   */
  public static SimSummary run(
      SimSpec spec, FaultModel faults, SimIdentity identity, SnapshotSink sink) {
    return new OneShotSimulator(spec, faults, identity, sink).simulate();
  }

  private SimSummary simulate() {
    long interval = spec.snapshotIntervalNanos();
    long round = 1;
    int idx = 0;
    long minEnd = Long.MIN_VALUE;
    while (true) {
      // The next group of reports: up to GROUP ranks next in report order, in this round.
      int k = 0;
      while (k < Math.min(GROUP, n - idx)
          && round * interval + offset[reportOrder[idx + k]] <= spec.durationNanos()) {
        k++;
      }
      if (k == 0) break;
      long tLast = round * interval + offset[reportOrder[idx + k - 1]];
      if (tLast < minEnd) {
        // Every collective of every rank that ends by tLast has been simulated.
        reportGroup(idx, k, round * interval);
        idx += k;
        if (idx == n) {
          idx = 0;
          round++;
        }
        continue;
      }
      seqs++;
      ensureCapacity(seqs);
      minEnd = simulateCollective(seqs);
    }
    long calls = 0;
    long timeouts = 0;
    int dead = 0;
    for (int r = 0; r < n; r++) {
      calls += lastCalls[r];
      timeouts += lastTimeouts[r];
      if (deadAt[r] <= spec.durationNanos()) dead++;
    }
    return new SimSummary(seqs, calls, records, timeouts, dead, spec.durationNanos());
  }

  // ---- timing: one collective of every rank, O(W) --------------------------------------------

  /** Simulates collective {@code s} of every live rank; returns the earliest end among them. */
  private long simulateCollective(long s) {
    int row = row(s);
    long need = s - ring;
    long a1 = Long.MIN_VALUE;
    long a2 = Long.MIN_VALUE;
    int a1r = -1;
    if (need >= 1) {
      for (int p = 0; p < n; p++) {
        long v =
            need <= ackedUpTo[p] ? ackFirst[p * ackHistory + (int) (need % ackHistory)] : NEVER;
        if (v > a1) {
          a2 = a1;
          a1 = v;
          a1r = p;
        } else if (v > a2) {
          a2 = v;
        }
      }
    }
    long budget = spec.waitBudgetNanos();
    double jitter = spec.phaseJitter();
    for (int r = 0; r < n; r++) {
      int i = row + r;
      if (deadAt[r] != NEVER) {
        absent(i);
        continue;
      }
      SplittableRandom g = rng[r];
      long gap = spec.computeGapNanos() + (long) (spec.computeJitterNanos() * g.nextExponential());
      double cu = g.nextDouble();
      double ru = g.nextDouble();
      long a = end[r] + gap + nn(faults.arrivalDelayNanos(r, s, end[r]));
      if (faults.isDead(r, a)) {
        deadAt[r] = a;
        absent(i);
        continue;
      }
      tStart[i] = a;
      long target;
      if (need < 1) {
        target = a;
      } else {
        long m = a1r == r ? a2 : a1;
        target = m >= NEVER ? NEVER : m + latency + nn(faults.ackDelayNanos(r, s, a));
      }
      long ready = firstPoll(a, target);
      long timeout = firstPoll(a, a + budget + 1);
      if (ready > timeout) {
        status[i] = GUARD_TIMEOUT;
        tGuard[i] = timeout;
        tPub[i] = NEVER;
        tEnd[i] = timeout;
        end[r] = timeout;
        continue;
      }
      tGuard[i] = ready;
      long c = ready + copyNanos + (long) (copyNanos * jitter * cu);
      c += nn(faults.copyDelayNanos(r, s, ready));
      tCopy[i] = c;
      tPub[i] = c + spec.publishNanos() + nn(faults.publishDelayNanos(r, s, c));
      reduceDur[r] = reduceNanos + (long) (reduceNanos * jitter * ru);
      status[i] = OK; // for now: published
    }

    sortByPublication(row);
    long b1 = Long.MIN_VALUE;
    long b2 = Long.MIN_VALUE;
    int b1r = -1;
    for (int p = 0; p < n; p++) {
      long v = tPub[row + p];
      if (v > b1) {
        b2 = b1;
        b1 = v;
        b1r = p;
      } else if (v > b2) {
        b2 = v;
      }
    }
    long minEnd = NEVER;
    for (int r = 0; r < n; r++) {
      int i = row + r;
      if (status[i] != OK) {
        if (status[i] == GUARD_TIMEOUT) minEnd = Math.min(minEnd, tEnd[i]);
        continue;
      }
      long start = tPub[i];
      long m = b1r == r ? b2 : b1;
      long visible = m >= NEVER ? NEVER : m + latency;
      for (int p : suspects[r]) {
        long pp = tPub[row + p];
        if (pp < NEVER) {
          visible = Math.max(visible, pp + latency + nn(faults.linkDelayNanos(p, r, s, pp)));
        }
      }
      long ready = firstPoll(start, visible);
      long timeout = firstPoll(start, start + budget + 1);
      long e;
      if (ready <= timeout) {
        tWait[i] = ready;
        e = ready + reduceDur[r];
        ack(r, s, e);
      } else {
        status[i] = WAIT_TIMEOUT;
        tWait[i] = timeout;
        e = timeout;
      }
      tEnd[i] = e;
      end[r] = e;
      minEnd = Math.min(minEnd, e);
    }
    return minEnd;
  }

  /**
   * The ranks of a row in order of publication, for the per-peer counting: in that order each
   * rank's peers come in order of lateness (but for delayed links), so the branches of the poll
   * lookup are predicted; in index order they are coin flips and cost more than everything else.
   */
  private void sortByPublication(int row) {
    long min = Long.MAX_VALUE;
    for (int p = 0; p < n; p++) min = Math.min(min, tPub[row + p]);
    long most = (1L << (62 - idBits)) - 1;
    for (int p = 0; p < n; p++) {
      long rel = Math.min(tPub[row + p] - min, most);
      sortKeys[p] = rel << idBits | p;
    }
    Arrays.sort(sortKeys);
    for (int q = 0; q < n; q++) byPublication[row + q] = (int) (sortKeys[q] & idMask);
  }

  private void absent(int i) {
    status[i] = ABSENT;
    tPub[i] = NEVER;
    tEnd[i] = NEVER;
  }

  /** Rank r acks s at t: its first ack of every sequence up to s not acked before. */
  private void ack(int r, long s, long t) {
    for (long k = Math.max(ackedUpTo[r] + 1, s - ackHistory + 1); k <= s; k++) {
      ackFirst[r * ackHistory + (int) (k % ackHistory)] = t;
    }
    ackedUpTo[r] = s;
  }

  private static long nn(long delay) {
    return Math.max(0, delay);
  }

  /** The first poll of a wait begun at {@code start} that sees something visible at {@code t}. */
  long firstPoll(long start, long t) {
    return t >= NEVER ? NEVER : start + pollOffset(t - start);
  }

  /** Offset from the wait's start of the first poll at or after offset {@code d} (≥ one poll). */
  long pollOffset(long d) {
    if (d <= tailBase) {
      long dd = Math.max(d, 0);
      int k = (int) (dd >> shift);
      long near = nearOffset[k];
      return dd <= near ? near : nextOffset[k];
    }
    long o = tailBase + (long) ((d - tailBase) * invStride) * stride;
    while (o < d) o += stride; // at most once or twice: the estimate is off by rounding only
    return o;
  }

  // ---- counters: per rank, just before its report, O(W) per collective ----------------------

  /**
   * Reports ranks {@code reportOrder[idx .. idx + k)} at their times in this round, in that order.
   * Their collectives are counted together, collective by collective, so each trace row is read
   * once for the group while it is in cache.
   */
  private void reportGroup(int idx, int k, long roundStart) {
    long low = Long.MAX_VALUE;
    for (int m = 0; m < k; m++) {
      int r = reportOrder[idx + m];
      long t = roundStart + offset[r];
      if (!retired[r] && (deadAt[r] <= t || faults.isDead(r, t))) {
        retired[r] = true; // a dead process never reports again
      }
      if (!retired[r]) low = Math.min(low, cursor[r]);
    }
    for (long s = low; s <= seqs; s++) {
      boolean more = false;
      int row = row(s);
      for (int m = 0; m < k; m++) {
        int r = reportOrder[idx + m];
        if (retired[r]) continue;
        if (cursor[r] > s) more = true; // its counting starts later
        if (cursor[r] != s || tEnd[row + r] > roundStart + offset[r]) continue;
        count(r, s, m);
        cursor[r]++;
        more = true;
      }
      if (!more) break;
    }
    for (int m = 0; m < k; m++) {
      int r = reportOrder[idx + m];
      if (!retired[r]) report(r, roundStart + offset[r], m);
    }
  }

  /** Adds what group member m counted to r's totals and sends r's record. */
  private void report(int r, long t, int m) {
    RankTotals acc = totals[r];
    long[] late = acc.peerLateCycles();
    long[] hist = acc.peerLateHistogram();
    int sums = m * n;
    int counts = m * n * RankTotals.LATE_BUCKETS;
    for (int p = 0; p < n; p++) {
      late[p] += lateSum[sums + p];
      lateSum[sums + p] = 0;
      for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
        hist[p * RankTotals.LATE_BUCKETS + b] += lateCount[counts + b * n + p];
        lateCount[counts + b * n + p] = 0;
      }
    }
    if (acc.get(Counter.CALLS) == 0) return; // nothing published yet
    CounterSnapshot rec = acc.writeTo(new CounterSnapshot());
    rec.setCluster(identity.cluster());
    rec.setJob(identity.job());
    rec.setCommunicator(identity.communicator());
    rec.setCollective(identity.collective());
    rec.setBackend(BACKEND);
    rec.setWorldSize(n);
    rec.setRank(r);
    rec.setHost(host(r));
    rec.setDevice(BACKEND);
    rec.setBootId(bootIds[r]);
    rec.setSeq(++reportSeq[r]);
    rec.setEventTime(Instant.ofEpochMilli(identity.start().toEpochMilli() + t / 1_000_000));
    rec.setCyclesPerSecond(CYCLES_PER_SECOND);
    rec.setReadRetries(0L);
    sink.send(rec);
    records++;
    lastCalls[r] = acc.get(Counter.CALLS);
    lastTimeouts[r] = acc.get(Counter.TIMEOUTS);
  }

  /** Counts rank r's collective s into its totals, as CpuCollective's rank thread does. */
  private void count(int r, long s, int m) {
    int row = row(s);
    int i = row + r;
    RankTotals acc = totals[r];
    byte st = status[i];
    if (st == ABSENT) return;
    long t0 = tStart[i];
    long t1 = tGuard[i];
    acc.addCycles(Phase.GUARD, t1 - t0);
    if (st == GUARD_TIMEOUT) {
      acc.add(Counter.TIMEOUTS, 1);
      acc.add(Counter.CALLS, 1);
      finish(acc, t1 - t0);
      return;
    }
    long start = tPub[i];
    long w = tWait[i];
    acc.addCycles(Phase.COPY, tCopy[i] - t1);
    acc.addCycles(Phase.PUBLISH, start - tCopy[i]);
    acc.addCycles(Phase.WAIT, w - start);
    boolean ok = st == OK;

    long[] src;
    int base;
    long add;
    int[] sus = suspects[r];
    if (sus.length == 0) {
      src = tPub;
      base = row;
      add = latency;
    } else {
      for (int p = 0; p < n; p++) scratch[p] = tPub[row + p] + latency;
      for (int p : sus) {
        long pp = tPub[row + p];
        if (pp < NEVER) scratch[p] += nn(faults.linkDelayNanos(p, r, s, pp));
      }
      src = scratch;
      base = 0;
      add = 0;
    }
    long first = start + poll;
    int g = 0;
    int sums = m * n;
    int counts = m * n * RankTotals.LATE_BUCKETS;
    for (int q = 0; q < n; q++) {
      int p = byPublication[row + q];
      if (p == r) continue;
      long v = src[base + p] + add;
      long seen;
      if (v > w) {
        seen = w; // still missing at the timeout: late by the whole wait, and gated it
        gaters[g++] = p;
      } else {
        seen = start + pollOffset(v - start);
        if (ok && seen == w) gaters[g++] = p;
      }
      long late = seen - start;
      lateSum[sums + p] += late;
      lateCount[counts + RankTotals.lateBucketOf(late) * n + p]++;
    }
    boolean firstPollEnded = ok && w == first;
    long[] billed = acc.peerWaitCycles();
    long[] last = acc.peerArrivedLast();
    if (g > 0) {
      long share = (w - start) / g;
      for (int k = 0; k < g; k++) {
        billed[gaters[k]] += share;
        if (!firstPollEnded) last[gaters[k]]++;
      }
    }
    if (firstPollEnded) last[r]++; // every peer was already there
    if (!ok) {
      acc.add(Counter.TIMEOUTS, 1);
      acc.add(Counter.CALLS, 1);
      finish(acc, w - t0);
      return;
    }
    acc.addCycles(Phase.REDUCE, tEnd[i] - w);
    acc.add(Counter.CALLS, 1);
    acc.add(Counter.BYTES, spec.bytes());
    finish(acc, tEnd[i] - t0);
  }

  private static void finish(RankTotals acc, long latency) {
    acc.recordLatency(latency);
    acc.add(Counter.CLOCK_NS, latency);
    acc.add(Counter.CLOCK_CYCLES, latency);
  }

  // ---- the trace ------------------------------------------------------------------------------

  private int row(long s) {
    return (int) (s & (cap - 1)) * n;
  }

  private void allocateTrace(int c) {
    long cells = (long) c * n;
    if (cells > Integer.MAX_VALUE) {
      throw new IllegalStateException(
          "trace of " + c + " collectives x " + n + " ranks is too large: report more often");
    }
    tStart = new long[(int) cells];
    tGuard = new long[(int) cells];
    tCopy = new long[(int) cells];
    tPub = new long[(int) cells];
    tWait = new long[(int) cells];
    tEnd = new long[(int) cells];
    status = new byte[(int) cells];
    byPublication = new int[(int) cells];
  }

  /** Makes room for collective s, keeping every collective some rank has yet to count. */
  private void ensureCapacity(long s) {
    if (s - traceLow < cap) return;
    long low = s;
    for (int r = 0; r < n; r++) {
      if (!retired[r]) low = Math.min(low, cursor[r]);
    }
    traceLow = low;
    if (s - traceLow < cap) return;
    int oldCap = cap;
    long[][] old = {tStart, tGuard, tCopy, tPub, tWait, tEnd};
    byte[] oldStatus = status;
    int[] oldOrder = byPublication;
    int c = oldCap;
    while (s - traceLow >= c) c *= 2;
    cap = c;
    allocateTrace(c);
    long[][] fresh = {tStart, tGuard, tCopy, tPub, tWait, tEnd};
    for (long k = traceLow; k < s; k++) {
      int from = (int) (k & (oldCap - 1)) * n;
      int to = row(k);
      for (int a = 0; a < old.length; a++) System.arraycopy(old[a], from, fresh[a], to, n);
      System.arraycopy(oldStatus, from, status, to, n);
      System.arraycopy(oldOrder, from, byPublication, to, n);
    }
  }

  /**
   * Simulates a clean world and records it: {@code OneShotSimulator WORLD SECONDS FILE}. Prints the
   * summary, the wall time and the recording's size.
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: OneShotSimulator WORLD SECONDS FILE");
      System.exit(2);
    }
    SimSpec spec =
        SimSpec.of(Integer.parseInt(args[0]))
            .withDurationNanos((long) (Double.parseDouble(args[1]) * 1e9));
    Path file = Path.of(args[2]);
    Files.deleteIfExists(file);
    long t0 = System.nanoTime();
    SimSummary summary;
    try (SnapshotRecording.Writer w = new SnapshotRecording.Writer(file)) {
      summary = run(spec, FaultModel.NONE, SimIdentity.of("sim", "sim", "sim", Instant.EPOCH), w);
      w.flush();
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    System.out.printf(
        "%s%nwall %.2f s, %d bytes recorded (%.0f bytes/record)%n",
        summary, wall, Files.size(file), (double) Files.size(file) / summary.records());
  }
}
