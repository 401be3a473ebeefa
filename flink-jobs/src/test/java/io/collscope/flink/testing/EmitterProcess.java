package io.collscope.flink.testing;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.SnapshotSink;
import io.collscope.emitter.SpoolingSnapshotSink;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * An emitter in its own JVM, as {@code collscope emit --backend cpu} runs it (CPU ranks, the
 * reporter, the spool, the idempotent producer), so a test can SIGKILL it. Arguments: bootstrap,
 * topic, spool directory, communicator, ranks, interval in ms, seconds (0: until killed). Prints
 * {@code boot ID} once running and {@code appended BOOT RANK SEQ} for each snapshot in its spool;
 * exits 0 when every snapshot reached the broker.
 */
public final class EmitterProcess {

  private EmitterProcess() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    Path spool = Path.of(args[2]);
    String communicator = args[3];
    int ranks = Integer.parseInt(args[4]);
    Duration interval = Duration.ofMillis(Long.parseLong(args[5]));
    int seconds = Integer.parseInt(args[6]);
    Identity id = Identity.of("it", "it", communicator);
    try (SpoolingSnapshotSink sink =
            KafkaSnapshotSink.connectSpooled(
                bootstrap, topic, 1, Duration.ofSeconds(30), spool, 64L << 20);
        CpuCollective backend = new CpuCollective(CollectiveConfig.of(ranks), FaultPlan.NONE)) {
      System.out.println("boot " + id.bootId() + " pending " + sink.pending());
      System.out.flush();
      Emitter.Result r =
          new Emitter(backend, id, counted(sink), interval)
              .run(seconds > 0 ? Duration.ofSeconds(seconds) : null);
      sink.awaitDrained(Duration.ofSeconds(30));
      System.out.println(
          "published " + r.published() + " left " + sink.pending() + " torn " + sink.torn());
      System.exit(r.failure().isEmpty() && sink.pending() == 0 ? 0 : 1);
    }
  }

  /**
   * The emitter's own count of what it produced, kept where a SIGKILL cannot take it: after each
   * snapshot is in the spool (which delivers it, also after a restart), a line {@code appended BOOT
   * RANK SEQ} in the output, flushed. A test counts these lines as "produced", so a snapshot that
   * reached the spool but never the topic (a lost tail) is visible.
   */
  private static SnapshotSink counted(SnapshotSink spool) {
    return new SnapshotSink() {
      @Override
      public void send(CounterSnapshot s) {
        spool.send(s);
        System.out.println("appended " + s.getBootId() + " " + s.getRank() + " " + s.getSeq());
        System.out.flush();
      }

      @Override
      public void flush() {
        spool.flush();
      }

      @Override
      public long failed() {
        return spool.failed();
      }

      @Override
      public void close() {
        spool.close();
      }
    };
  }

  /** Starts one in a child JVM on this JVM's classpath; its output goes to {@code log}. */
  public static Process start(
      String bootstrap,
      String topic,
      Path spool,
      String communicator,
      int ranks,
      Duration interval,
      int seconds,
      Path log)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(EmitterProcess.class.getName());
    cmd.addAll(
        List.of(
            bootstrap,
            topic,
            spool.toString(),
            communicator,
            Integer.toString(ranks),
            Long.toString(interval.toMillis()),
            Integer.toString(seconds)));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
        .start();
  }
}
