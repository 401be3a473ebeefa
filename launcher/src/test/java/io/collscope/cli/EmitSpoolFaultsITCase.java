package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.emitter.DeliveryTally;
import io.collscope.emitter.SpoolingSnapshotSink;
import io.collscope.schema.Snapshots;
import io.collscope.spool.SpoolLog;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code collscope emit} process under spool faults. Every figure is counted: snapshots by
 * (cluster, job, communicator, rank, boot, seq) from the topic read to its end offsets, the spool's
 * backlog by reading a copy of its directory, the emitter's own counts from its summary.
 *
 * <ul>
 *   <li>SIGKILLed while the broker is down and its spool holds a backlog, started again once the
 *       broker is back: every snapshot of the first boot (in the topic before the kill, or in the
 *       spool) is in the topic exactly once, and the second boot's too.
 *   <li>A spool that hits its bound during an outage: what it dropped is in the records' {@code
 *       collscope.spool.dropped} header and the summary, and the exit status is 4.
 * </ul>
 */
class EmitSpoolFaultsITCase {

  @TempDir Path dir;

  private Process emit(String bootstrap, String topic, Path log, String... extra)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx256m", "-cp", System.getProperty("java.class.path")));
    cmd.add(Collscope.class.getName());
    cmd.addAll(
        List.of(
            "emit",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--backend",
            "cpu",
            "--cluster",
            "it",
            "--job",
            "spoolfaults",
            "--spool",
            dir.resolve("spool").toString()));
    cmd.addAll(List.of(extra));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  /** The snapshots a spool directory holds unsent, read from a copy (the original is untouched). */
  private List<io.collscope.avro.CounterSnapshot> spooled(Path spool) throws Exception {
    Path copy = dir.resolve("spool-copy-" + System.nanoTime());
    Files.createDirectories(copy);
    try (Stream<Path> s = Files.list(spool)) {
      for (Path p : s.toList()) {
        if (!p.getFileName().toString().equals("lock"))
          Files.copy(p, copy.resolve(p.getFileName()));
      }
    }
    List<io.collscope.avro.CounterSnapshot> out = new ArrayList<>();
    try (SpoolLog log = SpoolLog.open(copy, 1L << 40, 16 << 20)) {
      for (byte[] r : log.peek(Integer.MAX_VALUE, 0).records()) {
        ByteBuffer b = ByteBuffer.wrap(r);
        b.getLong(); // event time
        int keyLength = b.getInt();
        b.position(b.position() + keyLength); // the record key
        byte[] value = new byte[b.remaining()];
        b.get(value);
        out.add(Snapshots.decode(value));
      }
    }
    return out;
  }

  private static long summary(String out, String regex) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(regex).matcher(out);
    assertThat(m.find()).as("'%s' in:\n%s", regex, out).isTrue();
    return Long.parseLong(m.group(1));
  }

  @Test
  void anEmitterKilledWithABacklogDeliversEverySnapshotOnceAfterItsRestart() throws Exception {
    Path data = dir.resolve("kafka");
    EmbeddedKafka kafka = EmbeddedKafka.start(data, 0, false, EmbeddedKafka.DEFAULT_START_TIMEOUT);
    int port = kafka.port();
    String bootstrap = kafka.bootstrapServers();
    String topic = EmbeddedKafka.freshTopic("spoolkill");
    Path logA = dir.resolve("emit-a.log");
    Process a = emit(bootstrap, topic, logA, "--ranks", "4", "--interval", "100ms");
    TopicDrainer.drain(bootstrap, topic, 4 * 5, Duration.ofSeconds(90));
    kafka.kill();
    Thread.sleep(4000); // the backlog builds up in the spool
    a.destroyForcibly(); // SIGKILL
    assertThat(a.waitFor(30, TimeUnit.SECONDS)).isTrue();
    String outA = Files.readString(logA, StandardCharsets.UTF_8);
    assertThat(a.exitValue()).as(outA).isEqualTo(137);
    List<io.collscope.avro.CounterSnapshot> backlog = spooled(dir.resolve("spool"));
    String bootA = backlog.get(0).getBootId();

    long t0 = System.nanoTime();
    try (EmbeddedKafka again =
        EmbeddedKafka.start(data, port, true, EmbeddedKafka.DEFAULT_START_TIMEOUT)) {
      DeliveryTally before =
          DeliveryTally.of(
              TopicDrainer.drainToEnd(again.bootstrapServers(), topic, Duration.ofSeconds(60)));
      Set<DeliveryTally.Key> expectedA = new HashSet<>(before.keys());
      for (var s : backlog) expectedA.add(DeliveryTally.Key.of(s));
      long overlap = before.keys().size() + backlog.size() - expectedA.size();

      Path logB = dir.resolve("emit-b.log");
      Process b =
          emit(
              again.bootstrapServers(),
              topic,
              logB,
              "--ranks",
              "4",
              "--interval",
              "100ms",
              "--seconds",
              "3");
      assertThat(b.waitFor(120, TimeUnit.SECONDS)).isTrue();
      String outB = Files.readString(logB, StandardCharsets.UTF_8);
      System.out.println(outB);
      assertThat(b.exitValue()).as(outB).isZero();
      long resent = summary(outB, "sending first (\\d+) snapshots a previous run left");
      long publishedB = summary(outB, "published (\\d+) snapshots");
      long tornB = summary(outB, "(\\d+) torn");

      List<ConsumerRecord<byte[], byte[]>> all =
          TopicDrainer.drainToEnd(again.bootstrapServers(), topic, Duration.ofSeconds(60));
      double recovery = (System.nanoTime() - t0) / 1e9;
      DeliveryTally after = DeliveryTally.of(all);
      long inTopicA = after.keys().stream().filter(k -> k.boot().equals(bootA)).count();
      long inTopicB = after.distinct() - inTopicA;
      long lostA = after.missing(expectedA);

      assertThat(backlog.size()).as("a backlog in the spool at the kill").isGreaterThan(4 * 10);
      assertThat(resent).as("the restart found the backlog").isEqualTo(backlog.size());
      assertThat(lostA).as("first boot's snapshots lost").isZero();
      assertThat(inTopicA)
          .as("nothing of the first boot beyond the topic and the spool")
          .isEqualTo(expectedA.size());
      assertThat(inTopicB).as("the second boot's snapshots").isEqualTo(publishedB);
      assertThat(after.duplicated()).as("copies in the topic").isZero();
      assertThat(after.gaps()).as("sequence gaps").isZero();

      writeRow(
          "EmitSpoolFaultsITCase-kill.tsv",
          "`collscope emit` SIGKILLed 4 s into a broker outage (its spool holding a backlog),"
              + " started again on the same spool once the broker is back",
          "`EmitSpoolFaultsITCase` (the real CLI: 4 CPU ranks, 100 ms)",
          String.format(
              Locale.ROOT,
              "%d snapshots of the first boot (%d in the topic before the kill, %d in the spool,"
                  + " %d in both), %d of the second",
              expectedA.size(),
              before.distinct(),
              backlog.size(),
              overlap,
              publishedB),
          String.format(
              Locale.ROOT,
              "%d distinct keys in the topic read to its end (%d + %d), %d sequence gaps, %d torn"
                  + " frames at the restart",
              after.distinct(),
              inTopicA,
              inTopicB,
              after.gaps(),
              tornB),
          Long.toString(lostA),
          after.duplicated() + " in the topic",
          String.format(
              Locale.ROOT,
              "backlog delivered %.1f s after the broker's restart began (a broker and a JVM start)",
              recovery));
    }
  }

  @Test
  void aSpoolThatHitsItsBoundSaysHowMuchItDroppedInHeadersAndExitStatus() throws Exception {
    Path data = dir.resolve("kafka");
    EmbeddedKafka kafka = EmbeddedKafka.start(data, 0, false, EmbeddedKafka.DEFAULT_START_TIMEOUT);
    int port = kafka.port();
    String topic = EmbeddedKafka.freshTopic("spoolbound");
    Path log = dir.resolve("emit.log");
    Process p =
        emit(
            kafka.bootstrapServers(),
            topic,
            log,
            "--ranks",
            "8",
            "--interval",
            "10ms",
            "--spool-mb",
            "1",
            // long enough to go on past the broker's return (about 15-20 s in), short enough not
            // to idle in the suite: the drain timeout covers a slower restart
            "--seconds",
            "25",
            "--drain-timeout",
            "90s");
    TopicDrainer.drain(kafka.bootstrapServers(), topic, 8 * 5, Duration.ofSeconds(90));
    kafka.kill();
    Thread.sleep(12_000); // 8 ranks every 10 ms: well past 1 MiB
    try (EmbeddedKafka again =
        EmbeddedKafka.start(data, port, true, EmbeddedKafka.DEFAULT_START_TIMEOUT)) {
      assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
      String out = Files.readString(log, StandardCharsets.UTF_8);
      System.out.println(out);
      long dropped = summary(out, "(\\d+) dropped \\(full\\)");
      long published = summary(out, "published (\\d+) snapshots");
      long left = summary(out, "(\\d+) left");
      assertThat(dropped).as("the bound was hit").isPositive();
      assertThat(left).isZero();
      assertThat(p.exitValue()).as(out).isEqualTo(4);
      assertThat(out).contains(dropped + " snapshots lost");

      List<ConsumerRecord<byte[], byte[]>> all =
          TopicDrainer.drainToEnd(again.bootstrapServers(), topic, Duration.ofSeconds(60));
      DeliveryTally tally = DeliveryTally.of(all);
      long maxHeader = 0;
      for (ConsumerRecord<byte[], byte[]> r : all) {
        Header h = r.headers().lastHeader(SpoolingSnapshotSink.DROPPED_HEADER);
        maxHeader =
            Math.max(maxHeader, Long.parseLong(new String(h.value(), StandardCharsets.US_ASCII)));
      }
      assertThat(maxHeader).as("the headers' count").isEqualTo(dropped);
      assertThat(tally.distinct() + dropped).as("delivered + dropped").isEqualTo(published);
      assertThat(tally.duplicated()).isZero();

      writeRow(
          "EmitSpoolFaultsITCase-bound.tsv",
          "spool full during a broker outage (`--spool-mb 1`, broker down 12 s)",
          "`EmitSpoolFaultsITCase` (the real CLI: 8 CPU ranks, 10 ms)",
          published + " snapshots",
          tally.distinct() + " distinct keys in the topic read to its end",
          dropped
              + ", the oldest: in the summary, the `collscope.spool.dropped` header (highest "
              + maxHeader
              + ") and exit status 4",
          tally.duplicated() + " in the topic",
          "—");
    }
  }

  private static void writeRow(String file, String... cells) throws IOException {
    Path row = Path.of("target", "reliability", file);
    Files.createDirectories(row.getParent());
    Files.writeString(row, String.join("\t", cells) + "\n");
  }
}
