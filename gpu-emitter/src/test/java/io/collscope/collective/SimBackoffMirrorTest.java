package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.sim.OneShotSimulator;
import org.junit.jupiter.api.Test;

/** The simulator polls on Backoff's schedule: its copy of the constants must not drift. */
class SimBackoffMirrorTest {

  @Test
  void theSimulatorMirrorsBackoff() {
    assertThat(OneShotSimulator.HOT_SPINS).isEqualTo(Backoff.HOT_SPINS);
    assertThat(OneShotSimulator.FIRST_SLEEP_NANOS).isEqualTo(Backoff.FIRST_SLEEP_NANOS);
    assertThat(OneShotSimulator.MAX_SLEEP_NANOS).isEqualTo(Backoff.MAX_SLEEP_NANOS);
  }
}
