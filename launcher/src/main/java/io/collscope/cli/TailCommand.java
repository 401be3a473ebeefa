package io.collscope.cli;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.Finding;
import io.collscope.avro.RankWindow;
import io.collscope.broker.TopicDrainer;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;
import io.collscope.model.SampledCalls;
import io.collscope.schema.DecodeException;
import io.collscope.schema.RecordJson;
import io.collscope.schema.RecordTypes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code collscope tail TOPIC}: print decoded records, one line each. */
@Command(
    name = "tail",
    mixinStandardHelpOptions = true,
    description = "Consume a topic and print each decoded record on one line (read_committed).")
final class TailCommand implements Callable<Integer> {

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @picocli.CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Option(
      names = "--broker-timeout",
      defaultValue = Defaults.BROKER_TIMEOUT,
      converter = DurationConverter.class,
      description = "How long to wait for the broker at start. Default: ${DEFAULT-VALUE}")
  Duration brokerTimeout;

  @Parameters(index = "0", description = "Topic, e.g. collscope.snapshots")
  String topic;

  @Option(
      names = "--bootstrap",
      defaultValue = Defaults.BOOTSTRAP,
      description = "Kafka bootstrap servers. Default: ${DEFAULT-VALUE}")
  String bootstrap;

  @Option(
      names = "--json",
      description =
          "One JSON object per line: topic, partition, offset, timestamp, key, type, value.")
  boolean json;

  @Option(
      names = "--from-end",
      description = "Only records produced after start (default: from the beginning).")
  boolean fromEnd;

  @Option(
      names = "--max",
      defaultValue = "0",
      description = "Stop after this many records; 0: no limit.")
  long max;

  @Option(
      names = "--timeout",
      converter = DurationConverter.class,
      description = "Stop after this long (e.g. 30s); default: never.")
  Duration timeout;

  @Override
  public Integer call() {
    if (max < 0) throw new IllegalArgumentException("--max must be >= 0");
    java.io.PrintWriter out = spec.commandLine().getOut();
    long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
    long seen = 0;
    java.io.PrintWriter err = spec.commandLine().getErr();
    try {
      kafkaClient.checkAccepted(bootstrap, brokerTimeout);
    } catch (io.collscope.kafka.BrokerUnreachableException e) {
      err.println("collscope tail: " + e.getMessage());
      err.flush();
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    try (KafkaConsumer<byte[], byte[]> c =
        TopicDrainer.consumer(bootstrap, !fromEnd, kafkaClient.properties())) {
      c.subscribe(List.of(topic));
      while (System.nanoTime() < deadline && (max == 0 || seen < max)) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          out.println(json ? KafkaLines.json(r) : KafkaLines.text(r));
          if (++seen == max) break;
        }
        out.flush();
      }
    } catch (org.apache.kafka.common.errors.AuthorizationException e) {
      // An ACL that does not let this client read the topic (or use its group).
      err.println("collscope tail: not authorised to read " + topic + ": " + e.getMessage());
      err.flush();
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    return Defaults.EXIT_OK;
  }

  /**
   * The lines of Kafka records, apart from the command's own methods: picocli reflects over those,
   * and a GPU node's runtime has no Kafka client (dev/gpu-carry.sh leaves it out), so no method of
   * the command may name a Kafka type.
   */
  static final class KafkaLines {
    private KafkaLines() {}

    static String json(ConsumerRecord<byte[], byte[]> r) {
      StringBuilder sb = new StringBuilder(512);
      sb.append("{\"topic\":");
      RecordJson.string(r.topic(), sb);
      sb.append(",\"partition\":").append(r.partition());
      sb.append(",\"offset\":").append(r.offset());
      sb.append(",\"timestamp\":").append(r.timestamp());
      sb.append(",\"key\":");
      if (r.key() == null) sb.append("null");
      else RecordJson.string(new String(r.key(), StandardCharsets.UTF_8), sb);
      try {
        SpecificRecord v = RecordTypes.decodeAny(r.value());
        sb.append(",\"type\":");
        RecordJson.string(v.getSchema().getName(), sb);
        sb.append(",\"value\":");
        RecordJson.write(v, sb);
      } catch (DecodeException e) {
        sb.append(",\"type\":null,\"error\":");
        RecordJson.string(e.getMessage(), sb);
      }
      return sb.append('}').toString();
    }

    static String text(ConsumerRecord<byte[], byte[]> r) {
      String where = r.topic() + "/" + r.partition() + "@" + r.offset();
      try {
        return format(RecordTypes.decodeAny(r.value())) + "  [" + where + "]";
      } catch (DecodeException e) {
        return "UNDECODABLE " + e.getMessage() + "  [" + where + "]";
      }
    }
  }

  static String format(SpecificRecord v) {
    if (v instanceof CounterSnapshot s) {
      // Cycles at the clock's rate while they were counted, as the job converts them.
      double rate = RankTotals.of(s).clockRate(s.getCyclesPerSecond());
      // per collective accounted: the sample, weighted, where the emitter samples
      long accounted = SampledCalls.of(s) * s.getSampleEvery();
      double usPerCycleAndCall = accounted == 0 ? 0 : 1e6 / rate / accounted;
      return String.format(
          Locale.ROOT,
          "%s snapshot %s seq=%d boot=%.8s calls=%d%s us/call%s timeouts=%d",
          s.getEventTime(),
          RankKey.of(s),
          s.getSeq(),
          s.getBootId(),
          s.getCalls(),
          s.getSampledCalls() == null
              ? ""
              : " (sampled " + s.getSampledCalls() + ", 1 in " + s.getSampleEvery() + ")",
          perPhase(p -> (Long) s.get(p.cyclesField()) * usPerCycleAndCall),
          s.getTimeouts());
    }
    if (v instanceof RankWindow w) {
      return String.format(
          Locale.ROOT,
          "%s window %s calls=%d%s us%s p50=%.0f p99=%.0f",
          w.getWindowStart(),
          RankKey.of(w),
          w.getCalls(),
          w.getSampleEvery() <= 1 ? "" : " (sampled " + SampledCalls.of(w) + ")",
          perPhase(p -> (Double) w.get(p.meanUsField())),
          w.getP50Us(),
          w.getP99Us());
    }
    if (v instanceof Attribution a) {
      StringBuilder findings = new StringBuilder();
      for (Finding f : a.getFindings()) findings.append(' ').append(AttributionPrinter.finding(f));
      return String.format(
          Locale.ROOT,
          "%s attribution %s verdict=%s%s confidence=%.2f max_wait=%.1fus@rank%d missing=%s",
          a.getWindowStart(),
          CommunicatorKey.of(a),
          a.getVerdict(),
          findings,
          a.getConfidence(),
          a.getMaxWaitMeanUs(),
          a.getMaxWaitRank(),
          a.getMissingRanks());
    }
    if (v instanceof DeadLetter d) {
      return String.format(
          Locale.ROOT,
          "%s deadletter %s stage=%s from %s/%d@%d: %s",
          d.getDetectedAt(),
          d.getReason(),
          d.getStage(),
          d.getSourceTopic(),
          d.getPartition(),
          d.getOffset(),
          d.getDetail());
    }
    return RecordJson.toJson((org.apache.avro.generic.IndexedRecord) v);
  }

  /** {@code " guard=1.0 copy=2.0 ..."}: one value per phase, in phase order. */
  private static String perPhase(ToDoubleFunction<Phase> us) {
    StringBuilder sb = new StringBuilder();
    for (Phase p : Phase.values()) {
      sb.append(String.format(Locale.ROOT, " %s=%.1f", p.fieldName(), us.applyAsDouble(p)));
    }
    return sb.toString();
  }
}
