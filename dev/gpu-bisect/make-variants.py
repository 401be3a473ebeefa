#!/usr/bin/env python3
"""Writes osar_variants.cu: gpu-emitter's osar.cu with compile-time switches for the bisect.

Usage: make-variants.py OSAR_CU OUT_CU. Each OMIT_* switch removes one part of the
instrumentation from the instrumented kernels (the plain kernels are the same in every variant);
PUB_EMPTY makes osar_publish return at once (its launch alone),
PUB_NO_FENCE leaves out its two system-scope fences (both for timing the publication, never
correct); GUARD_EVERY_TIME and SYS_FENCE_ARRIVE each undo one latency change of run 50 (the
guard polls the peers' acks in every collective; a system-scope fence before every block's
arrival), NO_LOCAL_FLAG_WAIT sends the blocks that did not publish straight to the peers' flags
(run 50's kernel); MUTANT_STALE_SLOT breaks the data path on purpose (rank 1 stops copying its input into its ring
slot, or pushing it into its peers', once every slot has been used, so later collectives reduce a stale slot), for checking that
the GPU tests fail on it. PUSH_BULK replaces the pipelined push path's stores with bulk copies
(below). Fails loudly when osar.cu no longer has a pattern a switch needs.
"""
import sys

src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()


def rep(a, b, count=1):
    global s
    n = s.count(a)
    if n != count:
        sys.exit(f"make-variants: expected {count} match(es) in {src}, found {n}: {a!r}")
    s = s.replace(a, b)


switches = ["OMIT_SAMPLER", "OMIT_TOTALS", "OMIT_PHASE_CLOCKS", "OMIT_WAIT_CLOCK", "OMIT_PEER_ACC",
            "PUB_EMPTY", "PUB_NO_FENCE", "MUTANT_STALE_SLOT",
            "GUARD_EVERY_TIME", "SYS_FENCE_ARRIVE", "NO_LOCAL_FLAG_WAIT", "PUSH_BULK"]
rep('#include "osar_params.h"\n', '#include "osar_params.h"\n'
    + "".join(f"#ifndef {w}\n#define {w} 0\n#endif\n" for w in switches)
    + "#define PCLK() ((INSTR && !OMIT_PHASE_CLOCKS) ? clock64() : 0)\n")
rep("u64 t0 = INSTR ? clock64() : 0,", "u64 t0 = PCLK(),")
for k in range(1, 5):  # t2-t4 on both the serial and the pipelined path
    rep(f"if (INSTR) t{k} = clock64();", f"t{k} = PCLK();", 1 if k == 1 else 2)
rep("const u64 t5 = INSTR ? clock64() : 0;", "const u64 t5 = PCLK();")
rep("const u64 g0 = sampled && threadIdx.x == 0 ? globaltimer() : 0;",
    "const u64 g0 = sampled && !OMIT_SAMPLER && threadIdx.x == 0 ? globaltimer() : 0;")
rep("      const u64 g5 = globaltimer();", "      const u64 g5 = OMIT_SAMPLER ? 0 : globaltimer();")
rep("    const bool clocks = sampled && s_publisher;", "    const bool clocks = sampled && !OMIT_WAIT_CLOCK && s_publisher;")
rep("    for (int p = lane; p < world; p += 32) {", "    for (int p = lane; !OMIT_PEER_ACC && p < world; p += 32) {")
rep("  if (accountant && sampled && s_publisher && !s_abort) {", "  if (accountant && !OMIT_TOTALS && sampled && s_publisher && !s_abort) {")
rep("        if (INSTR) {  // the collective itself", "        if (INSTR && !OMIT_TOTALS) {  // the collective itself")
rep('__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile',
    '__device__ __forceinline__ void fence_acq_rel_sys() { if (!PUB_NO_FENCE) asm volatile')
rep("osar_publish(const u64* P) {\n", "osar_publish(const u64* P) {\n  if (PUB_EMPTY) return;\n")
# PUSH_BULK: the pipelined push path's stores as bulk copies (the TMA engine; cp.async.bulk from
# a 4 KiB shared-memory stage per push warp to each peer), each piece's flag released once its
# copies completed (wait_group, not .read: the writes performed), one piece behind, so a push warp
# waits for its stage to be read rather than for its stores to land. For measurement; needs
# pieceUnits = 1 (the default) and at most 8 push warps (the stages' 32 KiB of static shared
# memory). Not yet run on a GPU when written (eighth session).
rep("""    for (int p = 0; p < world; ++p) {
      if (p == rank) continue;
      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg);
#pragma unroll
      for (int u = 0; u < UNIT_PER_LANE; ++u) {
        const long long i = unit * UNIT_VECS + lane + 32 * u;
        if (i < pc.nvec) dst[i] = x[u];
      }
    }
""", """#if PUSH_BULK
    {
      __shared__ __align__(128) uint4 s_stage[8][UNIT_VECS];
      uint4* buf = s_stage[threadIdx.x >> 5];
#pragma unroll
      for (int u = 0; u < UNIT_PER_LANE; ++u) buf[lane + 32 * u] = x[u];
      asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
      __syncwarp();
      if (lane == 0) {
        const long long first = unit * UNIT_VECS;
        const unsigned bytes = (unsigned)((pc.nvec - first < UNIT_VECS ? pc.nvec - first : UNIT_VECS) * 16);
        const unsigned src = (unsigned)__cvta_generic_to_shared(buf);
        for (int p = 0; p < world; ++p) {
          if (p == rank || (MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots)) continue;
          uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg) + first;
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                       : : "l"(dst), "r"(src), "r"(bytes) : "memory");
        }
        asm volatile("cp.async.bulk.commit_group;" : : : "memory");
        asm volatile("cp.async.bulk.wait_group 1;" : : : "memory");  // the previous piece's copies
        if (prev_j >= 0)
          for (int p = 0; p < world; ++p)
            if (p != rank)
              st_release_sys(piece_flags<T>(P, p, world, nslots, elems) + (long long)rank * pc.units + prev_j, seq);
        asm volatile("cp.async.bulk.wait_group.read 0;" : : : "memory");  // the stage is free
      }
      __syncwarp();
      prev_j = j;
    }
#else
    for (int p = 0; p < world; ++p) {
      if (p == rank) continue;
      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg);
#pragma unroll
      for (int u = 0; u < UNIT_PER_LANE; ++u) {
        const long long i = unit * UNIT_VECS + lane + 32 * u;
        if (i < pc.nvec) dst[i] = x[u];
      }
    }
#endif
""")
rep("""    if (next_j != j) {  // the piece is out: its flag in every peer
      __syncwarp();
      if (my_flag) st_release_sys(my_flag + j, seq);
    }""", """    if (!PUSH_BULK && next_j != j) {  // the piece is out: its flag in every peer
      __syncwarp();
      if (my_flag) st_release_sys(my_flag + j, seq);
    }""")
rep("""  if (j < pc.count) load(unit, x);
  while (j < pc.count) {""", """  if (j < pc.count) load(unit, x);
  long long prev_j = -1;  // PUSH_BULK: the piece whose copies are in flight, released next
  while (j < pc.count) {""")
rep("""    j = next_j;
    unit = next_unit;
  }
}""", """    j = next_j;
    unit = next_unit;
  }
  if (PUSH_BULK && lane == 0 && prev_j >= 0) {
    asm volatile("cp.async.bulk.wait_group 0;" : : : "memory");
    for (int p = 0; p < world; ++p)
      if (p != rank)
        st_release_sys(piece_flags<T>(P, p, world, nslots, elems) + (long long)rank * pc.units + prev_j, seq);
  }
  __syncwarp();
}""")
rep("""  const int w = (int)P[P_PUSH_WARPS];
  return w < 1 ? 1 : (w > warps - 1 ? warps - 1 : w);""", """  const int w = PUSH_BULK && (int)P[P_PUSH_WARPS] > 8 ? 8 : (int)P[P_PUSH_WARPS];
  return w < 1 ? 1 : (w > warps - 1 ? warps - 1 : w);""")
rep("    if (!s_abort) {\n      if (PUSH) {", "    if (!s_abort && !(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots)) {\n      if (PUSH) {")
# the pipelined push path: the pieces' flags still go out, their data do not
rep("        if (i < pc.nvec) dst[i] = x[u];",
    "        if (i < pc.nvec && !(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots)) dst[i] = x[u];")
# the data-path changes of runs 50-51, each undone alone
rep("(s_delay[F_ACK] != 0 || s_ack_seen < seq - (u64)nslots)",
    "(GUARD_EVERY_TIME || s_delay[F_ACK] != 0 || s_ack_seen < seq - (u64)nslots)")
rep("    const u64 before = system_arrival ? atom_add_acq_rel_sys(st + S_ARRIVED, 1ull)",
    "    if (SYS_FENCE_ARRIVE) __threadfence_system();\n    const u64 before = system_arrival ? atom_add_acq_rel_sys(st + S_ARRIVED, 1ull)")
rep("    } else if (local_wait) {\n      // The other blocks wait until the flag is out",
    "    } else if (local_wait && !NO_LOCAL_FLAG_WAIT) {\n      // The other blocks wait until the flag is out")
open(dst, "w").write(s)
