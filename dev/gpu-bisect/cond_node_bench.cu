// What a CUDA conditional graph node costs per collective, on its own (issue 14, docs/GPU.md
// "What is open"): would an IF/ELSE node per captured collective, its condition set by the
// collective before it on the device, cost less than the ~190 ns that the instrumented f32 push
// kernel's unsampled path costs over the plain kernel at 8 MB in graphs?
//
// Three graphs of N collectives in a chain, each a kernel of BLOCKS x 512 threads whose blocks
// wait WAIT_NS on %globaltimer (a stand-in with a collective's launch shape and no data):
//   kernels      N kernel nodes (the committed design: a graph fixes each node's kernel)
//   setters      N kernel nodes that also set a conditional handle from device code (the setter's
//                own cost: cudaGraphSetConditional on block 0's thread 0), read by one IF node with
//                an empty body after them
//   conditional  N IF/ELSE nodes, each with one kernel per body (instrumented, plain: here the
//                same kernel, counting which body ran), whose condition the kernel of the node
//                before sets: 1 in EVERY by sequence, as the kernel's sample would
// Each graph replayed REPLAYS times per round between two events, ROUNDS rounds, the graphs
// interleaved within each round; printed: the median per collective (us) and each graph's
// difference from `kernels` (ns per collective), then a check that the IF bodies ran exactly 1
// in EVERY collectives (a conditional that never switched would measure nothing).
//
//   nvcc -O3 -arch=sm_90a -o /tmp/cond_node_bench dev/gpu-bisect/cond_node_bench.cu
//   /tmp/cond_node_bench [N=50] [BLOCKS=32] [WAIT_NS=0,5000,20000] [EVERY=16] [REPLAYS=20] [ROUNDS=9]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "cond_node_bench: %s:%d %s: %s\n", __FILE__, __LINE__, #x,                \
              cudaGetErrorString(e_));                                                          \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Counters {
  unsigned long long seq;  // collectives run so far, every graph alike
  unsigned long long ran[2];  // IF bodies (instrumented), ELSE bodies (plain)
};

// One collective's stand-in: every block's thread 0 waits, its block with it; block 0's thread 0
// then counts the collective and, where SET, sets the next node's condition from the sequence.
template <bool SET>
__global__ void __launch_bounds__(512, 1)
    collective(unsigned long long wait_ns, Counters* c, int body, cudaGraphConditionalHandle next,
               unsigned int every) {
  if (threadIdx.x == 0) {
    const unsigned long long t = globaltimer();
    while (globaltimer() - t < wait_ns) {
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const unsigned long long seq = ++c->seq;
    if (body >= 0) ++c->ran[body];
    // the next collective's sample (seq + 1), as the kernel would hash it
    if (SET) cudaGraphSetConditional(next, (seq + 1) % every == 0 ? 1u : 0u);
  }
}

static void add_kernel(cudaGraph_t g, cudaGraphNode_t* node, const cudaGraphNode_t* dep, void* fn,
                       int blocks, void** args) {
  cudaKernelNodeParams p = {};
  p.func = fn;
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(512);
  p.kernelParams = args;
  CK(cudaGraphAddKernelNode(node, g, dep, dep ? 1 : 0, &p));
}

enum Kind { KERNELS, SETTERS, CONDITIONAL, KINDS };
static const char* kNames[KINDS] = {"kernels", "setters", "conditional"};

static cudaGraphExec_t build(Kind kind, int n, int blocks, unsigned long long wait_ns, Counters* c,
                             unsigned int every) {
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  // A handle must belong to a conditional node of the graph, or instantiation fails: the
  // conditional graph has one per node, the last node setting the first one's for the next replay
  // (no default: the value carries over between launches); the setters set one handle that a
  // single IF node with an empty body reads after them.
  std::vector<cudaGraphConditionalHandle> h(kind == CONDITIONAL ? n : 1);
  if (kind != KERNELS) {
    for (auto& hi : h) CK(cudaGraphConditionalHandleCreate(&hi, g, 0, 0));
  }
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < n; i++) {
    cudaGraphNode_t node;
    if (kind == CONDITIONAL) {
      cudaGraphNodeParams cp = {};
      cp.type = cudaGraphNodeTypeConditional;
      cp.conditional.handle = h[i];
      cp.conditional.type = cudaGraphCondTypeIf;
      cp.conditional.size = 2;
      CK(cudaGraphAddNode(&node, g, prev ? &prev : nullptr, nullptr, prev ? 1 : 0, &cp));
      for (int body = 0; body < 2; body++) {
        unsigned long long w = wait_ns;
        Counters* cc = c;
        int b = body;
        cudaGraphConditionalHandle next = h[(i + 1) % n];
        unsigned int ev = every;
        void* args[] = {&w, &cc, &b, &next, &ev};  // copied when the node is added
        cudaGraphNode_t k;
        add_kernel(cp.conditional.phGraph_out[body], &k, nullptr, (void*)collective<true>, blocks,
                   args);
      }
    } else {
      unsigned long long w = wait_ns;
      Counters* cc = c;
      int b = -1;
      cudaGraphConditionalHandle next = kind == SETTERS ? h[0] : 0;
      unsigned int ev = every;
      void* args[] = {&w, &cc, &b, &next, &ev};
      add_kernel(g, &node, prev ? &prev : nullptr,
                 kind == SETTERS ? (void*)collective<true> : (void*)collective<false>, blocks, args);
    }
    prev = node;
  }
  if (kind == SETTERS) {
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h[0];
    cp.conditional.type = cudaGraphCondTypeIf;
    cp.conditional.size = 1;
    cudaGraphNode_t node, empty;
    CK(cudaGraphAddNode(&node, g, &prev, nullptr, 1, &cp));
    CK(cudaGraphAddEmptyNode(&empty, cp.conditional.phGraph_out[0], nullptr, 0));
  }
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, g, 0));
  CK(cudaGraphDestroy(g));
  return exec;
}

static std::vector<int> ints(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(atoi(p));
    const char* q = strchr(p, ',');
    if (!q) break;
    p = q + 1;
  }
  return v;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 50;
  const int blocks = argc > 2 ? atoi(argv[2]) : 32;
  const std::vector<int> waits = ints(argc > 3 ? argv[3] : "0,5000,20000");
  const unsigned int every = argc > 4 ? atoi(argv[4]) : 16;
  const int replays = argc > 5 ? atoi(argv[5]) : 20;
  const int rounds = argc > 6 ? atoi(argv[6]) : 9;
  if (n < 1 || blocks < 1 || every < 1 || replays < 1 || rounds < 1 || waits.empty()) {
    fprintf(stderr, "usage: cond_node_bench [N] [BLOCKS] [WAIT_NS,...] [EVERY] [REPLAYS] [ROUNDS]\n");
    return 2;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  printf("cond_node_bench: %s, driver %d, runtime %d; %d collectives per graph, %d blocks x 512, "
         "1 in %u sampled, %d replays x %d rounds\n",
         prop.name, driver, runtime, n, blocks, every, replays, rounds);
  Counters* c;
  CK(cudaMalloc(&c, sizeof(Counters)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("| wait ns | graph | us per collective (median, min..max) | - kernels, ns per collective |\n");
  printf("|---:|---|---|---:|\n");
  bool ok = true;
  for (int wait : waits) {
    cudaGraphExec_t exec[KINDS];
    for (int k = 0; k < KINDS; k++) exec[k] = build((Kind)k, n, blocks, wait, c, every);
    std::vector<double> us[KINDS];
    for (int k = 0; k < KINDS; k++) {  // warm-up
      CK(cudaGraphLaunch(exec[k], s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemset(c, 0, sizeof(Counters)));
    for (int r = 0; r < rounds; r++) {
      for (int k = 0; k < KINDS; k++) {
        CK(cudaEventRecord(e0, s));
        for (int t = 0; t < replays; t++) CK(cudaGraphLaunch(exec[k], s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        us[k].push_back(ms * 1000.0 / ((double)replays * n));
      }
    }
    double median[KINDS];
    for (int k = 0; k < KINDS; k++) {
      std::vector<double> v = us[k];
      std::sort(v.begin(), v.end());
      median[k] = v[v.size() / 2];
      printf("| %d | %s | %.3f (%.3f..%.3f) | %+.0f |\n", wait, kNames[k], median[k], v.front(),
             v.back(), (median[k] - median[KERNELS]) * 1000.0);
    }
    // which bodies ran: the conditional graph's collectives only
    Counters h;
    CK(cudaMemcpy(&h, c, sizeof(Counters), cudaMemcpyDeviceToHost));
    const unsigned long long conditional = (unsigned long long)rounds * replays * n;
    // a collective's IF body ran when the kernel before it in the graph set its condition from
    // the shared sequence (the three graphs' collectives all count in it): about 1 in EVERY
    const unsigned long long bodies = h.ran[0] + h.ran[1];
    const double share = bodies ? (double)h.ran[0] / bodies : 0;
    printf("wait %d: %llu conditional collectives ran a body (of %llu), %llu the IF body (%.4f, 1/%u = %.4f)\n",
           wait, bodies, conditional, h.ran[0], share, every, 1.0 / every);
    if (bodies != conditional || share < 0.5 / every || share > 1.5 / every) ok = false;
    for (int k = 0; k < KINDS; k++) CK(cudaGraphExecDestroy(exec[k]));
  }
  printf("cond_node_bench: %s\n", ok ? "bodies as set" : "BODIES NOT AS SET");
  return ok ? 0 : 1;
}
