package io.collscope.flink.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.HardwareCause;
import io.collscope.avro.NvLinkCounters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * GPU health streams for tests, made of reads recorded from a real device ({@code
 * docs/gpu-runs/.../nvml-*.jsonl}, the JSON lines of {@code dev/nvml_sample.c} and of the JNA
 * reader's {@code NvmlSample}), with conditions planted on one GPU: the fields come from the
 * device, and only the planted condition is invented.
 */
public final class RecordedHealth {

  /** The H100 recording of the NCCL lifecycle run: idle, then 4 ranks of NCCL load (301 reads). */
  public static final Path H100_NCCL =
      Path.of("..", "recordings", "health", "nvml-h100-live.jsonl");

  /** The JNA reader's recording on an H100: idle, then a bf16 matmul loop (160 reads). */
  public static final Path H100_JNA_LOAD =
      Path.of("..", "recordings", "health", "nvml-jna-load-250ms.jsonl");

  private final List<JsonNode> reads;

  private RecordedHealth(List<JsonNode> reads) {
    this.reads = reads;
  }

  public static RecordedHealth load(Path jsonl) {
    ObjectMapper json = new ObjectMapper();
    List<JsonNode> out = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(jsonl)) {
        if (!line.isBlank()) out.add(json.readTree(line));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (out.isEmpty()) throw new IllegalArgumentException(jsonl + " holds no reads");
    return new RecordedHealth(out);
  }

  public int size() {
    return reads.size();
  }

  /**
   * Recorded read {@code i} (cyclic), as rank {@code rank}'s health on GPU {@code gpu} at {@code
   * at}.
   */
  public GpuHealth read(
      int i,
      String cluster,
      String job,
      String communicator,
      int rank,
      String host,
      int gpu,
      long seq,
      Instant at) {
    JsonNode r = reads.get(Math.floorMod(i, reads.size()));
    List<NvLinkCounters> links = new ArrayList<>();
    for (JsonNode l : r.get("nvlinks")) {
      links.add(
          new NvLinkCounters(
              l.get("link").asInt(),
              l.get("replay").asLong(),
              l.get("recovery").asLong(),
              l.get("crc_flit").asLong()));
    }
    return GpuHealth.newBuilder()
        .setCluster(cluster)
        .setJob(job)
        .setCommunicator(communicator)
        .setRank(rank)
        .setHost(host)
        .setGpuIndex(gpu)
        .setGpuName(r.get("name").asText())
        .setBootId("replay")
        .setSeq(seq)
        .setEventTime(at)
        .setSmClockMhz(r.get("sm_mhz").asInt())
        .setSmClockMaxMhz(r.get("sm_max_mhz").asInt())
        .setMemClockMhz(r.get("mem_mhz").asInt())
        .setMemClockMaxMhz(r.get("mem_max_mhz").asInt())
        .setClockEventReasons(r.get("clock_event_reasons").asLong())
        .setTemperatureC(r.get("temp_c").asInt())
        .setPowerMw(r.get("power_mw").asLong())
        .setPowerLimitMw(r.get("power_limit_mw").asLong())
        .setEccCorrected(r.get("ecc_corrected").asLong())
        .setEccUncorrected(r.get("ecc_uncorrected").asLong())
        .setXidEvents(r.get("xid_events").asLong())
        .setLastXid(r.get("last_xid").asLong())
        .setPcieReplays(r.get("pcie_replays").asLong())
        .setProcesses(r.get("processes").asInt())
        .setUtilizationPct(r.get("util_pct").asInt())
        .setNvlinks(links)
        .setReadCpuUs(r.get("read_cpu_us").asDouble())
        .build();
  }

  /**
   * Plants {@code cause} on a read: {@code k} is the read's index in its GPU's stream (counters
   * grow with it). NONE leaves the read as recorded.
   */
  public static GpuHealth plant(GpuHealth h, HardwareCause cause, long k) {
    GpuHealth p = GpuHealth.newBuilder(h).build();
    switch (cause) {
      case THERMAL -> {
        // NVML sets HW_SLOWDOWN (0x8) with HW_THERMAL_SLOWDOWN (0x40)
        p.setClockEventReasons(Math.max(0, h.getClockEventReasons()) | 0x40 | 0x8);
        p.setTemperatureC(Math.max(h.getTemperatureC(), 0) + 45);
        p.setSmClockMhz((int) (h.getSmClockMhz() * 0.7));
      }
      case POWER_CAP -> {
        p.setClockEventReasons(Math.max(0, h.getClockEventReasons()) | 0x4);
        p.setSmClockMhz((int) (h.getSmClockMhz() * 0.85));
        p.setPowerMw(h.getPowerLimitMw());
      }
      case HW_SLOWDOWN -> {
        p.setClockEventReasons(Math.max(0, h.getClockEventReasons()) | 0x8);
        p.setSmClockMhz((int) (h.getSmClockMhz() * 0.6));
      }
      case ECC -> p.setEccCorrected(Math.max(0, h.getEccCorrected()) + 2 * k);
      case XID -> {
        if (k % 5 == 0) {
          p.setXidEvents(1);
          p.setLastXid(79);
        }
      }
      case LINK_ERRORS -> {
        List<NvLinkCounters> links = new ArrayList<>();
        for (int l = 0; l < 2; l++) links.add(new NvLinkCounters(l, 37 * k, k / 4, 11 * k));
        p.setNvlinks(links);
      }
      case PCIE_ERRORS -> p.setPcieReplays(Math.max(0, h.getPcieReplays()) + 3 * k);
      case CONTENDED -> p.setProcesses(Math.max(0, h.getProcesses()) + 1);
      case NONE -> {}
    }
    return p;
  }
}
