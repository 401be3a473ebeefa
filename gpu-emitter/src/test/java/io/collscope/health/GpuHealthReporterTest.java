package io.collscope.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.GpuHealth;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class GpuHealthReporterTest {

  @Test
  void aRanksCudaDeviceIsFoundThroughCudaVisibleDevices() {
    assertThat(GpuHealthReporter.cudaOrdinal("cuda:3 NVIDIA H200")).isEqualTo(3);
    assertThat(GpuHealthReporter.cudaOrdinal("cuda:12")).isEqualTo(12);
    assertThat(GpuHealthReporter.cudaOrdinal("cpu")).isEqualTo(-1);
    assertThat(GpuHealthReporter.cudaOrdinal("nccl pid 7")).isEqualTo(-1);
    assertThat(GpuHealthReporter.nvmlIndexOfCudaOrdinal(1, null)).isEqualTo(1);
    assertThat(GpuHealthReporter.nvmlIndexOfCudaOrdinal(1, "4,6")).isEqualTo(6);
    // UUIDs (or anything else) cannot be mapped here: the ordinal
    assertThat(GpuHealthReporter.nvmlIndexOfCudaOrdinal(1, "GPU-a,GPU-b")).isEqualTo(1);
  }

  @Test
  void aNodeWithoutNvmlPublishesNoHealthAndSaysSoOnce() {
    boolean nvml;
    try (NvmlReader r = NvmlReader.open()) {
      nvml = true;
    } catch (NvmlUnavailableException e) {
      nvml = false;
    }
    assumeFalse(nvml, "this machine has NVML: the no-NVML path is the CPU machines' test");
    List<GpuHealth> out = new ArrayList<>();
    try (GpuHealthReporter h = GpuHealthReporter.open("c", "j", "host", "boot", out::add)) {
      assertThat(h.available()).isFalse();
      CounterSnapshot s = new CounterSnapshot();
      s.setCommunicator("comm");
      s.setRank(0);
      s.setDevice("cuda:0 NVIDIA H100");
      s.setBootId("boot");
      s.setEventTime(Instant.ofEpochMilli(1_000));
      h.publishFor(List.of(s));
      assertThat(h.read()).isEmpty();
    }
    assertThat(out).isEmpty();
  }
}
