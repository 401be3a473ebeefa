package io.collscope.cli;

import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.Replayer;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.kafka.BrokerUnreachableException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code collscope replay FILE...}: publish recordings (from {@code emit --record}) to Kafka,
 * merged by event time.
 */
@Command(
    name = "replay",
    mixinStandardHelpOptions = true,
    description =
        "Publish a recorded run to Kafka with its original pacing, event times moved to now.")
final class ReplayCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Parameters(
      arity = "1..*",
      description =
          "Files written by 'collscope emit --record' (e.g. one per rank's process), merged by event time.")
  List<Path> files;

  @Option(
      names = "--bootstrap",
      defaultValue = Defaults.BOOTSTRAP,
      description = "Kafka bootstrap servers (env COLLSCOPE_BOOTSTRAP). Default: ${DEFAULT-VALUE}")
  String bootstrap;

  @Option(
      names = "--topic",
      defaultValue = Defaults.SNAPSHOT_TOPIC,
      description = "Snapshot topic. Default: ${DEFAULT-VALUE}")
  String topic;

  @Option(
      names = "--no-pace",
      description = "Publish as fast as possible (event times still spaced as recorded).")
  boolean noPace;

  @Option(
      names = "--broker-timeout",
      defaultValue = Defaults.BROKER_TIMEOUT,
      converter = DurationConverter.class,
      description = "How long to wait for the broker at start. Default: ${DEFAULT-VALUE}")
  Duration brokerTimeout;

  @Override
  public Integer call() throws Exception {
    for (Path file : files) {
      if (!Files.isReadable(file)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "cannot read " + file);
      }
    }
    List<CounterSnapshot> rec = SnapshotRecording.readAll(files);
    try (KafkaSnapshotSink sink =
        KafkaSnapshotSink.connect(bootstrap, kafkaClient.config(), topic, 4, brokerTimeout)) {
      Replayer.replay(rec, sink, !noPace);
      spec.commandLine()
          .getErr()
          .printf(
              "collscope replay: %d snapshots to %s %s, %d failed%n",
              rec.size(), bootstrap, topic, sink.failed());
      return sink.failed() > 0 ? Defaults.EXIT_FAILURE : Defaults.EXIT_OK;
    } catch (BrokerUnreachableException e) {
      spec.commandLine().getErr().println("collscope replay: " + e.getMessage());
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
  }
}
