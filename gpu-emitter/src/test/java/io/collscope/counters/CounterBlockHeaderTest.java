package io.collscope.counters;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code counter_block.h}, which the kernel writes the block through, defines exactly the layout
 * {@link CounterBlock} reads: every constant on both sides, every value equal. A phase or counter
 * added on one side only, or an offset moved on one side only, fails here.
 */
class CounterBlockHeaderTest {

  static Map<String, Long> header() throws Exception {
    Map<String, Long> h = new LinkedHashMap<>();
    Matcher m =
        Pattern.compile("(?m)^#define\\s+(CB_\\w+)\\s+(\\d+)")
            .matcher(Files.readString(Path.of("src/main/cuda/counter_block.h")));
    while (m.find()) h.put(m.group(1), Long.parseLong(m.group(2)));
    return h;
  }

  @Test
  void theHeaderDefinesExactlyTheJavaLayout() throws Exception {
    assertThat(header()).containsExactlyInAnyOrderEntriesOf(CounterBlock.headerConstants());
  }

  @Test
  void theCheckSeesAMovedOffset() throws Exception {
    Map<String, Long> moved = header();
    moved.put("CB_OFF_PHASES", moved.get("CB_OFF_PHASES") + 8);
    assertThat(moved).isNotEqualTo(CounterBlock.headerConstants());
  }
}
