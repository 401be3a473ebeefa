package io.collscope.flink.fuzz;

import io.collscope.avro.CounterSnapshot;
import io.collscope.flink.source.RawRecord;
import io.collscope.model.RankTotals;
import io.collscope.schema.Snapshots;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * Hostile input for the job, record {@code i} a pure function of {@code (seed, i)} so any failure
 * replays from its index. One record in eight is a <b>canary</b>: a valid snapshot of a two-rank
 * communicator ({@link #CANARY}) whose counters grow by a known amount per sequence, so its windows
 * prove that state stayed sound next to the garbage. The others are a valid snapshot of a
 * <b>victim</b> communicator (world 2, 4 or 8) mutated by one of:
 *
 * <ul>
 *   <li>{@link Kind#BIT_FLIP}: 1–8 random bits flipped;
 *   <li>{@link Kind#TRUNCATE}: cut at a random length;
 *   <li>{@link Kind#RANDOM_BYTES}: 0–2,000 random bytes;
 *   <li>{@link Kind#HEADER_GARBAGE}: the single-object header of the record's schema version, then
 *       random bytes;
 *   <li>{@link Kind#SPLICE}: bytes inserted, deleted or overwritten at random;
 *   <li>{@link Kind#SEMANTIC}: well-formed Avro that breaks the contract ({@link Semantic}: world
 *       size 0 or 10^9, per-peer arrays of the wrong length, cycles per second 0 or negative, a
 *       counter at 2^63−1, event time in 1970 or 2200, a 10 MB boot id, ...). Every one of these
 *       must be dead-lettered.
 * </ul>
 *
 * <p>The valid encoding a byte-level mutation starts from (and a valid victim's) is written with
 * every published version of the snapshot schema in turn ({@link #versionOf}): the history's
 * versions and the current one, so the decoder's paths for older writers meet garbage too.
 */
public final class FuzzedRecords implements GeneratorFunction<Long, RawRecord> {

  public static final String TOPIC = "fuzz";
  public static final String CANARY = "canary";
  public static final String VICTIM = "victim";

  /** Event time of record 0; each group of eight records is 250 ms later. */
  public static final long BASE_MS = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  public static final long STEP_MS = 250;

  /** A canary's counters grow by this many calls per sequence. */
  public static final long CANARY_CALLS = 100;

  public enum Kind {
    CANARY,
    BIT_FLIP,
    TRUNCATE,
    RANDOM_BYTES,
    HEADER_GARBAGE,
    SPLICE,
    SEMANTIC,
    VALID_VICTIM
  }

  /** Contract breaches that decode as Avro; each has a word its dead letter's reason contains. */
  public enum Semantic {
    WORLD_ZERO("world_size"),
    WORLD_HUGE("world_size"),
    PEER_ARRAYS_SHORT("per-peer"),
    LATE_ARRAYS_WRONG("peer_late"),
    CPS_ZERO("cycles_per_second"),
    CPS_NEGATIVE("cycles_per_second"),
    COUNTER_MAX("above"),
    NEGATIVE_COUNTER("negative"),
    EVENT_TIME_1970("event_time"),
    EVENT_TIME_2200("event_time"),
    BOOT_ID_HUGE("boot_id"),
    SEQ_ZERO("seq"),
    RANK_NEGATIVE("rank"),
    RANK_OUTSIDE("rank"),
    EMPTY_HISTOGRAM("latency_histogram"),
    EMPTY_COMMUNICATOR("communicator");

    public final String reasonContains;

    Semantic(String reasonContains) {
      this.reasonContains = reasonContains;
    }
  }

  private final long seed;

  public FuzzedRecords(long seed) {
    this.seed = seed;
  }

  /** A bounded source of {@code count} fuzzed records. */
  public static DataGeneratorSource<RawRecord> source(long seed, long count) {
    return new DataGeneratorSource<>(
        new FuzzedRecords(seed), count, TypeInformation.of(RawRecord.class));
  }

  public static Kind kindOf(long i) {
    return Kind.values()[(int) (i % 8)];
  }

  /** The contract breach of a {@link Kind#SEMANTIC} record. */
  public static Semantic semanticOf(long i) {
    return Semantic.values()[(int) ((i / 8) % Semantic.values().length)];
  }

  /**
   * The calls canary rank {@code rank} made in the first {@code count} records: rank 0's canaries
   * are records 16k and rank 1's 16k + 8, each at sequence k + 1, its counters cumulative.
   */
  public static long canaryCalls(long count, int rank) {
    long lastSeq = (count - 1 - 8L * rank) / 16 + 1;
    return CANARY_CALLS * lastSeq;
  }

  /**
   * Every published CounterSnapshot schema, oldest first, the current one last: the history's
   * versions as its INDEX lists them. Loaded once per JVM (schemas do not travel with the
   * function).
   */
  public static List<Schema> snapshotVersions() {
    return Versions.ALL;
  }

  private static final class Versions {
    static final List<Schema> ALL = load();

    private static List<Schema> load() {
      List<Schema> out = new ArrayList<>();
      String dir = "/collscope/avro/history/";
      try (InputStream index = FuzzedRecords.class.getResourceAsStream(dir + "INDEX")) {
        if (index == null) throw new IllegalStateException("no schema history INDEX packaged");
        for (String line : new String(index.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
          String f = line.strip();
          if (!f.startsWith("CounterSnapshot.")) continue;
          try (InputStream in = FuzzedRecords.class.getResourceAsStream(dir + f)) {
            out.add(new Schema.Parser().parse(in));
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      out.add(CounterSnapshot.getClassSchema());
      return List.copyOf(out);
    }
  }

  /**
   * The schema version (an index into {@link #snapshotVersions}) whose encoding record {@code i}
   * starts from: each group of eight records takes the next version in turn. Canaries and contract
   * breaches are always of the current version.
   */
  public static int versionOf(long i) {
    Kind k = kindOf(i);
    if (k == Kind.CANARY || k == Kind.SEMANTIC) return Versions.ALL.size() - 1;
    return (int) ((i / 8) % Versions.ALL.size());
  }

  /** A name for version {@code v}: "v1", ..., "current". */
  public static String versionName(int v) {
    return v == Versions.ALL.size() - 1 ? "current" : "v" + (v + 1);
  }

  /**
   * {@code s} written with schema {@code version}: single-object encoding of that version's fields,
   * each taken from the current field of the same name (or the one that has it as an alias). Every
   * field of an older version still exists in the current one.
   */
  static byte[] encodeAs(CounterSnapshot s, Schema version) {
    if (version.equals(CounterSnapshot.getClassSchema())) return Snapshots.encode(s);
    GenericData.Record r = new GenericData.Record(version);
    Schema current = CounterSnapshot.getClassSchema();
    for (Schema.Field f : version.getFields()) {
      Schema.Field from = current.getField(f.name());
      if (from == null) {
        for (Schema.Field c : current.getFields()) {
          if (c.aliases().contains(f.name())) from = c;
        }
      }
      if (from == null) {
        throw new IllegalStateException(version + " field " + f.name() + " is not current");
      }
      Object v = s.get(from.pos());
      r.put(f.pos(), v instanceof Instant t ? (Object) t.toEpochMilli() : v);
    }
    try {
      ByteBuffer b =
          new BinaryMessageEncoder<GenericData.Record>(GenericData.get(), version).encode(r);
      byte[] out = new byte[b.remaining()];
      b.get(out);
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static long eventTimeMs(long i) {
    return BASE_MS + (i / 8) * STEP_MS;
  }

  @Override
  public RawRecord map(Long index) {
    long i = index;
    SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + i);
    long t = eventTimeMs(i);
    Kind kind = kindOf(i);
    if (kind == Kind.CANARY) {
      // Two ranks alternate; each rank's sequence advances once per 16 records.
      int rank = (int) ((i / 8) % 2);
      long seq = i / 16 + 1;
      return raw(i, t, Snapshots.encode(canary(rank, seq, t)));
    }
    int n = 2 << rnd.nextInt(3);
    CounterSnapshot victim = victim(n, rnd.nextInt(n), i / 8 + 1, t, rnd);
    byte[] valid = encodeAs(victim, Versions.ALL.get(versionOf(i)));
    byte[] bytes =
        switch (kind) {
          case BIT_FLIP -> {
            byte[] b = valid.clone();
            for (int k = 1 + rnd.nextInt(8); k > 0; k--) {
              b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
            }
            yield b;
          }
          case TRUNCATE -> java.util.Arrays.copyOf(valid, rnd.nextInt(valid.length));
          case RANDOM_BYTES -> randomBytes(rnd, rnd.nextInt(2001));
          case HEADER_GARBAGE -> {
            byte[] g = randomBytes(rnd, rnd.nextInt(600));
            byte[] b = java.util.Arrays.copyOf(valid, 10 + g.length);
            System.arraycopy(g, 0, b, 10, g.length);
            yield b;
          }
          case SPLICE -> splice(valid, rnd);
          case SEMANTIC -> {
            Semantic s = semanticOf(i);
            CounterSnapshot bad = breach(victim, s, i);
            if (s == Semantic.EVENT_TIME_1970 || s == Semantic.EVENT_TIME_2200) {
              t = bad.getEventTime().toEpochMilli(); // an emitter stamps the record the same
            }
            yield Snapshots.encode(bad);
          }
          default -> valid;
        };
    return raw(i, t, bytes);
  }

  private static RawRecord raw(long i, long t, byte[] value) {
    return new RawRecord(
        TOPIC, 0, i, t, ("fuzz-" + (i % 64)).getBytes(StandardCharsets.UTF_8), value);
  }

  /** Canary rank {@code rank} at sequence {@code seq}: every counter a known function of seq. */
  public static CounterSnapshot canary(int rank, long seq, long t) {
    CounterSnapshot s = base(CANARY, 2, rank, seq, t);
    long calls = CANARY_CALLS * seq;
    s.setCalls(calls);
    s.setBytes(4096 * calls);
    s.setCopyCycles(2_000 * calls);
    s.setWaitCycles(5_000 * calls);
    s.setReduceCycles(1_000 * calls);
    List<Long> hist = new ArrayList<>(Collections.nCopies(40, 0L));
    hist.set(13, calls);
    s.setLatencyHistogram(hist);
    List<Long> peerWait = new ArrayList<>(Collections.nCopies(2, 0L));
    peerWait.set(1 - rank, 5_000 * calls);
    s.setPeerWaitCycles(peerWait);
    return s;
  }

  private static CounterSnapshot victim(int n, int rank, long seq, long t, SplittableRandom rnd) {
    CounterSnapshot s = base(VICTIM, n, rank, seq, t);
    long calls = 50 * seq + rnd.nextInt(50);
    s.setCalls(calls);
    s.setBytes(4096 * calls);
    s.setCopyCycles(1_500 * calls);
    s.setWaitCycles(4_000 * calls);
    s.setReduceCycles(800 * calls);
    List<Long> hist = new ArrayList<>(Collections.nCopies(40, 0L));
    hist.set(12 + rnd.nextInt(3), calls);
    s.setLatencyHistogram(hist);
    s.setPeerLateCycles(new ArrayList<>(Collections.nCopies(n, 100L * calls)));
    s.setPeerLateHistogram(new ArrayList<>(Collections.nCopies(n * RankTotals.LATE_BUCKETS, 0L)));
    return s;
  }

  private static CounterSnapshot base(String communicator, int n, int rank, long seq, long t) {
    return CounterSnapshot.newBuilder()
        .setCluster("fuzz")
        .setJob("fuzz")
        .setCommunicator(communicator)
        .setCollective("allreduce_oneshot_f32")
        .setBackend("cpu")
        .setWorldSize(n)
        .setRank(rank)
        .setHost("host-" + rank)
        .setDevice("cpu")
        .setBootId("boot-" + communicator)
        .setSeq(seq)
        .setEventTime(Instant.ofEpochMilli(t))
        .setCyclesPerSecond(1_000_000_000L)
        .setClockNs(t * 1_000_000)
        .setClockCycles(t * 1_000_000)
        .setCalls(0)
        .setBytes(0)
        .setTimeouts(0)
        .setGuardCycles(0)
        .setCopyCycles(0)
        .setPublishCycles(0)
        .setWaitCycles(0)
        .setReduceCycles(0)
        .setPeerWaitCycles(new ArrayList<>(Collections.nCopies(n, 0L)))
        .setPeerArrivedLast(new ArrayList<>(Collections.nCopies(n, 0L)))
        .setLatencyHistogram(new ArrayList<>(Collections.nCopies(40, 0L)))
        .setReadRetries(0)
        .build();
  }

  private static CounterSnapshot breach(CounterSnapshot valid, Semantic s, long i) {
    CounterSnapshot b = CounterSnapshot.newBuilder(valid).build();
    int n = b.getWorldSize();
    switch (s) {
      case WORLD_ZERO -> b.setWorldSize(0);
      case WORLD_HUGE -> b.setWorldSize(1_000_000_000);
      case PEER_ARRAYS_SHORT ->
          b.setPeerWaitCycles(new ArrayList<>(Collections.nCopies(n - 1, 0L)));
      case LATE_ARRAYS_WRONG ->
          b.setPeerLateCycles(new ArrayList<>(Collections.nCopies(n + 1, 0L)));
      case CPS_ZERO -> b.setCyclesPerSecond(0);
      case CPS_NEGATIVE -> b.setCyclesPerSecond(-1_000_000_000L);
      case COUNTER_MAX -> b.setCopyCycles(Long.MAX_VALUE);
      case NEGATIVE_COUNTER -> b.setReduceCycles(-1);
      case EVENT_TIME_1970 -> b.setEventTime(Instant.ofEpochMilli(1_000));
      case EVENT_TIME_2200 -> b.setEventTime(Instant.parse("2200-01-01T00:00:00Z"));
      case BOOT_ID_HUGE ->
          // 10 MB once in 64 of these (they are slow to make and to move), 300 characters else.
          b.setBootId("b".repeat((i / 8 / Semantic.values().length) % 64 == 0 ? 10 << 20 : 300));
      case SEQ_ZERO -> b.setSeq(0);
      case RANK_NEGATIVE -> b.setRank(-1);
      case RANK_OUTSIDE -> b.setRank(n);
      case EMPTY_HISTOGRAM -> b.setLatencyHistogram(new ArrayList<>());
      case EMPTY_COMMUNICATOR -> b.setCommunicator("");
    }
    return b;
  }

  private static byte[] randomBytes(SplittableRandom rnd, int n) {
    byte[] b = new byte[n];
    for (int k = 0; k < n; k++) b[k] = (byte) rnd.nextInt(256);
    return b;
  }

  private static byte[] splice(byte[] valid, SplittableRandom rnd) {
    List<Byte> b = new ArrayList<>(valid.length + 16);
    for (byte x : valid) b.add(x);
    for (int k = 1 + rnd.nextInt(4); k > 0; k--) {
      int at = rnd.nextInt(b.size() + 1);
      switch (rnd.nextInt(3)) {
        case 0 -> b.add(at, (byte) rnd.nextInt(256));
        case 1 -> {
          if (at < b.size()) b.remove(at);
        }
        default -> {
          if (at < b.size()) b.set(at, (byte) rnd.nextInt(256));
        }
      }
    }
    byte[] out = new byte[b.size()];
    for (int k = 0; k < out.length; k++) out[k] = b.get(k);
    return out;
  }
}
