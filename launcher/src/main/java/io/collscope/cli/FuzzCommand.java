package io.collscope.cli;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.RankWindow;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.flink.fuzz.FuzzedRecords;
import io.collscope.flink.sink.CountingSink;
import io.collscope.flink.sink.DiscardingSink;
import io.collscope.schema.AvroCodec;
import java.io.PrintWriter;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope fuzz --count N}: N hostile records ({@link FuzzedRecords}) through the whole job
 * on an embedded Flink, then the counts: records by kind, dead letters by stage and reason, and the
 * canary's check (its windows hold every call it made). Exit 0 when the job finished, every
 * contract breach was dead-lettered and the canary is exact; 1 otherwise. The reliability issue's
 * long run is {@code --count 1000000} (docs/RELIABILITY.md); CI runs FuzzITCase's 40,000.
 */
@Command(
    name = "fuzz",
    mixinStandardHelpOptions = true,
    description =
        "Feed N fuzzed records (mutated, truncated, random, contract-breaking) through the job and"
            + " count what became of them.")
final class FuzzCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--count",
      defaultValue = "100000",
      description = "Records. Default: ${DEFAULT-VALUE}")
  long count;

  @Option(names = "--seed", defaultValue = "1", description = "Seed. Default: ${DEFAULT-VALUE}")
  long seed;

  @Override
  public Integer call() throws Exception {
    if (count < 32) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--count must be >= 32");
    }
    PrintWriter out = spec.commandLine().getOut();
    // Key: what the record was (a breach of which kind, a canary, other) | stage and reason.
    CountingSink<DeadLetter> deadLetters =
        CountingSink.counting(
            d -> {
              FuzzedRecords.Kind kind = FuzzedRecords.kindOf(d.getOffset());
              String what =
                  kind == FuzzedRecords.Kind.SEMANTIC
                      ? "breach " + FuzzedRecords.semanticOf(d.getOffset())
                      : kind == FuzzedRecords.Kind.CANARY ? "canary" : "other";
              return what + "|" + d.getStage() + " " + d.getReason();
            });
    CountingSink<RankWindow> canaryCalls =
        new CountingSink<>(
            w ->
                w.getCommunicator().toString().equals(FuzzedRecords.CANARY)
                    ? "canary rank " + w.getRank()
                    : "other",
            RankWindow::getCalls);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment();
    env.setParallelism(1); // one reader, as one Kafka partition (see RecordedSource)
    long t0 = System.nanoTime();
    String failure = null;
    try {
      AttributionJob.topology(
          env,
          FuzzedRecords.source(seed, count),
          new AttributionJob.Sinks(
              canaryCalls,
              new DiscardingSink<Attribution>(),
              deadLetters,
              new DiscardingSink<Alert>()),
          JobOptions.defaults());
      env.execute("collscope fuzz");
    } catch (Exception e) {
      failure = e.toString();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;

    Map<FuzzedRecords.Kind, Long> kinds = new EnumMap<>(FuzzedRecords.Kind.class);
    for (long i = 0; i < count; i++) kinds.merge(FuzzedRecords.kindOf(i), 1L, Long::sum);
    out.printf("collscope fuzz: %d records, seed %d, %.1f s%n", count, seed, seconds);
    out.printf("job: %s%n", failure == null ? "finished" : "FAILED: " + failure);
    out.printf("avro decode limits in force: %s%n", AvroCodec.limitsInForce());
    out.println("records by kind:");
    kinds.forEach((k, n) -> out.printf("  %-16s %9d%n", k, n));
    Map<String, Long> versions = new java.util.LinkedHashMap<>();
    for (int v = 0; v < FuzzedRecords.snapshotVersions().size(); v++) {
      versions.put(FuzzedRecords.versionName(v), 0L);
    }
    for (long i = 0; i < count; i++) {
      FuzzedRecords.Kind k = FuzzedRecords.kindOf(i);
      if (k != FuzzedRecords.Kind.CANARY && k != FuzzedRecords.Kind.SEMANTIC) {
        versions.merge(FuzzedRecords.versionName(FuzzedRecords.versionOf(i)), 1L, Long::sum);
      }
    }
    out.println("mutated and valid victims by the snapshot schema version they were written with:");
    versions.forEach((v, n) -> out.printf("  %-16s %9d%n", v, n));
    Map<String, Long> byReason = new java.util.TreeMap<>();
    Map<String, Long> byWhat = new java.util.TreeMap<>();
    for (var e : deadLetters.sums().entrySet()) {
      String[] k = e.getKey().split("\\|", 2);
      byWhat.merge(k[0], e.getValue(), Long::sum);
      byReason.merge(k[1], e.getValue(), Long::sum);
    }
    out.println("dead letters by stage and reason:");
    long total = 0;
    for (var e : byReason.entrySet()) {
      out.printf("  %-32s %9d%n", e.getKey(), e.getValue());
      total += e.getValue();
    }
    out.printf("  %-32s %9d%n", "total", total);
    out.println("contract breaches dead-lettered, by breach:");
    long breachesCaught = 0;
    for (var e : byWhat.entrySet()) {
      if (!e.getKey().startsWith("breach ")) continue;
      out.printf("  %-32s %9d%n", e.getKey().substring(7), e.getValue());
      breachesCaught += e.getValue();
    }
    long breachesSent = kinds.getOrDefault(FuzzedRecords.Kind.SEMANTIC, 0L);
    out.printf("contract breaches dead-lettered: %d of %d%n", breachesCaught, breachesSent);
    long canaryLost = byWhat.getOrDefault("canary", 0L);
    out.printf("canary records dead-lettered: %d%n", canaryLost);
    boolean canaryExact = true;
    for (int r = 0; r < 2; r++) {
      long want = FuzzedRecords.canaryCalls(count, r);
      long got = canaryCalls.sums().getOrDefault("canary rank " + r, 0L);
      out.printf("canary rank %d: %d calls in its windows, %d made%n", r, got, want);
      canaryExact &= got == want;
    }
    out.flush();
    boolean ok =
        failure == null && breachesCaught == breachesSent && canaryLost == 0 && canaryExact;
    return ok ? Defaults.EXIT_OK : Defaults.EXIT_FAILURE;
  }
}
