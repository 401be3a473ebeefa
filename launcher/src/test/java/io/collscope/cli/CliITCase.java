package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.broker.EmbeddedKafka;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The CLI end to end: emit into a real broker, tail it back as text and as JSON. */
class CliITCase {

  @Test
  void emitThenTail() {
    try (EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      String topic = EmbeddedKafka.freshTopic("cli");
      CliRun emit =
          CliRun.of(
              "emit",
              "--bootstrap",
              kafka.bootstrapServers(),
              "--topic",
              topic,
              "--ranks",
              "2",
              "--seconds",
              "3",
              "--interval",
              "500ms",
              "--backend",
              "cpu",
              "--inject",
              "slow-publish=1:10ms");
      assertThat(emit.exitCode()).as(emit.err()).isZero();
      assertThat(emit.err()).contains("0 failed deliveries");

      CliRun text =
          CliRun.of(
              "tail",
              topic,
              "--bootstrap",
              kafka.bootstrapServers(),
              "--max",
              "4",
              "--timeout",
              "60s");
      List<String> lines = text.out().strip().lines().toList();
      assertThat(lines).hasSize(4).allMatch(l -> l.contains(" snapshot local/demo/comm0/"));

      CliRun json =
          CliRun.of(
              "tail",
              topic,
              "--bootstrap",
              kafka.bootstrapServers(),
              "--json",
              "--max",
              "2",
              "--timeout",
              "60s");
      List<String> jl = json.out().strip().lines().toList();
      assertThat(jl).hasSize(2);
      assertThat(jl.get(0))
          .startsWith("{\"topic\":\"" + topic + "\"")
          .contains("\"type\":\"CounterSnapshot\"", "\"world_size\":2", "\"backend\":\"cpu\"")
          .endsWith("}");
    }
  }
}
