package io.collscope.history;

import io.collscope.load.HistoryGenerator;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/** Small generated histories for the history tests: communicators of 8 ranks, 10 s windows. */
public final class HistoryFixtures {

  private HistoryFixtures() {}

  public static HistoryGenerator.Config config(int ranks, Duration span, Instant end) {
    return new HistoryGenerator.Config(
        ranks, 8, span, Duration.ofSeconds(10), end, 42, "gen", "train", 2);
  }

  public static HistoryGenerator.Summary generate(Path base, int ranks, Duration span, Instant end)
      throws Exception {
    return new HistoryGenerator(config(ranks, span, end)).write(base);
  }
}
