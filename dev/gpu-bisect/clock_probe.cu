// How %globaltimer and clock64 behave on this GPU, for the issue 14 question "why does the
// candidate kernel's clock sample read a rate 5-23 % low" (docs/gpu-runs/2026-11-30-run63-x2).
//
//   1. granularity: one thread reads %globaltimer back to back for ~2 ms and histograms the
//      steps it sees (a step of 1000 ns means a 1 MHz timer, 32 ns a fine one);
//   2. short intervals against the calibration: 2,000 intervals of ~5 us, each timed on both
//      clocks, ended three ways, and sum(cycles)/sum(ns) compared with a 20 ms calibration:
//        spin    - ends when clock64 has advanced C cycles (uncorrelated with the timer),
//        timer   - ends when %globaltimer reaches g0 + 5000 (ends on a timer step),
//        sleep   - backs off with __nanosleep as osar.cu's Backoff does, ends on the timer;
//      each interval starts after a random-length spin, so starts fall anywhere between steps.
// A timer-ended interval with a coarse timer reads the ns of its start rounded down but its end
// exact: the sum of ns is too long by half a step per interval, and the rate too low.
//
// Build: nvcc -O3 -arch=sm_90a -o clock_probe clock_probe.cu ; run: ./clock_probe [device]
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>

typedef unsigned long long u64;

__device__ __forceinline__ u64 gtimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void granularity(u64* hist, u64* out) {
  // hist[0..63]: steps of k*32 ns (k < 63), hist[63]: larger
  u64 g = gtimer(), start = g, steps = 0, min_step = ~0ull, max_step = 0;
  while (g - start < 2000000ull) {
    u64 n = gtimer();
    if (n != g) {
      u64 d = n - g;
      u64 b = d / 32;
      atomicAdd(&hist[b < 63 ? b : 63], 1ull);
      if (d < min_step) min_step = d;
      if (d > max_step) max_step = d;
      ++steps;
      g = n;
    }
  }
  out[0] = steps;
  out[1] = min_step;
  out[2] = max_step;
}

__global__ void calibrate(u64* out) {
  u64 g0 = gtimer(), c0 = clock64();
  while (gtimer() - g0 < 20000000ull) {
  }
  u64 c1 = clock64(), g1 = gtimer();
  out[0] = c1 - c0;
  out[1] = g1 - g0;
}

// mode 0 spin, 1 timer, 2 sleep. out: sum cycles, sum ns
__global__ void intervals(int mode, u64 cycles, int n, u64 seed, u64* out) {
  u64 sc = 0, sn = 0, x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    u64 pre = clock64() + ((x >> 33) % 4000);  // up to ~2 us of random offset
    while (clock64() < pre) {
    }
    u64 c0 = clock64(), g0 = gtimer();
    if (mode == 0) {
      while (clock64() - c0 < cycles) {
      }
    } else if (mode == 1) {
      while (gtimer() < g0 + 5000) {
      }
    } else {
      unsigned s = 128;
      while (gtimer() < g0 + 5000) {
        __nanosleep(s);
        s = s < 4096 ? s * 2 : 4096;
      }
    }
    u64 c1 = clock64(), g1 = gtimer();
    sc += c1 - c0;
    sn += g1 - g0;
  }
  out[0] = sc;
  out[1] = sn;
}

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                        \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  int dev = argc > 1 ? atoi(argv[1]) : 0;
  CK(cudaSetDevice(dev));
  u64 *hist, *out;
  CK(cudaMallocManaged(&hist, 64 * sizeof(u64)));
  CK(cudaMallocManaged(&out, 4 * sizeof(u64)));
  for (int i = 0; i < 64; ++i) hist[i] = 0;
  granularity<<<1, 1>>>(hist, out);
  CK(cudaDeviceSynchronize());
  printf("device %d globaltimer over 2 ms: %llu steps, min %llu ns, max %llu ns\n", dev, out[0],
         out[1], out[2]);
  for (int i = 0; i < 64; ++i)
    if (hist[i]) printf("  step %s%d ns: %llu\n", i == 63 ? ">=" : "~", i * 32, hist[i]);
  calibrate<<<1, 1>>>(out);
  CK(cudaDeviceSynchronize());
  double cal = (double)out[0] / out[1];
  printf("calibration (20 ms): %.4f GHz\n", cal);
  const char* names[] = {"spin", "timer", "sleep"};
  for (int round = 0; round < 2; ++round) {
    for (int mode = 0; mode < 3; ++mode) {
      intervals<<<1, 1>>>(mode, (u64)(cal * 5000), 2000, 12345 + mode + 7 * round, out);
      CK(cudaDeviceSynchronize());
      double rate = (double)out[0] / out[1];
      printf("round %d %-5s 2000 intervals, mean %.0f ns: rate %.4f GHz, %.4f of calibration\n",
             round, names[mode], (double)out[1] / 2000, rate, rate / cal);
    }
  }
  return 0;
}
