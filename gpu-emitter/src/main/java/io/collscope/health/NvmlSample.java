package io.collscope.health;

import java.util.Locale;

/**
 * {@code java -cp ... io.collscope.health.NvmlSample SECONDS INTERVAL_MS}: reads every GPU through
 * {@link NvmlReader} (JNA) every interval and prints one JSON line per GPU per read, then a summary
 * line with the CPU time per read (the thread's CPU clock around each GPU's read, and the process's
 * CPU time over the whole run): what reading NVML costs a reporter. Read-only, like the reader.
 */
public final class NvmlSample {

  private NvmlSample() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: NvmlSample SECONDS INTERVAL_MS");
      System.exit(2);
    }
    double seconds = Double.parseDouble(args[0]);
    long intervalMs = Long.parseLong(args[1]);
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
    long openCpu0 = threads.getCurrentThreadCpuTime();
    try (NvmlReader nvml = NvmlReader.open()) {
      double openMs = (threads.getCurrentThreadCpuTime() - openCpu0) / 1e6;
      long end = System.nanoTime() + (long) (seconds * 1e9);
      long reads = 0;
      double cpuUs = 0;
      java.util.List<Double> perRead = new java.util.ArrayList<>();
      long threadCpu0 = threads.getCurrentThreadCpuTime();
      long wall0 = System.nanoTime();
      while (System.nanoTime() < end) {
        long tick = System.nanoTime();
        for (NvmlReader.Read r : nvml.readAll()) {
          reads++;
          cpuUs += r.readCpuUs();
          perRead.add(r.readCpuUs());
          System.out.println(json(r, System.currentTimeMillis()));
        }
        long sleep = intervalMs * 1_000_000L - (System.nanoTime() - tick);
        if (sleep > 0) Thread.sleep(sleep / 1_000_000L, (int) (sleep % 1_000_000L));
      }
      double threadCpuMs = (threads.getCurrentThreadCpuTime() - threadCpu0) / 1e6;
      double wallS = (System.nanoTime() - wall0) / 1e9;
      perRead.sort(null);
      double median = perRead.isEmpty() ? 0 : perRead.get(perRead.size() / 2);
      double p90 = perRead.isEmpty() ? 0 : perRead.get((int) (perRead.size() * 0.9));
      System.err.printf(
          Locale.ROOT,
          "nvml-cost gpus=%d reads=%d xids_readable=%b open_cpu_ms=%.1f mean_read_cpu_us=%.1f"
              + " median_read_cpu_us=%.1f p90_read_cpu_us=%.1f thread_cpu_ms=%.1f wall_s=%.1f"
              + " core_share_at_1s_per_gpu=%.4f%%%n",
          nvml.gpuCount(),
          reads,
          nvml.xidsReadable(),
          openMs,
          reads == 0 ? 0 : cpuUs / reads,
          median,
          p90,
          threadCpuMs,
          wallS,
          reads == 0 ? 0 : 100 * (threadCpuMs * 1e3 / reads) / 1e6);
    }
  }

  static String json(NvmlReader.Read r, long tMs) {
    StringBuilder links = new StringBuilder("[");
    for (NvmlReader.Link l : r.nvlinks()) {
      if (links.length() > 1) links.append(',');
      links.append(
          String.format(
              Locale.ROOT,
              "{\"link\":%d,\"replay\":%d,\"recovery\":%d,\"crc_flit\":%d}",
              l.link(),
              l.replay(),
              l.recovery(),
              l.crcFlit()));
    }
    links.append(']');
    return String.format(
        Locale.ROOT,
        "{\"t_ms\":%d,\"gpu\":%d,\"name\":\"%s\",\"sm_mhz\":%d,\"sm_max_mhz\":%d,\"mem_mhz\":%d,"
            + "\"mem_max_mhz\":%d,\"clock_event_reasons\":%d,\"temp_c\":%d,\"power_mw\":%d,"
            + "\"power_limit_mw\":%d,\"ecc_corrected\":%d,\"ecc_uncorrected\":%d,"
            + "\"xid_events\":%d,\"last_xid\":%d,\"pcie_replays\":%d,\"processes\":%d,"
            + "\"util_pct\":%d,\"nvlinks\":%s,\"read_cpu_us\":%.1f,\"reader\":\"jna\"}",
        tMs,
        r.gpuIndex(),
        r.name().replace("\"", "'"),
        r.smMhz(),
        r.smMaxMhz(),
        r.memMhz(),
        r.memMaxMhz(),
        r.clockEventReasons(),
        r.temperatureC(),
        r.powerMw(),
        r.powerLimitMw(),
        r.eccCorrected(),
        r.eccUncorrected(),
        r.xidEvents(),
        r.lastXid(),
        r.pcieReplays(),
        r.processes(),
        r.utilizationPct(),
        links,
        r.readCpuUs());
  }
}
