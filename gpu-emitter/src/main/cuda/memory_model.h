// Loads, stores and atomics on u64 words with their PTX memory-model scope and order spelled out,
// shared by osar.cu and gemm_ar.cu. Which one a kernel uses where, and why, is said at the use;
// here is what each one is.
#pragma once

typedef unsigned long long u64;

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A rank's own words: its state, which only its own launches write (ordered by the kernel
// boundaries between them), and its counter block (ordered by the seqlock's fences).
__device__ __forceinline__ u64 ld_volatile(const u64* p) { return *(volatile const u64*)p; }
__device__ __forceinline__ void st_volatile(u64* p, u64 v) { *(volatile u64*)p = v; }

// Sync words that other GPUs and processes read or write: system scope.
__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u64 ld_relaxed_sys(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

// Words the blocks of one GPU share.
__device__ __forceinline__ u64 ld_relaxed_gpu(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u64 atom_add_relaxed_gpu(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
// A block's arrival on a counter the rank's blocks share (one GPU): the acquire makes the work
// that earlier blocks fenced before their increments visible to, and ordered before, whatever the
// block that sees the final count does next.
// The release half carries the block's own work (every thread's, by the barrier before it) to
// whichever block sees the final count: a GPU-scope release is enough, because that block's
// system-scope release of the flag or ack is cumulative over what it acquired (run 50 replaced a
// __threadfence_system() in every block, docs/BENCHMARKS.md).
__device__ __forceinline__ u64 atom_add_acq_rel_gpu(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
// An arrival after a block wrote to peers' memory: its release is system scope. The model's
// cumulativity would carry those writes through a GPU-scope release too, but whether a GPU-scope
// fence waits for writes still crossing NVLink is the hardware's business: this one must.
__device__ __forceinline__ u64 atom_add_acq_rel_sys(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel.sys.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
