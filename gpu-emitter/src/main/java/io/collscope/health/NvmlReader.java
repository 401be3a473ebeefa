package io.collscope.health;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads GPU health from the driver's NVML ({@code libnvidia-ml.so.1}) through JNA: no native build,
 * no toolkit header (the functions and structs used are declared here, as in {@code
 * dev/nvml_sample.c}). Read-only: it calls only NVML getters, the event-set functions that report
 * XIDs, init and shutdown; it never sets a clock, a power limit or any other setting.
 *
 * <p>Not thread-safe: one reporter thread reads. A field NVML does not support on the device reads
 * as -1.
 */
public final class NvmlReader implements AutoCloseable {

  static final int NVML_SUCCESS = 0;
  static final int NVML_ERROR_INSUFFICIENT_SIZE = 7;
  static final int CLOCK_SM = 1;
  static final int CLOCK_MEM = 2;
  static final int TEMPERATURE_GPU = 0;
  static final int ECC_CORRECTED = 0;
  static final int ECC_UNCORRECTED = 1;
  static final int ECC_VOLATILE = 0;
  static final long EVENT_XID_CRITICAL = 0x8L;
  static final int NVLINK_MAX_LINKS = 18;
  static final int NVLINK_REPLAY = 0;
  static final int NVLINK_RECOVERY = 1;
  static final int NVLINK_CRC_FLIT = 2;
  static final int MAX_PROCESSES = 64;

  /**
   * nvmlProcessInfo_t (v2/v3): pid u32, pad, usedGpuMemory u64, gpuInstanceId, computeInstanceId.
   */
  static final int PROCESS_INFO_BYTES = 24;

  /** nvmlEventData_t: device pointer, eventType u64, eventData u64, two u32 instance ids. */
  static final int EVENT_DATA_BYTES = 32;

  /** One active NVLink's cumulative error counters. */
  public record Link(int link, long replay, long recovery, long crcFlit) {}

  /** One read of one GPU. */
  public record Read(
      int gpuIndex,
      String name,
      int smMhz,
      int smMaxMhz,
      int memMhz,
      int memMaxMhz,
      long clockEventReasons,
      int temperatureC,
      long powerMw,
      long powerLimitMw,
      long eccCorrected,
      long eccUncorrected,
      long xidEvents,
      long lastXid,
      long pcieReplays,
      int processes,
      List<Integer> pids,
      int utilizationPct,
      List<Link> nvlinks,
      double readCpuUs) {}

  private final NativeLibrary lib;
  private final Function shutdown;
  private final Function name;
  private final Function clock;
  private final Function maxClock;
  private final Function reasons;
  private final Function temperature;
  private final Function power;
  private final Function powerLimit;
  private final Function ecc;
  private final Function linkState;
  private final Function linkErrors;
  private final Function pcieReplay;
  private final Function processes;
  private final Function utilization;
  private final Function eventWait;
  private final Pointer[] devices;
  private final Pointer eventSet;
  private final Memory out = new Memory(8);
  private final Memory text = new Memory(96);
  private final Memory procs = new Memory((long) MAX_PROCESSES * PROCESS_INFO_BYTES);
  private final Memory event = new Memory(EVENT_DATA_BYTES);
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private final long[] xidSinceLastRead;
  private final long[] lastXid;
  private final String[] names;

  private NvmlReader(NativeLibrary lib) {
    this.lib = lib;
    Function init = must("nvmlInit_v2");
    check(init.invokeInt(new Object[0]), "nvmlInit_v2");
    shutdown = optional("nvmlShutdown");
    name = optional("nvmlDeviceGetName");
    clock = optional("nvmlDeviceGetClockInfo");
    maxClock = optional("nvmlDeviceGetMaxClockInfo");
    Function r = optional("nvmlDeviceGetCurrentClocksEventReasons");
    reasons = r != null ? r : optional("nvmlDeviceGetCurrentClocksThrottleReasons");
    temperature = optional("nvmlDeviceGetTemperature");
    power = optional("nvmlDeviceGetPowerUsage");
    powerLimit = optional("nvmlDeviceGetEnforcedPowerLimit");
    ecc = optional("nvmlDeviceGetTotalEccErrors");
    linkState = optional("nvmlDeviceGetNvLinkState");
    linkErrors = optional("nvmlDeviceGetNvLinkErrorCounter");
    pcieReplay = optional("nvmlDeviceGetPcieReplayCounter");
    Function p = optional("nvmlDeviceGetComputeRunningProcesses_v3");
    processes = p != null ? p : optional("nvmlDeviceGetComputeRunningProcesses_v2");
    utilization = optional("nvmlDeviceGetUtilizationRates");
    check(must("nvmlDeviceGetCount_v2").invokeInt(new Object[] {out}), "nvmlDeviceGetCount_v2");
    int n = out.getInt(0);
    devices = new Pointer[n];
    names = new String[n];
    Function handle = must("nvmlDeviceGetHandleByIndex_v2");
    for (int g = 0; g < n; g++) {
      check(handle.invokeInt(new Object[] {g, out}), "nvmlDeviceGetHandleByIndex_v2");
      devices[g] = out.getPointer(0);
      names[g] =
          name != null && name.invokeInt(new Object[] {devices[g], text, 96}) == NVML_SUCCESS
              ? text.getString(0)
              : "";
    }
    xidSinceLastRead = new long[n];
    lastXid = new long[n];
    java.util.Arrays.fill(lastXid, -1);
    Pointer set = null;
    Function create = optional("nvmlEventSetCreate");
    Function register = optional("nvmlDeviceRegisterEvents");
    Function wait = optional("nvmlEventSetWait_v2");
    if (create != null
        && register != null
        && wait != null
        && create.invokeInt(new Object[] {out}) == NVML_SUCCESS) {
      set = out.getPointer(0);
      for (Pointer d : devices) {
        if (register.invokeInt(new Object[] {d, EVENT_XID_CRITICAL, set}) != NVML_SUCCESS) {
          set = null; // XIDs cannot be told on every GPU: report them as -1, not as 0
          break;
        }
      }
    }
    eventSet = set;
    eventWait = set == null ? null : wait;
  }

  /**
   * Opens NVML, or says why not (no driver library on this node, or its init failed): the caller
   * logs that once and reports counters without health.
   */
  public static NvmlReader open() throws NvmlUnavailableException {
    NativeLibrary lib;
    try {
      lib = NativeLibrary.getInstance("libnvidia-ml.so.1");
    } catch (UnsatisfiedLinkError e) {
      throw new NvmlUnavailableException("libnvidia-ml.so.1 not loadable: " + e.getMessage());
    }
    try {
      return new NvmlReader(lib);
    } catch (NvmlUnavailableException e) {
      throw e;
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      throw new NvmlUnavailableException("NVML: " + e);
    }
  }

  public int gpuCount() {
    return devices.length;
  }

  public boolean xidsReadable() {
    return eventSet != null;
  }

  /** Reads every GPU once (XID events since the last call drained first). */
  public List<Read> readAll() {
    drainXids();
    List<Read> reads = new ArrayList<>(devices.length);
    for (int g = 0; g < devices.length; g++) reads.add(read(g));
    return reads;
  }

  private void drainXids() {
    if (eventSet == null) return;
    while (eventWait.invokeInt(new Object[] {eventSet, event, 0}) == NVML_SUCCESS) {
      Pointer d = event.getPointer(0);
      for (int g = 0; g < devices.length; g++) {
        if (devices[g].equals(d)) {
          xidSinceLastRead[g]++;
          lastXid[g] = event.getLong(16);
        }
      }
    }
  }

  private Read read(int g) {
    long cpu0 = threads.getCurrentThreadCpuTime();
    Pointer d = devices[g];
    int sm = (int) uint(clock, d, CLOCK_SM);
    int smMax = (int) uint(maxClock, d, CLOCK_SM);
    int mem = (int) uint(clock, d, CLOCK_MEM);
    int memMax = (int) uint(maxClock, d, CLOCK_MEM);
    long rs =
        reasons != null && reasons.invokeInt(new Object[] {d, out}) == NVML_SUCCESS
            ? out.getLong(0)
            : -1;
    int temp = (int) uint(temperature, d, TEMPERATURE_GPU);
    long mw = uint(power, d);
    long limit = uint(powerLimit, d);
    long eccC = ulong(ecc, d, ECC_CORRECTED, ECC_VOLATILE);
    long eccU = ulong(ecc, d, ECC_UNCORRECTED, ECC_VOLATILE);
    long pcie = uint(pcieReplay, d);
    int nProcs = -1;
    List<Integer> pids = new ArrayList<>();
    if (processes != null) {
      out.setInt(0, MAX_PROCESSES);
      int rc = processes.invokeInt(new Object[] {d, out, procs});
      if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        nProcs = out.getInt(0);
        if (rc == NVML_SUCCESS) {
          for (int i = 0; i < Math.min(nProcs, MAX_PROCESSES); i++) {
            pids.add(procs.getInt((long) i * PROCESS_INFO_BYTES));
          }
        }
      }
    }
    int util = -1;
    if (utilization != null && utilization.invokeInt(new Object[] {d, out}) == NVML_SUCCESS) {
      util = out.getInt(0);
    }
    List<Link> links = new ArrayList<>();
    for (int l = 0; linkState != null && l < NVLINK_MAX_LINKS; l++) {
      out.setInt(0, 0);
      if (linkState.invokeInt(new Object[] {d, l, out}) != NVML_SUCCESS || out.getInt(0) == 0) {
        continue; // no such link, or inactive
      }
      links.add(
          new Link(
              l,
              ulong(linkErrors, d, l, NVLINK_REPLAY),
              ulong(linkErrors, d, l, NVLINK_RECOVERY),
              ulong(linkErrors, d, l, NVLINK_CRC_FLIT)));
    }
    long xids = eventSet == null ? -1 : xidSinceLastRead[g];
    long last = lastXid[g];
    xidSinceLastRead[g] = 0;
    lastXid[g] = -1;
    double cpuUs = (threads.getCurrentThreadCpuTime() - cpu0) / 1e3;
    return new Read(
        g, names[g], sm, smMax, mem, memMax, rs, temp, mw, limit, eccC, eccU, xids, last, pcie,
        nProcs, pids, util, links, cpuUs);
  }

  /** An unsigned int out-parameter, or -1. */
  private long uint(Function f, Pointer d, Object... args) {
    if (f == null) return -1;
    Object[] a = new Object[args.length + 2];
    a[0] = d;
    System.arraycopy(args, 0, a, 1, args.length);
    out.setLong(0, 0);
    a[a.length - 1] = out;
    return f.invokeInt(a) == NVML_SUCCESS ? Integer.toUnsignedLong(out.getInt(0)) : -1;
  }

  /** An unsigned long long out-parameter, or -1. */
  private long ulong(Function f, Pointer d, Object... args) {
    if (f == null) return -1;
    Object[] a = new Object[args.length + 2];
    a[0] = d;
    System.arraycopy(args, 0, a, 1, args.length);
    a[a.length - 1] = out;
    return f.invokeInt(a) == NVML_SUCCESS ? out.getLong(0) : -1;
  }

  private Function must(String symbol) {
    try {
      return lib.getFunction(symbol);
    } catch (UnsatisfiedLinkError e) {
      throw new NvmlUnavailableException(symbol + " not in libnvidia-ml");
    }
  }

  private Function optional(String symbol) {
    try {
      return lib.getFunction(symbol);
    } catch (UnsatisfiedLinkError e) {
      return null;
    }
  }

  private static void check(int rc, String what) {
    if (rc != NVML_SUCCESS) throw new NvmlUnavailableException(what + " returned " + rc);
  }

  @Override
  public void close() {
    if (shutdown != null) shutdown.invokeInt(new Object[0]);
  }
}
