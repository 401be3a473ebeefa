package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Invalid settings are reported in the library's terms, naming the offending parameter. */
class ConfigExceptionTest {

  @Test
  void aBadShapeNamesItsParameter() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class, () -> new CollectiveConfig(0, 1024, 4, 1_000_000, 40));
    assertThat(e.parameter()).isEqualTo("worldSize");
    assertThat(e.problem()).isEqualTo("must be >= 1, got 0");
    assertThat(e).hasMessage("worldSize must be >= 1, got 0");
  }

  @Test
  void aBadFaultNamesTheSpec() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class, () -> FaultPlan.parse(List.of("slow-rank=9:1ms"), 4));
    assertThat(e.parameter()).isEqualTo("fault");
    assertThat(e).hasMessage("fault 'slow-rank=9:1ms': rank 9 is outside the world of 4 ranks");
  }
}
