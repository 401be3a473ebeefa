package io.collscope.health;

import io.collscope.avro.GpuHealth;
import io.collscope.avro.NvLinkCounters;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns NVML reads into {@link GpuHealth} records, one per rank per interval, keyed like the rank's
 * snapshots; each GPU is read once per interval however many ranks run on it. Without NVML (no
 * driver library, a CPU node) it logs one warning and publishes nothing: the counters go on.
 */
public final class GpuHealthReporter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(GpuHealthReporter.class);

  private final NvmlReader nvml;
  private final String cluster;
  private final String job;
  private final String host;
  private final String bootId;
  private final Consumer<GpuHealth> sink;
  private final Map<String, Long> seq = new HashMap<>();
  private List<NvmlReader.Read> last = List.of();
  private long published;

  GpuHealthReporter(
      NvmlReader nvml,
      String cluster,
      String job,
      String host,
      String bootId,
      Consumer<GpuHealth> sink) {
    this.nvml = nvml;
    this.cluster = cluster;
    this.job = job;
    this.host = host;
    this.bootId = bootId;
    this.sink = sink;
  }

  /** A reporter on this node's NVML, or one that reports nothing (one warning) without it. */
  public static GpuHealthReporter open(
      String cluster, String job, String host, String bootId, Consumer<GpuHealth> sink) {
    NvmlReader nvml = null;
    try {
      nvml = NvmlReader.open();
    } catch (NvmlUnavailableException e) {
      LOG.warn("no GPU health on this node (counters are reported without it): {}", e.getMessage());
    }
    return new GpuHealthReporter(nvml, cluster, job, host, bootId, sink);
  }

  public boolean available() {
    return nvml != null;
  }

  /** Reads every GPU of the node once; the reads {@link #publish} stamps. Empty without NVML. */
  public List<NvmlReader.Read> read() {
    if (nvml == null) return List.of();
    try {
      last = nvml.readAll();
    } catch (RuntimeException e) {
      LOG.warn("NVML read failed, this interval has no GPU health: {}", e.toString());
      last = List.of();
    }
    return last;
  }

  /** The GPU of the last reads that runs process {@code pid}, or -1. */
  public int gpuOfPid(int pid) {
    for (NvmlReader.Read r : last) if (r.pids().contains(pid)) return r.gpuIndex();
    return last.size() == 1 ? last.get(0).gpuIndex() : -1;
  }

  /**
   * The NVML index of CUDA device {@code ordinal}: CUDA numbers the devices that
   * CUDA_VISIBLE_DEVICES lists, in its order (indices only; UUIDs or no variable: the ordinal).
   */
  public static int nvmlIndexOfCudaOrdinal(int ordinal, String cudaVisibleDevices) {
    if (cudaVisibleDevices == null || cudaVisibleDevices.isBlank()) return ordinal;
    String[] parts = cudaVisibleDevices.split(",");
    if (ordinal < 0 || ordinal >= parts.length) return ordinal;
    try {
      return Integer.parseInt(parts[ordinal].trim());
    } catch (NumberFormatException e) {
      return ordinal;
    }
  }

  /** The CUDA ordinal of a snapshot's device string ({@code cuda:N ...}), or -1. */
  public static int cudaOrdinal(String device) {
    if (device == null || !device.startsWith("cuda:")) return -1;
    int end = 5;
    while (end < device.length() && Character.isDigit(device.charAt(end))) end++;
    return end == 5 ? -1 : Integer.parseInt(device.substring(5, end));
  }

  /**
   * Reads the node's GPUs once and publishes, for each snapshot just taken, the read of the GPU its
   * rank runs on, with the snapshot's key, boot and instant: a GPU emitter's rank by its CUDA
   * device ({@code cuda:N}, through CUDA_VISIBLE_DEVICES), an NCCL rank by its process (NVML's
   * process list; on a one-GPU node, that GPU). A rank whose GPU cannot be told gets no record.
   */
  public void publishFor(List<io.collscope.avro.CounterSnapshot> snapshots) {
    if (nvml == null || snapshots.isEmpty()) return;
    read();
    for (io.collscope.avro.CounterSnapshot s : snapshots) {
      String device = s.getDevice() == null ? "" : s.getDevice();
      int gpu;
      if (device.startsWith("nccl pid ")) {
        try {
          gpu = gpuOfPid(Integer.parseInt(device.substring("nccl pid ".length()).trim()));
        } catch (NumberFormatException e) {
          gpu = -1;
        }
      } else {
        int ordinal = cudaOrdinal(device);
        gpu =
            ordinal < 0
                ? -1
                : nvmlIndexOfCudaOrdinal(ordinal, System.getenv("CUDA_VISIBLE_DEVICES"));
      }
      if (gpu >= 0) publish(s.getCommunicator(), s.getRank(), gpu, s.getBootId(), s.getEventTime());
    }
  }

  /**
   * Publishes the last read of {@code gpu} as rank {@code rank}'s health; false if no such read.
   */
  public boolean publish(String communicator, int rank, int gpu, String boot, Instant at) {
    for (NvmlReader.Read r : last) {
      if (r.gpuIndex() != gpu) continue;
      long n = seq.merge(communicator + "/" + rank, 1L, Long::sum);
      sink.accept(record(r, communicator, rank, boot, n, at));
      published++;
      return true;
    }
    return false;
  }

  public long published() {
    return published;
  }

  GpuHealth record(
      NvmlReader.Read r, String communicator, int rank, String boot, long seqNo, Instant at) {
    List<NvLinkCounters> links = new ArrayList<>();
    for (NvmlReader.Link l : r.nvlinks()) {
      links.add(new NvLinkCounters(l.link(), l.replay(), l.recovery(), l.crcFlit()));
    }
    return GpuHealth.newBuilder()
        .setCluster(cluster)
        .setJob(job)
        .setCommunicator(communicator)
        .setRank(rank)
        .setHost(host)
        .setGpuIndex(r.gpuIndex())
        .setGpuName(r.name())
        .setBootId(boot == null ? bootId : boot)
        .setSeq(seqNo)
        .setEventTime(at)
        .setSmClockMhz(r.smMhz())
        .setSmClockMaxMhz(r.smMaxMhz())
        .setMemClockMhz(r.memMhz())
        .setMemClockMaxMhz(r.memMaxMhz())
        .setClockEventReasons(r.clockEventReasons())
        .setTemperatureC(r.temperatureC())
        .setPowerMw(r.powerMw())
        .setPowerLimitMw(r.powerLimitMw())
        .setEccCorrected(r.eccCorrected())
        .setEccUncorrected(r.eccUncorrected())
        .setXidEvents(r.xidEvents())
        .setLastXid(r.lastXid())
        .setPcieReplays(r.pcieReplays())
        .setProcesses(r.processes())
        .setUtilizationPct(r.utilizationPct())
        .setNvlinks(links)
        .setReadCpuUs(r.readCpuUs())
        .build();
  }

  @Override
  public void close() {
    if (nvml != null) nvml.close();
  }
}
