// The NCCL profiler plugin's overhead, measured with NCCL called directly: one process, one
// thread, both GPUs of the node (ncclCommInitAll), each step one ncclGroupStart / an
// ncclAllReduce per rank / ncclGroupEnd, back-to-back steps per round. No PyTorch, no torchrun,
// no barrier per step: the round-to-round noise of dev/nccl_overhead_variants.py (19-56 us at
// 4 KB-1 MB, runs 58-59) came from the Python harness, not from NCCL.
//
// The variants are those of dev/nccl_plugin_variants.c (NCCL_PROFILER_PLUGIN points at its .so,
// COLLSCOPE_BENCH_PLUGIN at libnccl-profiler-collscope.so); the harness switches between them with
// that plugin's bench_set_variant(v, sampling) between rounds, after both streams have drained,
// as nccl_overhead_variants.py does:
//   none     the plugin loaded, no event enabled (the baseline)    api / coll / kch: do-nothing
//   ours:N   libnccl-profiler-collscope.so, KernelCh on 1 collective in N
//   NAME@TAG the same variant under another label (none@aa: an A/A control of the method)
// Without NCCL_PROFILER_PLUGIN every variant is NCCL without a plugin, and the lines say
// nccl-overhead-separate (never paired with another process's rounds).
//
// Each round, for every variant in turn (the order rotates from round to round): drain, switch,
// warm-up steps, then CUDA events on both streams around `steps` steps and the host clock around
// their enqueue. Printed per size and variant, one value per round:
//   nccl-overhead,BYTES,LABEL,US,...       device us per step, the slower of the two streams
//                                          (what `collscope bench nccl-overhead LOG --baseline
//                                          none` classifies)
//   nccl-overhead-host,BYTES,LABEL,US,...  host us per step: the enqueue loop's wall time / steps
//                                          (both ranks' calls: one step is one collective per rank)
//   nccl-direct-paired,BYTES,LABEL,METRIC,MEDIAN_DIFF,CI_LO,CI_HI,SLOWER_ROUNDS,ROUNDS
//                                          the median of the paired differences against the first
//                                          variant, with its 95 % sign-test interval
//   block,size=BYTES,...                   the plugin's counter blocks after each size (calls,
//                                          timed, sampling, ...), read from COLLSCOPE_SHM_DIR
// --threads 1: one enqueuing thread per rank instead (persistent, started once, meeting the main
// thread at a barrier before and after each batch of steps), each calling ncclAllReduce on its own
// communicator with no group: a job with one rank per process enqueues like that, each rank's
// hooks on its own thread, so a step pays one rank's host cost, not both ranks' in a row. The
// header then says "threads 2", and a step's absolute goal is one rank's.
// --processes 1: one process per rank, as torchrun starts a job: the harness forks a child per
// GPU before any CUDA call, rank 0's child makes NCCL's unique id (ncclGetUniqueId) and both join
// with ncclCommInitRank; the children meet at a process-shared barrier before each variant's
// rounds (each switches its own copy of the variants plugin) and write their rounds into shared
// memory, where the parent takes the slower rank's per round and prints as above. Each process
// has its own plugin, its own event mask and its own enqueuing thread: nothing of the plugin is
// shared between the ranks. Header: "processes 2". A child that fails leaves the others waiting
// at a barrier: run it under timeout (dev/gpu-nccl-direct-run.sh does).
// Note: the plugin's event mask is one per process, so with both ranks in one process rank 1's
// collective k is enqueued after rank 0 has set the mask for k + 1: under ours:N NCCL produces
// KernelCh events for about 2 collectives in N on one of the ranks (the plugin times 1 in N and
// ignores the rest). The measured cost of ours:N is therefore an upper bound of a one-rank-per-
// process job's.
//
// NCCL and the CUDA runtime are dlopen'ed (no headers, no CUDA toolkit needed to build):
//   gcc -O2 -o nccl_overhead_direct dev/nccl_overhead_direct.c -ldl -lm -lpthread
//   NCCL_NVLS_ENABLE=0 COLLSCOPE_NCCL_LIB=.../libnccl.so.2 COLLSCOPE_CUDART_LIB=.../libcudart.so.13
//   NCCL_PROFILER_PLUGIN=$PWD/libnccl-plugin-variants.so
//   COLLSCOPE_BENCH_PLUGIN=$PWD/libnccl-profiler-collscope.so COLLSCOPE_SHM_DIR=/dev/shm/csNN
//   ./nccl_overhead_direct --sizes 4K,64K,1M,16M --variants none,kch,ours:64,ours:1 --rounds 31
// (environment and command on one line; dev/gpu-nccl-direct-run.sh runs it on the device)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---- the few NCCL and CUDA runtime entry points, declared by hand ---------------------------

typedef void* ncclComm_t;
typedef struct {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
} ncclUniqueId;
typedef void* cudaStream_t;
typedef void* cudaEvent_t;
enum { ncclFloat32 = 7, ncclSum = 0, cudaStreamNonBlocking = 1, cudaMemcpyHostToDevice = 1,
       cudaMemcpyDeviceToHost = 2 };

static struct {
  int (*GetVersion)(int*);
  const char* (*GetErrorString)(int);
  int (*CommInitAll)(ncclComm_t*, int, const int*);
  int (*GetUniqueId)(ncclUniqueId*);
  int (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  int (*CommDestroy)(ncclComm_t);
  int (*GroupStart)(void);
  int (*GroupEnd)(void);
  int (*AllReduce)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
} nccl;

static struct {
  const char* (*GetErrorString)(int);
  int (*RuntimeGetVersion)(int*);
  int (*GetDeviceCount)(int*);
  int (*SetDevice)(int);
  int (*Malloc)(void**, size_t);
  int (*Memcpy)(void*, const void*, size_t, int);
  int (*StreamCreateWithFlags)(cudaStream_t*, unsigned);
  int (*StreamSynchronize)(cudaStream_t);
  int (*EventCreate)(cudaEvent_t*);
  int (*EventRecord)(cudaEvent_t, cudaStream_t);
  int (*EventSynchronize)(cudaEvent_t);
  int (*EventElapsedTime)(float*, cudaEvent_t, cudaEvent_t);
} cuda;

#define NCCL(call)                                                                         \
  do {                                                                                     \
    int r_ = nccl.call;                                                                    \
    if (r_ != 0) {                                                                         \
      fprintf(stderr, "%s:%d nccl%s: %s\n", __FILE__, __LINE__, #call,                     \
              nccl.GetErrorString(r_));                                                    \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)
#define CUDA(call)                                                                         \
  do {                                                                                     \
    int r_ = cuda.call;                                                                    \
    if (r_ != 0) {                                                                         \
      fprintf(stderr, "%s:%d cuda%s: %s\n", __FILE__, __LINE__, #call,                     \
              cuda.GetErrorString(r_));                                                    \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static void* sym(void* lib, const char* name, const char* alt) {
  void* f = alt ? dlsym(lib, alt) : NULL;
  if (!f) f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "nccl_overhead_direct: %s: %s\n", name, dlerror());
    exit(1);
  }
  return f;
}

static void* open_lib(const char* env, const char* fallback) {
  const char* p = getenv(env);
  void* lib = dlopen(p && *p ? p : fallback, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr, "nccl_overhead_direct: %s (%s): %s\n", env, p ? p : fallback, dlerror());
    exit(1);
  }
  return lib;
}

static void load(void) {
  void* c = open_lib("COLLSCOPE_CUDART_LIB", "libcudart.so");
  cuda.GetErrorString = sym(c, "cudaGetErrorString", NULL);
  cuda.RuntimeGetVersion = sym(c, "cudaRuntimeGetVersion", NULL);
  cuda.GetDeviceCount = sym(c, "cudaGetDeviceCount", NULL);
  cuda.SetDevice = sym(c, "cudaSetDevice", NULL);
  cuda.Malloc = sym(c, "cudaMalloc", NULL);
  cuda.Memcpy = sym(c, "cudaMemcpy", NULL);
  cuda.StreamCreateWithFlags = sym(c, "cudaStreamCreateWithFlags", NULL);
  cuda.StreamSynchronize = sym(c, "cudaStreamSynchronize", NULL);
  cuda.EventCreate = sym(c, "cudaEventCreate", NULL);
  cuda.EventRecord = sym(c, "cudaEventRecord", NULL);
  cuda.EventSynchronize = sym(c, "cudaEventSynchronize", NULL);
  // CUDA 12.8+ headers map cudaEventElapsedTime to the _v2 entry point; either has this signature.
  cuda.EventElapsedTime = sym(c, "cudaEventElapsedTime", "cudaEventElapsedTime_v2");
  void* n = open_lib("COLLSCOPE_NCCL_LIB", "libnccl.so.2");
  nccl.GetVersion = sym(n, "ncclGetVersion", NULL);
  nccl.GetErrorString = sym(n, "ncclGetErrorString", NULL);
  nccl.CommInitAll = sym(n, "ncclCommInitAll", NULL);
  nccl.GetUniqueId = sym(n, "ncclGetUniqueId", NULL);
  nccl.CommInitRank = sym(n, "ncclCommInitRank", NULL);
  nccl.CommDestroy = sym(n, "ncclCommDestroy", NULL);
  nccl.GroupStart = sym(n, "ncclGroupStart", NULL);
  nccl.GroupEnd = sym(n, "ncclGroupEnd", NULL);
  nccl.AllReduce = sym(n, "ncclAllReduce", NULL);
}

// ---- the run ------------------------------------------------------------------------------

#define NDEV 2
#define MAX_VARIANTS 8
#define MAX_ROUNDS 201

static const char* const NAMES[] = {"none", "api", "coll", "kch", "ours"};

struct variant {
  char label[32];
  int code;      // bench_set_variant's v
  int sampling;  // its sampling (ours:N), 0: as configured
  double dev[MAX_ROUNDS], host[MAX_ROUNDS];
};

static ncclComm_t g_comm[NDEV];
static cudaStream_t g_stream[NDEV];
static cudaEvent_t g_start[NDEV], g_end[NDEV];
static void* g_send[NDEV];
static void* g_recv[NDEV];
static void (*g_setVariant)(int, int);
static int (*g_poll)(int);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// The ranks this process drives: [g_lo, g_hi); one child's own rank under --processes 1.
static int g_lo = 0, g_hi = NDEV;

// --processes 1: what the children share with each other and the parent
static int g_processes;
struct shared {
  pthread_barrier_t ranks;  // the children
  pthread_barrier_t all;    // the children and the parent: a size's rounds are written
  ncclUniqueId id;
  int n, warm;              // rank 0's steps per round, so that both ranks run as many
  double dev[NDEV][MAX_VARIANTS][MAX_ROUNDS], host[NDEV][MAX_VARIANTS][MAX_ROUNDS];
  float got[NDEV];
};
static struct shared* g_sh;

static void rank_barrier(void) {
  if (g_processes) pthread_barrier_wait(&g_sh->ranks);
}

// --threads 1: the workers and the batch they run next
static int g_threads;
static pthread_t g_worker[NDEV];
static pthread_barrier_t g_go, g_done;
static size_t g_count;
static int g_n, g_quit;

static void* worker(void* arg) {
  int d = (int)(intptr_t)arg;
  CUDA(SetDevice(d));
  for (;;) {
    pthread_barrier_wait(&g_go);  // the barrier orders g_count, g_n and g_quit before the reads
    if (g_quit) return NULL;
    for (int i = 0; i < g_n; i++) {
      NCCL(AllReduce(g_send[d], g_recv[d], g_count, ncclFloat32, ncclSum, g_comm[d], g_stream[d]));
    }
    pthread_barrier_wait(&g_done);
  }
}

static void steps(size_t count, int n) {
  if (g_threads) {
    g_count = count;
    g_n = n;
    pthread_barrier_wait(&g_go);
    pthread_barrier_wait(&g_done);
    return;
  }
  for (int i = 0; i < n; i++) {
    NCCL(GroupStart());
    for (int d = g_lo; d < g_hi; d++) {
      NCCL(AllReduce(g_send[d], g_recv[d], count, ncclFloat32, ncclSum, g_comm[d], g_stream[d]));
    }
    NCCL(GroupEnd());
  }
}

static void drain(void) {
  for (int d = g_lo; d < g_hi; d++) {
    CUDA(SetDevice(d));
    CUDA(StreamSynchronize(g_stream[d]));
  }
}

// One timed round: device us per step (the slower stream) and host us per step (the enqueue).
static void timed(size_t count, int n, double* dev, double* host) {
  for (int d = g_lo; d < g_hi; d++) {
    CUDA(SetDevice(d));
    CUDA(EventRecord(g_start[d], g_stream[d]));
  }
  double t0 = now_us();
  steps(count, n);
  double t1 = now_us();
  float worst = 0;
  for (int d = g_lo; d < g_hi; d++) {
    CUDA(SetDevice(d));
    CUDA(EventRecord(g_end[d], g_stream[d]));
  }
  for (int d = g_lo; d < g_hi; d++) {
    float ms;
    CUDA(EventSynchronize(g_end[d]));
    CUDA(EventElapsedTime(&ms, g_start[d], g_end[d]));
    if (ms > worst) worst = ms;
  }
  *dev = worst * 1000.0 / n;
  *host = (t1 - t0) / n;
}

static void set_variant(const struct variant* v) {
  drain();
  if (g_setVariant) g_setVariant(v->code, v->sampling);
  rank_barrier();  // every process has switched before any runs the variant's steps
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(const double* v, int n) {
  double s[MAX_ROUNDS];
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// The rank k (1-based) of the sign-test interval for the median: the largest k with
// P(Bin(n, 1/2) <= k - 1) <= 0.025; [d(k), d(n+1-k)] covers the median with >= 95 %.
static int sign_test_k(int n) {
  double p = ldexp(1.0, -n), c = 1, cdf = 0;  // c: binomial(n, i)
  int k = 0;
  for (int i = 0; i < n; i++) {
    cdf += c * p;  // P(X <= i)
    if (cdf > 0.025) break;
    k = i + 1;
    c = c * (n - i) / (i + 1);
  }
  return k;
}

static void print_paired(long bytes, const struct variant* v, const struct variant* base,
                         const char* metric, int rounds) {
  const double* a = strcmp(metric, "device") == 0 ? v->dev : v->host;
  const double* b = strcmp(metric, "device") == 0 ? base->dev : base->host;
  double d[MAX_ROUNDS] = {0};
  int slower = 0;
  for (int r = 0; r < rounds; r++) {
    d[r] = a[r] - b[r];
    slower += d[r] > 0;
  }
  double m = median(d, rounds);
  qsort(d, rounds, sizeof *d, cmp_double);
  int k = sign_test_k(rounds);
  if (k >= 1) {
    printf("nccl-direct-paired,%ld,%s,%s,%.4f,%.4f,%.4f,%d,%d\n", bytes, v->label, metric, m,
           d[k - 1], d[rounds - k], slower, rounds);
  } else {
    printf("nccl-direct-paired,%ld,%s,%s,%.4f,nan,nan,%d,%d\n", bytes, v->label, metric, m, slower,
           rounds);
  }
}

// The plugin's counter blocks under COLLSCOPE_SHM_DIR (layout as dev/nccl_profiler_run.py's
// read_blocks: the CounterBlock header and per-peer arrays, then the plugin's extension region).
static void print_blocks(long bytes) {
  const char* dir = getenv("COLLSCOPE_SHM_DIR");
  char pat[600];
  snprintf(pat, sizeof pat, "%s/*/rank-*.blk", dir && *dir ? dir : "/dev/shm/collscope");
  glob_t g;
  if (glob(pat, 0, NULL, &g) != 0) {
    printf("block,size=%ld,none under %s\n", bytes, pat);
    return;
  }
  for (size_t i = 0; i < g.gl_pathc; i++) {
    FILE* f = fopen(g.gl_pathv[i], "rb");
    if (!f) continue;
    static uint8_t b[1 << 20];
    size_t len = fread(b, 1, sizeof b, f);
    fclose(f);
    if (len < 16) continue;
    uint32_t w;
    memcpy(&w, b + 8, 4);
    size_t size = (112 + 8 * (19 * (size_t)w + 40 + 36) + 127) & ~(size_t)127;
    if (len < size + 128 + 8 * 13 || w > 1024) continue;
    uint64_t q[13], calls, kernel_ns;
    memcpy(&calls, b + 32, 8);
    memcpy(&kernel_ns, b + 56, 8);
    memcpy(q, b + size + 128, sizeof q);
    printf("block,size=%ld,%s,calls=%llu,kernel_ns=%llu,launch_n=%llu,dropped=%llu,"
           "unmatched=%llu,stale=%llu,timed=%llu,sampling=%llu,kernel_off=%llu\n",
           bytes, g.gl_pathv[i], (unsigned long long)calls, (unsigned long long)kernel_ns,
           (unsigned long long)q[1], (unsigned long long)q[4], (unsigned long long)q[5],
           (unsigned long long)q[6], (unsigned long long)q[9], (unsigned long long)q[10],
           (unsigned long long)q[11]);
  }
  globfree(&g);
}

// One publisher pass of the plugin under test (the copy the variants plugin loaded), so that its
// blocks are current; 0 when it is not loaded (no plugin, or not yet initialized by NCCL).
static int bench_poll(void) {
  const char* bench = getenv("COLLSCOPE_BENCH_PLUGIN");
  if (!g_poll && bench && *bench) {
    void* b = dlopen(bench, RTLD_NOW | RTLD_NOLOAD);
    if (b) g_poll = (int (*)(int))dlsym(b, "collscope_nccl_poll");
  }
  if (g_poll) g_poll(0);
  return g_poll != NULL;
}

static long parse_bytes(const char* s) {
  char* end;
  long v = strtol(s, &end, 10);
  if (end == s || v <= 0) return -1;
  if (*end == 'K' || *end == 'k') v <<= 10, end++;
  else if (*end == 'M' || *end == 'm') v <<= 20, end++;
  return *end ? -1 : v;
}

static int parse_variant(const char* s, struct variant* v) {
  char name[32];
  snprintf(v->label, sizeof v->label, "%s", s);
  snprintf(name, sizeof name, "%s", s);
  char* at = strchr(name, '@');
  if (at) *at = 0;
  char* colon = strchr(name, ':');
  v->sampling = 0;
  if (colon) {
    *colon = 0;
    v->sampling = atoi(colon + 1);
    if (v->sampling < 1) return -1;
  }
  for (int i = 0; i < 5; i++) {
    if (strcmp(name, NAMES[i]) == 0) {
      v->code = i;
      return colon && i != 4 ? -1 : 0;
    }
  }
  return -1;
}

static void usage(const char* msg) {
  fprintf(stderr,
          "nccl_overhead_direct: %s (usage: nccl_overhead_direct [--sizes 4K,64K,1M,16M] "
          "[--variants none,kch,ours:64,ours:1] [--rounds 31] [--round-ms 40] "
          "[--min-steps 100] [--max-steps 5000] [--threads 0|1] [--processes 0|1])\n",
          msg);
  exit(2);
}

int main(int argc, char** argv) {
  const char* sizes = "4K,64K,1M,16M";
  const char* variants = "none,kch,ours:64,ours:1";
  int rounds = 31, minSteps = 100, maxSteps = 5000;
  double roundMs = 40;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) usage("every option takes a value");
    const char* o = argv[i];
    const char* a = argv[++i];
    if (strcmp(o, "--sizes") == 0) sizes = a;
    else if (strcmp(o, "--variants") == 0) variants = a;
    else if (strcmp(o, "--rounds") == 0) rounds = atoi(a);
    else if (strcmp(o, "--round-ms") == 0) roundMs = atof(a);
    else if (strcmp(o, "--min-steps") == 0) minSteps = atoi(a);
    else if (strcmp(o, "--max-steps") == 0) maxSteps = atoi(a);
    else if (strcmp(o, "--threads") == 0) g_threads = atoi(a);
    else if (strcmp(o, "--processes") == 0) g_processes = atoi(a);
    else usage("unknown option");
  }
  if (rounds < 1 || rounds > MAX_ROUNDS) usage("--rounds must be 1..201");
  if (g_threads != 0 && g_threads != 1) usage("--threads must be 0 or 1");
  if (g_processes != 0 && g_processes != 1) usage("--processes must be 0 or 1");
  if (g_threads && g_processes) usage("--threads 1 and --processes 1 exclude each other");
  if (minSteps < 1 || maxSteps < minSteps || !(roundMs > 0)) usage("bad --min/--max-steps or --round-ms");

  static struct variant vs[MAX_VARIANTS];
  int nv = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", variants);
  for (char* t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    if (nv == MAX_VARIANTS || parse_variant(t, &vs[nv]) != 0) usage("bad --variants");
    for (int j = 0; j < nv; j++)
      if (strcmp(vs[j].label, vs[nv].label) == 0) usage("a variant label twice (use NAME@TAG)");
    nv++;
  }
  long sz[16];
  int ns = 0;
  snprintf(buf, sizeof buf, "%s", sizes);
  for (char* t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    if (ns == 16 || (sz[ns] = parse_bytes(t)) < 0 || sz[ns] % 4) usage("bad --sizes");
    ns++;
  }

  const char* plugin = getenv("NCCL_PROFILER_PLUGIN");
  if (plugin && *plugin) {
    // NCCL dlopen's the same file: this handle is that copy, whose globals NCCL's calls use.
    void* p = dlopen(plugin, RTLD_NOW | RTLD_GLOBAL);
    if (!p || !(g_setVariant = (void (*)(int, int))dlsym(p, "bench_set_variant"))) {
      fprintf(stderr, "nccl_overhead_direct: NCCL_PROFILER_PLUGIN has no bench_set_variant: %s\n",
              dlerror());
      return 1;
    }
  }
  load();
  int cv, nvv;
  CUDA(RuntimeGetVersion(&cv));  // neither this nor ncclGetVersion starts CUDA: a child may fork
  NCCL(GetVersion(&nvv));
  if (!g_processes) {
    int ndev;
    CUDA(GetDeviceCount(&ndev));
    if (ndev < NDEV) {
      fprintf(stderr, "nccl_overhead_direct: %d GPU(s), needs %d\n", ndev, NDEV);
      return 1;
    }
  }
  printf("nccl-direct: nccl %d cudart %d devices %d threads %d processes %d plugin %s bench %s"
         " rounds %d round-ms %.0f\n",
         nvv, cv, NDEV, g_threads ? NDEV : 1, g_processes ? NDEV : 1,
         plugin && *plugin ? plugin : "none",
         getenv("COLLSCOPE_BENCH_PLUGIN") ? getenv("COLLSCOPE_BENCH_PLUGIN") : "none", rounds,
         roundMs);
  fflush(stdout);
  const char* prefix = g_setVariant ? "nccl-overhead" : "nccl-overhead-separate";

  long maxBytes = 0;
  for (int i = 0; i < ns; i++)
    if (sz[i] > maxBytes) maxBytes = sz[i];

  // --processes 1: fork the ranks before any CUDA call; the parent only waits and prints
  pid_t child[NDEV] = {0};
  int rank = -1;  // this process's rank under --processes 1; -1: the parent, or not forked
  if (g_processes) {
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
      perror("nccl_overhead_direct: mmap");
      return 1;
    }
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&g_sh->ranks, &ba, NDEV);
    pthread_barrier_init(&g_sh->all, &ba, NDEV + 1);
    fflush(stdout);
    for (int r = 0; r < NDEV && rank < 0; r++) {
      child[r] = fork();
      if (child[r] < 0) {
        perror("nccl_overhead_direct: fork");
        return 1;
      }
      if (child[r] == 0) rank = r;
    }
    if (rank >= 0) g_lo = rank, g_hi = rank + 1;
  }
  int parent = g_processes && rank < 0;

  if (!parent) {
    float* ones = malloc(maxBytes);
    for (long i = 0; i < maxBytes / 4; i++) ones[i] = 1.0f;
    int devs[NDEV];
    for (int d = g_lo; d < g_hi; d++) {
      devs[d] = d;
      CUDA(SetDevice(d));
      CUDA(Malloc(&g_send[d], maxBytes));
      CUDA(Malloc(&g_recv[d], maxBytes));
      CUDA(Memcpy(g_send[d], ones, maxBytes, cudaMemcpyHostToDevice));
      CUDA(StreamCreateWithFlags(&g_stream[d], cudaStreamNonBlocking));
      CUDA(EventCreate(&g_start[d]));
      CUDA(EventCreate(&g_end[d]));
    }
    if (g_processes) {
      if (rank == 0) NCCL(GetUniqueId(&g_sh->id));
      rank_barrier();
      NCCL(CommInitRank(&g_comm[rank], NDEV, g_sh->id, rank));
    } else {
      NCCL(CommInitAll(g_comm, NDEV, devs));
    }
    if (g_threads) {
      pthread_barrier_init(&g_go, NULL, NDEV + 1);
      pthread_barrier_init(&g_done, NULL, NDEV + 1);
      for (int d = 0; d < NDEV; d++) pthread_create(&g_worker[d], NULL, worker, (void*)(intptr_t)d);
    }
  }

  for (int s = 0; s < ns; s++) {
    long bytes = sz[s];
    size_t count = bytes / 4;
    int n = 0, warm = 0;
    float got[NDEV] = {0};
    if (!parent) {
      set_variant(&vs[0]);
      steps(count, 50);
      double dev, host;
      timed(count, 200, &dev, &host);
      double est = dev > host ? dev : host;
      n = (int)(roundMs * 1000 / est);
      n = n < minSteps ? minSteps : n > maxSteps ? maxSteps : n;
      warm = n / 10 < 5 ? 5 : n / 10;
      if (g_processes) {  // rank 0's choice for both: every step is a collective of both
        if (rank == 0) g_sh->n = n, g_sh->warm = warm;
        rank_barrier();
        n = g_sh->n, warm = g_sh->warm;
      }
      for (int r = 0; r < rounds; r++) {
        int k = r % nv;
        for (int j = 0; j < nv; j++) {
          struct variant* v = &vs[(k + j) % nv];
          set_variant(v);
          steps(count, warm);
          timed(count, n, &v->dev[r], &v->host[r]);
        }
      }
      set_variant(&vs[0]);
      // The sum of ones over the two ranks: 2 everywhere, or the timings are of something else.
      for (int d = g_lo; d < g_hi; d++) {
        CUDA(SetDevice(d));
        CUDA(Memcpy(&got[d], (char*)g_recv[d] + bytes - 4, 4, cudaMemcpyDeviceToHost));
      }
    }
    if (g_processes && !parent) {
      for (int i = 0; i < nv; i++) {
        memcpy(g_sh->dev[rank][i], vs[i].dev, rounds * sizeof(double));
        memcpy(g_sh->host[rank][i], vs[i].host, rounds * sizeof(double));
      }
      g_sh->got[rank] = got[rank];
      // Let the proxy threads see the last channel stops, then this process's publisher pass.
      usleep(50000);
      bench_poll();
      pthread_barrier_wait(&g_sh->all);
      continue;  // the parent prints
    }
    if (parent) {
      pthread_barrier_wait(&g_sh->all);
      n = g_sh->n, warm = g_sh->warm;
      for (int i = 0; i < nv; i++) {
        for (int r = 0; r < rounds; r++) {  // the slower rank, as the slower stream above
          vs[i].dev[r] = vs[i].host[r] = 0;
          for (int q = 0; q < NDEV; q++) {
            if (g_sh->dev[q][i][r] > vs[i].dev[r]) vs[i].dev[r] = g_sh->dev[q][i][r];
            if (g_sh->host[q][i][r] > vs[i].host[r]) vs[i].host[r] = g_sh->host[q][i][r];
          }
        }
      }
      for (int q = 0; q < NDEV; q++) got[q] = g_sh->got[q];
    }
    for (int i = 0; i < nv; i++) {
      printf("%s,%ld,%s", prefix, bytes, vs[i].label);
      for (int r = 0; r < rounds; r++) printf(",%.4f", vs[i].dev[r]);
      printf("\nnccl-overhead-host,%ld,%s", bytes, vs[i].label);
      for (int r = 0; r < rounds; r++) printf(",%.4f", vs[i].host[r]);
      printf("\n");
    }
    for (int i = 1; i < nv; i++) {
      print_paired(bytes, &vs[i], &vs[0], "device", rounds);
      print_paired(bytes, &vs[i], &vs[0], "host", rounds);
    }
    printf("size %ld: %d steps per round (warm-up %d), %d rounds, %s median device %.4f us host"
           " %.4f us per step, result %g %g\n",
           bytes, n, warm, rounds, vs[0].label, median(vs[0].dev, rounds),
           median(vs[0].host, rounds), got[0], got[1]);
    if (got[0] != 2.0f || got[1] != 2.0f) {
      fprintf(stderr, "nccl_overhead_direct: wrong all-reduce result %g %g\n", got[0], got[1]);
      return 1;
    }
    if (parent) {
      print_blocks(bytes);  // both processes' blocks, each published by its own plugin
    } else {
      // Let the proxy threads see the last channel stops, then one publisher pass.
      usleep(50000);
      if (bench_poll()) print_blocks(bytes);
    }
    fflush(stdout);
  }
  if (parent) {
    int failed = 0;
    for (int r = 0; r < NDEV; r++) {
      int st = 0;
      waitpid(child[r], &st, 0);
      failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (getenv("COLLSCOPE_BENCH_PLUGIN") && g_setVariant) print_blocks(-1);
    printf("nccl-direct: done\n");
    return failed;
  }
  if (g_threads) {
    g_quit = 1;
    pthread_barrier_wait(&g_go);
    for (int d = 0; d < NDEV; d++) pthread_join(g_worker[d], NULL);
  }
  for (int d = g_lo; d < g_hi; d++) NCCL(CommDestroy(g_comm[d]));
  if (g_processes) {  // the plugin published its blocks' last state as NCCL finalized it
    fflush(stdout);
    _exit(0);
  }
  if (g_poll) print_blocks(-1);
  printf("nccl-direct: done\n");
  return 0;
}
