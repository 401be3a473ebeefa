package io.collscope.benchmarks;

import io.collscope.avro.Attribution;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.load.LoadGenerator;
import io.collscope.load.LoadProducer;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.RankKey;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.Snapshots;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The pipeline's throughput and latency on this machine, every variant in one run against one
 * embedded broker:
 *
 * <ol>
 *   <li>{@code load}: the load generator fills the snapshot topic as fast as the broker takes it;
 *   <li>{@code raw}: one consumer reads the whole topic and decodes (and validates) every record;
 *   <li>{@code job}: the attribution job, production topology and exactly-once Kafka sinks, reads
 *       the same topic from the start to its end (a bounded source) on a MiniCluster;
 *   <li>{@code latency}: a fresh topic fed in real event time while the job runs; a read_committed
 *       consumer of the attribution topic notes when each window's attribution becomes visible.
 * </ol>
 *
 * With the key spread over the job's subtasks at its parallelism (key groups), the skew.
 */
public final class PipelineBench {

  private PipelineBench() {}

  /** What to run. */
  public record Config(
      int ranks,
      String communicators,
      long rounds,
      int partitions,
      int parallelism,
      Duration window,
      int latencyRanks,
      String latencyCommunicators,
      Duration latencySeconds,
      List<String> inject,
      Duration checkpointInterval) {

    /** The job's out-of-orderness in these runs: the watermark passes a window's end this late. */
    public static final Duration OUT_OF_ORDERNESS = Duration.ofSeconds(1);

    /** The checkpoint interval of earlier runs (the sinks commit on checkpoints). */
    public static final Duration DEFAULT_CHECKPOINT_INTERVAL = Duration.ofSeconds(2);
  }

  public static void run(Config c, PrintStream out) throws Exception {
    out.printf(
        Locale.ROOT,
        "machine: %d cores, load average %.2f at start%n",
        Runtime.getRuntime().availableProcessors(),
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    Map<String, List<String>> faults = new HashMap<>();
    for (String i : c.inject()) {
      int colon = i.indexOf(':');
      faults
          .computeIfAbsent(i.substring(0, colon), k -> new ArrayList<>())
          .add(i.substring(colon + 1));
    }
    try (EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      String bootstrap = kafka.bootstrapServers();
      JobOptions o =
          JobOptions.defaults()
              .with(JobOptions.BOOTSTRAP, bootstrap)
              .with(JobOptions.WINDOW, c.window().toMillis() + "ms")
              .with(JobOptions.CHECKPOINT_INTERVAL, c.checkpointInterval().toMillis() + "ms")
              .with(JobOptions.OUT_OF_ORDERNESS, Config.OUT_OF_ORDERNESS.toMillis() + "ms")
              .with(JobOptions.IDLENESS, "3s");
      String topic = o.get(JobOptions.SNAPSHOT_TOPIC);
      kafka.createTopics(
          c.partitions(),
          topic,
          o.get(JobOptions.RANK_WINDOW_TOPIC),
          o.get(JobOptions.ATTRIBUTION_TOPIC),
          o.get(JobOptions.DEADLETTER_TOPIC),
          o.get(JobOptions.ALERT_TOPIC));

      // 1. load
      LoadGenerator gen =
          new LoadGenerator(
              "bench",
              "bench",
              c.ranks(),
              LoadGenerator.parseKinds(c.communicators(), c.ranks()),
              faults,
              1000,
              LoadGenerator.DEFAULT_TEMPLATE_INTERVALS,
              LoadGenerator.DEFAULT_COMPACT_FROM,
              io.collscope.model.CompactPeers.DEFAULT_MAX_PEERS,
              Instant.now().minus(Duration.ofSeconds(c.rounds() + 60)));
      LoadProducer.Result load;
      try (LoadProducer p =
          new LoadProducer(
              bootstrap, io.collscope.kafka.KafkaClientConfig.none(), topic, Map.of())) {
        load = p.run(gen, c.rounds(), 0, null);
      }
      out.printf(
          Locale.ROOT,
          "load: %d communicators, %d records, %.0f bytes/record, %.0f records/s (%.1f s), load average %.2f%n",
          gen.communicators(),
          load.records(),
          (double) load.bytes() / load.records(),
          load.records() / load.wallSeconds(),
          load.wallSeconds(),
          loadAverage());
      skew(gen, c, out);

      // 2. raw consume + decode
      double raw = rawRate(bootstrap, topic, load.records(), out);

      // 3. the job over the same records
      double job = jobRate(o, c.parallelism(), load.records(), out);
      out.printf(
          Locale.ROOT,
          "job / raw: %.0f %% (job sustained %.0f records/s, raw %.0f records/s)%n",
          100 * job / raw,
          job,
          raw);

      // 4. latency at a live load
      latency(kafka, o, c, out);
    }
  }

  private static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  /**
   * CPU seconds used so far by this JVM (consumer, job, load generator) and by its child processes
   * (the embedded broker). Unlike a rate, CPU per record does not depend on how many other
   * processes share the cores: it says what the work costs, and so what two dedicated cores could
   * sustain.
   */
  record Cpu(double jvm, double broker) {
    static Cpu now() {
      double jvm =
          ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                  .getProcessCpuTime()
              / 1e9;
      double children =
          ProcessHandle.current()
              .descendants()
              .mapToDouble(h -> h.info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(0.0))
              .sum();
      return new Cpu(jvm, children);
    }

    /** "CPU x µs/record in this JVM + y µs/record in the broker", from {@code since} to now. */
    String perRecord(long records) {
      Cpu end = now();
      return String.format(
          Locale.ROOT,
          "CPU %.1f us/record in this JVM + %.1f us/record in the broker",
          1e6 * (end.jvm - jvm) / records,
          1e6 * (end.broker - broker) / records);
    }
  }

  /**
   * How the job's keys spread over its subtasks (key groups of Flink's default max parallelism).
   */
  static void skew(LoadGenerator gen, Config c, PrintStream out) {
    int maxParallelism = KeyGroupRangeAssignment.computeDefaultMaxParallelism(c.parallelism());
    long[] rankKeys = new long[c.parallelism()];
    long[] commKeys = new long[c.parallelism()];
    for (var kind : LoadGenerator.parseKinds(c.communicators(), c.ranks())) {
      for (int i = 0; i < c.ranks() / kind.size(); i++) {
        String comm = kind.name() + i;
        CommunicatorKey ck = new CommunicatorKey("bench", "bench", comm);
        commKeys[
                KeyGroupRangeAssignment.assignKeyToParallelOperator(
                    ck, maxParallelism, c.parallelism())] +=
            kind.size();
        for (int r = 0; r < kind.size(); r++) {
          RankKey rk = new RankKey("bench", "bench", comm, r);
          rankKeys[
              KeyGroupRangeAssignment.assignKeyToParallelOperator(
                  rk, maxParallelism, c.parallelism())]++;
        }
      }
    }
    out.printf(
        Locale.ROOT,
        "skew at parallelism %d (max parallelism %d): rank keys per subtask %s (max/mean %.2f); rank windows per subtask by communicator key %s (max/mean %.2f)%n",
        c.parallelism(),
        maxParallelism,
        Arrays.toString(rankKeys),
        maxOverMean(rankKeys),
        Arrays.toString(commKeys),
        maxOverMean(commKeys));
  }

  static double maxOverMean(long[] a) {
    long max = Arrays.stream(a).max().orElse(0);
    double mean = Arrays.stream(a).average().orElse(1);
    return mean == 0 ? 0 : max / mean;
  }

  static double rawRate(String bootstrap, String topic, long expected, PrintStream out) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-raw");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(64 << 20));
    p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(8 << 20));
    long n = 0;
    long bad = 0;
    Cpu cpu = Cpu.now();
    long t0 = System.nanoTime();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      consumer.subscribe(List.of(topic));
      while (n < expected && System.nanoTime() - t0 < 600_000_000_000L) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          try {
            Snapshots.decode(r.value());
          } catch (Exception e) {
            bad++;
          }
          n++;
        }
      }
    }
    double s = (System.nanoTime() - t0) / 1e9;
    out.printf(
        Locale.ROOT,
        "raw consume+decode: %d records (%d undecodable) in %.1f s: %.0f records/s, %s, load average %.2f%n",
        n,
        bad,
        s,
        n / s,
        cpu.perRecord(Math.max(1, n)),
        loadAverage());
    return n / s;
  }

  static double jobRate(JobOptions o, int parallelism, long records, PrintStream out)
      throws Exception {
    JobOptions jo = o.with(JobOptions.GROUP_ID, "bench-job");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf());
    env.setParallelism(parallelism);
    AttributionJob.configure(env, jo);
    AttributionJob.topology(
        env,
        AttributionJob.kafkaSourceBuilder(jo).setBounded(OffsetsInitializer.latest()).build(),
        AttributionJob.kafkaSinks(jo),
        jo);
    Cpu cpu = Cpu.now();
    long t0 = System.nanoTime();
    List<Progress> progress = new ArrayList<>();
    try (Admin admin =
        Admin.create(
            Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, jo.get(JobOptions.BOOTSTRAP)))) {
      var result = env.executeAsync("bench-" + AttributionJob.JOB_NAME).getJobExecutionResult();
      while (!result.isDone()) {
        progress.add(Progress.now(admin, jo.get(JobOptions.GROUP_ID)));
        Thread.sleep(200);
      }
      result.get();
    }
    double s = (System.nanoTime() - t0) / 1e9;
    out.printf(
        Locale.ROOT,
        "job (parallelism %d, exactly-once sinks): %d records in %.1f s including start-up: %.0f records/s, %s (start-up included), load average %.2f%n",
        parallelism,
        records,
        s,
        records / s,
        cpu.perRecord(Math.max(1, records)),
        loadAverage());
    Progress.Sustained sustained = Progress.sustained(progress);
    if (sustained == null) {
      // No sustained span to compare: the ratio below says NaN rather than mix in the start-up.
      out.println("job sustained: fewer than two checkpoints committed offsets; run a longer load");
      return Double.NaN;
    }
    out.printf(
        Locale.ROOT,
        "job sustained (offsets committed by checkpoints, first to last): %d records in %.1f s: %.0f records/s, CPU %.1f us/record in this JVM + %.1f us/record in the broker%n",
        sustained.records(),
        sustained.seconds(),
        sustained.rate(),
        sustained.jvmMicrosPerRecord(),
        sustained.brokerMicrosPerRecord());
    return sustained.rate();
  }

  /**
   * The job's committed progress at one moment: the sum of the offsets its consumer group
   * committed. The Kafka source commits on each completed checkpoint, and a checkpoint completes
   * only after every operator has processed everything before its barrier, so what is committed has
   * been through the whole job. Between the first and the last commit lies the job's sustained
   * work, without the start-up (the MiniCluster, deploying tasks, the first fetches) that dominates
   * a short run.
   */
  record Progress(long nanos, long committed, Cpu cpu) {

    static Progress now(Admin admin, String group) throws Exception {
      long sum = 0;
      for (var o :
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values()) {
        if (o != null) sum += o.offset();
      }
      return new Progress(System.nanoTime(), sum, Cpu.now());
    }

    record Sustained(long records, double seconds, double jvmCpu, double brokerCpu) {
      double rate() {
        return records / seconds;
      }

      double jvmMicrosPerRecord() {
        return 1e6 * jvmCpu / records;
      }

      double brokerMicrosPerRecord() {
        return 1e6 * brokerCpu / records;
      }
    }

    /** From the first commit to the moment the last value was first seen; null if under two. */
    static Sustained sustained(List<Progress> samples) {
      Progress first = null;
      Progress last = null;
      for (Progress p : samples) {
        if (p.committed() <= 0) continue;
        if (first == null) first = p;
        if (last == null || p.committed() > last.committed()) last = p;
      }
      if (first == null || last == first || last.committed() == first.committed()) return null;
      return new Sustained(
          last.committed() - first.committed(),
          (last.nanos() - first.nanos()) / 1e9,
          last.cpu().jvm() - first.cpu().jvm(),
          last.cpu().broker() - first.cpu().broker());
    }
  }

  static void latency(EmbeddedKafka kafka, JobOptions o, Config c, PrintStream out)
      throws Exception {
    String suffix = "-live";
    JobOptions jo =
        o.with(JobOptions.SNAPSHOT_TOPIC, o.get(JobOptions.SNAPSHOT_TOPIC) + suffix)
            .with(JobOptions.ATTRIBUTION_TOPIC, o.get(JobOptions.ATTRIBUTION_TOPIC) + suffix)
            .with(JobOptions.RANK_WINDOW_TOPIC, o.get(JobOptions.RANK_WINDOW_TOPIC) + suffix)
            .with(JobOptions.GROUP_ID, "bench-live")
            .with(JobOptions.TRANSACTIONAL_ID_PREFIX, "bench-live");
    kafka.createTopics(
        c.partitions(),
        jo.get(JobOptions.SNAPSHOT_TOPIC),
        jo.get(JobOptions.ATTRIBUTION_TOPIC),
        jo.get(JobOptions.RANK_WINDOW_TOPIC));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf());
    env.setParallelism(c.parallelism());
    AttributionJob.configure(env, jo);
    AttributionJob.topology(env, AttributionJob.kafkaSource(jo), AttributionJob.kafkaSinks(jo), jo);
    JobClient client = env.executeAsync("bench-live");
    LoadGenerator gen =
        new LoadGenerator(
            "live",
            "live",
            c.latencyRanks(),
            LoadGenerator.parseKinds(c.latencyCommunicators(), c.latencyRanks()),
            Map.of(),
            1000,
            LoadGenerator.DEFAULT_TEMPLATE_INTERVALS,
            LoadGenerator.DEFAULT_COMPACT_FROM,
            io.collscope.model.CompactPeers.DEFAULT_MAX_PEERS,
            Instant.now());
    List<Double> lags = new ArrayList<>();
    Thread reader =
        new Thread(
            () ->
                readAttributions(
                    kafka.bootstrapServers(),
                    jo.get(JobOptions.ATTRIBUTION_TOPIC),
                    lags,
                    c.latencySeconds()));
    reader.start();
    long rounds = c.latencySeconds().toSeconds();
    LoadProducer.Result r;
    try (LoadProducer p =
        new LoadProducer(
            kafka.bootstrapServers(),
            io.collscope.kafka.KafkaClientConfig.none(),
            jo.get(JobOptions.SNAPSHOT_TOPIC),
            Map.of())) {
      r = p.run(gen, rounds, 1.0, null);
    }
    reader.join();
    client.cancel().get();
    double[] a;
    synchronized (lags) {
      a = lags.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }
    // A window's end passes the watermark no earlier than when records of event time end +
    // out-of-orderness arrive, which the paced load sends at that wall-clock time: so the latency
    // minus the out-of-orderness bounds the latency after the watermark passed from above.
    double ooo = Config.OUT_OF_ORDERNESS.toMillis() / 1e3;
    out.printf(
        Locale.ROOT,
        "latency (window end -> attribution visible to read_committed; %d ranks, %s, %d records/s for %d s, window %d ms, out-of-orderness %.0f s, checkpoints %.1f s): %d windows, p50 %.2f s, p99 %.2f s, max %.2f s; after the watermark passed (at most: minus the out-of-orderness) p50 %.2f s, p99 %.2f s; load average %.2f%n",
        c.latencyRanks(),
        c.latencyCommunicators(),
        r.records() / Math.max(1, rounds),
        rounds,
        c.window().toMillis(),
        ooo,
        c.checkpointInterval().toMillis() / 1e3,
        a.length,
        quantile(a, 0.5),
        quantile(a, 0.99),
        a.length == 0 ? Double.NaN : a[a.length - 1],
        quantile(a, 0.5) - ooo,
        quantile(a, 0.99) - ooo,
        loadAverage());
  }

  /**
   * Checkpoints to files: at a cluster's scale the job's state (a snapshot per rank, the rank
   * windows of open windows) is far beyond the 5 MB that the JobManager's memory takes.
   */
  static Configuration conf() throws java.io.IOException {
    Configuration conf = new Configuration();
    conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
    conf.set(
        CheckpointingOptions.CHECKPOINTS_DIRECTORY,
        java.nio.file.Files.createTempDirectory("collscope-bench-checkpoints").toUri().toString());
    return conf;
  }

  static double quantile(double[] sorted, double q) {
    if (sorted.length == 0) return Double.NaN;
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
  }

  private static void readAttributions(
      String bootstrap, String topic, List<Double> lags, Duration seconds) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-latency");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    long until = System.currentTimeMillis() + seconds.toMillis() + 15_000;
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      consumer.subscribe(List.of(topic));
      while (System.currentTimeMillis() < until) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
          long now = System.currentTimeMillis();
          Attribution a = AvroCodec.of(Attribution.class).decode(r.value());
          synchronized (lags) {
            lags.add((now - a.getWindowEnd().toEpochMilli()) / 1e3);
          }
        }
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
