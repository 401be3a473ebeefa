// Records what NVML says about every GPU of a node, one JSON line per GPU per interval, for the
// hardware-cause work (issue 49): the fields the emitters' GpuHealth record will carry, read from
// the real driver, so that CI can replay a health stream that came from a device rather than one
// that was invented. It only reads: it never changes a clock, a power limit or any setting.
//
//   gcc -O2 -o nvml_sample dev/nvml_sample.c -ldl
//   ./nvml_sample SECONDS INTERVAL_MS > health.jsonl
//
// NVML is opened with dlopen (libnvidia-ml.so.1, shipped with the driver), and its few functions
// are declared here: no toolkit header is needed, as no JNA one will be. Each line also carries
// the CPU time this process spent reading that GPU (thread CPU clock), the cost a reader pays.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;  // NVML_SUCCESS = 0
typedef void *nvmlDevice_t;
typedef void *nvmlEventSet_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ULL
#define NVML_NVLINK_MAX_LINKS 18
// nvmlNvLinkErrorCounter_t
#define NVML_NVLINK_ERROR_DL_REPLAY 0
#define NVML_NVLINK_ERROR_DL_RECOVERY 1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT 2

static nvmlReturn_t (*Init)(void);
static nvmlReturn_t (*Shutdown)(void);
static nvmlReturn_t (*Count)(unsigned *);
static nvmlReturn_t (*Handle)(unsigned, nvmlDevice_t *);
static nvmlReturn_t (*Name)(nvmlDevice_t, char *, unsigned);
static nvmlReturn_t (*Clock)(nvmlDevice_t, int, unsigned *);
static nvmlReturn_t (*MaxClock)(nvmlDevice_t, int, unsigned *);
static nvmlReturn_t (*Reasons)(nvmlDevice_t, unsigned long long *);
static nvmlReturn_t (*Temperature)(nvmlDevice_t, int, unsigned *);
static nvmlReturn_t (*Power)(nvmlDevice_t, unsigned *);
static nvmlReturn_t (*PowerLimit)(nvmlDevice_t, unsigned *);
static nvmlReturn_t (*Ecc)(nvmlDevice_t, int, int, unsigned long long *);
static nvmlReturn_t (*LinkState)(nvmlDevice_t, unsigned, int *);
static nvmlReturn_t (*LinkErrors)(nvmlDevice_t, unsigned, int, unsigned long long *);
static nvmlReturn_t (*PcieReplay)(nvmlDevice_t, unsigned *);
static nvmlReturn_t (*Processes)(nvmlDevice_t, unsigned *, void *);
static nvmlReturn_t (*Utilization)(nvmlDevice_t, nvmlUtilization_t *);
static nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
static nvmlReturn_t (*RegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
static nvmlReturn_t (*EventWait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);

static void *need(void *lib, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) fprintf(stderr, "nvml_sample: %s not in libnvidia-ml (reported as -1)\n", name);
  return f;
}

static double thread_cpu_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// A value, or -1 when the function is missing or refuses (an unsupported field, say).
#define READ(call, var) ((call) == 0 ? (long long)(var) : -1LL)

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 10;
  int interval_ms = argc > 2 ? atoi(argv[2]) : 1000;
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "nvml_sample: %s\n", dlerror());
    return 2;
  }
  *(void **)&Init = need(lib, "nvmlInit_v2");
  *(void **)&Shutdown = need(lib, "nvmlShutdown");
  *(void **)&Count = need(lib, "nvmlDeviceGetCount_v2");
  *(void **)&Handle = need(lib, "nvmlDeviceGetHandleByIndex_v2");
  *(void **)&Name = need(lib, "nvmlDeviceGetName");
  *(void **)&Clock = need(lib, "nvmlDeviceGetClockInfo");
  *(void **)&MaxClock = need(lib, "nvmlDeviceGetMaxClockInfo");
  *(void **)&Reasons = need(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!Reasons) *(void **)&Reasons = need(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  *(void **)&Temperature = need(lib, "nvmlDeviceGetTemperature");
  *(void **)&Power = need(lib, "nvmlDeviceGetPowerUsage");
  *(void **)&PowerLimit = need(lib, "nvmlDeviceGetEnforcedPowerLimit");
  *(void **)&Ecc = need(lib, "nvmlDeviceGetTotalEccErrors");
  *(void **)&LinkState = need(lib, "nvmlDeviceGetNvLinkState");
  *(void **)&LinkErrors = need(lib, "nvmlDeviceGetNvLinkErrorCounter");
  *(void **)&PcieReplay = need(lib, "nvmlDeviceGetPcieReplayCounter");
  *(void **)&Processes = need(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  *(void **)&Utilization = need(lib, "nvmlDeviceGetUtilizationRates");
  *(void **)&EventSetCreate = need(lib, "nvmlEventSetCreate");
  *(void **)&RegisterEvents = need(lib, "nvmlDeviceRegisterEvents");
  *(void **)&EventWait = need(lib, "nvmlEventSetWait_v2");
  if (!Init || !Count || !Handle || Init() != 0) {
    fprintf(stderr, "nvml_sample: nvmlInit failed\n");
    return 2;
  }
  unsigned n = 0;
  Count(&n);
  nvmlDevice_t dev[64];
  if (n > 64) n = 64;
  for (unsigned g = 0; g < n; g++) Handle(g, &dev[g]);
  nvmlEventSet_t events = NULL;
  int xid_ok = EventSetCreate && EventSetCreate(&events) == 0;
  for (unsigned g = 0; xid_ok && g < n; g++) {
    if (RegisterEvents(dev[g], NVML_EVENT_TYPE_XID_CRITICAL_ERROR, events) != 0) xid_ok = 0;
  }
  double end = wall_ms() + seconds * 1e3;
  while (wall_ms() < end) {
    double tick = wall_ms();
    // XIDs since the last tick: drain the event set without waiting.
    long long xid[64] = {0};
    long long last_xid[64];
    for (unsigned g = 0; g < n; g++) last_xid[g] = -1;
    nvmlEventData_t e;
    while (xid_ok && EventWait(events, &e, 0) == 0) {
      for (unsigned g = 0; g < n; g++) {
        if (e.device == dev[g]) {
          xid[g]++;
          last_xid[g] = (long long)e.eventData;
        }
      }
    }
    for (unsigned g = 0; g < n; g++) {
      double cpu0 = thread_cpu_us();
      char name[96] = "?";
      if (Name) Name(dev[g], name, sizeof name);
      unsigned sm = 0, smMax = 0, mem = 0, memMax = 0, temp = 0, mw = 0, mwLimit = 0, pcie = 0;
      unsigned long long reasons = 0, eccC = 0, eccU = 0;
      unsigned procs = 0;
      nvmlUtilization_t util = {0, 0};
      long long vSm = Clock ? READ(Clock(dev[g], NVML_CLOCK_SM, &sm), sm) : -1;
      long long vSmMax = MaxClock ? READ(MaxClock(dev[g], NVML_CLOCK_SM, &smMax), smMax) : -1;
      long long vMem = Clock ? READ(Clock(dev[g], NVML_CLOCK_MEM, &mem), mem) : -1;
      long long vMemMax = MaxClock ? READ(MaxClock(dev[g], NVML_CLOCK_MEM, &memMax), memMax) : -1;
      long long vReasons = Reasons ? READ(Reasons(dev[g], &reasons), reasons) : -1;
      long long vTemp =
          Temperature ? READ(Temperature(dev[g], NVML_TEMPERATURE_GPU, &temp), temp) : -1;
      long long vMw = Power ? READ(Power(dev[g], &mw), mw) : -1;
      long long vLimit = PowerLimit ? READ(PowerLimit(dev[g], &mwLimit), mwLimit) : -1;
      long long vEccC =
          Ecc ? READ(Ecc(dev[g], NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &eccC), eccC)
              : -1;
      long long vEccU =
          Ecc ? READ(Ecc(dev[g], NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &eccU),
                     eccU)
              : -1;
      long long vPcie = PcieReplay ? READ(PcieReplay(dev[g], &pcie), pcie) : -1;
      // A count only: the first call with no room says how many there are.
      long long vProcs = -1;
      if (Processes) {
        nvmlReturn_t r = Processes(dev[g], &procs, NULL);
        vProcs = (r == 0 || r == 7 /* NVML_ERROR_INSUFFICIENT_SIZE */) ? (long long)procs : -1;
      }
      long long vUtil = Utilization ? READ(Utilization(dev[g], &util), util.gpu) : -1;
      char links[2048];
      size_t at = 0;
      int active = 0;
      links[at++] = '[';
      for (unsigned l = 0; LinkState && l < NVML_NVLINK_MAX_LINKS; l++) {
        int state = 0;
        if (LinkState(dev[g], l, &state) != 0 || !state) continue;
        unsigned long long replay = 0, recovery = 0, crc = 0;
        long long r1 = READ(LinkErrors(dev[g], l, NVML_NVLINK_ERROR_DL_REPLAY, &replay), replay);
        long long r2 =
            READ(LinkErrors(dev[g], l, NVML_NVLINK_ERROR_DL_RECOVERY, &recovery), recovery);
        long long r3 = READ(LinkErrors(dev[g], l, NVML_NVLINK_ERROR_DL_CRC_FLIT, &crc), crc);
        at += snprintf(links + at, sizeof links - at,
                       "%s{\"link\":%u,\"replay\":%lld,\"recovery\":%lld,\"crc_flit\":%lld}",
                       active++ ? "," : "", l, r1, r2, r3);
      }
      links[at++] = ']';
      links[at] = 0;
      double cpu = thread_cpu_us() - cpu0;
      printf("{\"t_ms\":%.0f,\"gpu\":%u,\"name\":\"%s\",\"sm_mhz\":%lld,\"sm_max_mhz\":%lld,"
             "\"mem_mhz\":%lld,\"mem_max_mhz\":%lld,\"clock_event_reasons\":%lld,"
             "\"temp_c\":%lld,\"power_mw\":%lld,\"power_limit_mw\":%lld,\"ecc_corrected\":%lld,"
             "\"ecc_uncorrected\":%lld,\"xid_events\":%lld,\"last_xid\":%lld,"
             "\"pcie_replays\":%lld,\"processes\":%lld,\"util_pct\":%lld,\"nvlinks\":%s,"
             "\"read_cpu_us\":%.1f}\n",
             tick, g, name, vSm, vSmMax, vMem, vMemMax, vReasons, vTemp, vMw, vLimit, vEccC,
             vEccU, xid_ok ? xid[g] : -1, last_xid[g], vPcie, vProcs, vUtil, links, cpu);
    }
    fflush(stdout);
    double next = tick + interval_ms;
    double now = wall_ms();
    if (next > now) {
      struct timespec s = {(time_t)((next - now) / 1e3),
                           (long)(((long long)(next - now) % 1000) * 1000000L)};
      nanosleep(&s, NULL);
    }
  }
  if (Shutdown) Shutdown();
  return 0;
}
