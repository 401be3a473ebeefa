#!/usr/bin/env python3
"""Writes osar_variants.cu: gpu-emitter's osar.cu with compile-time switches for the bisect.

Usage: make-variants.py OSAR_CU OUT_CU. Each OMIT_* switch removes one part of the
instrumentation from the instrumented kernels (the plain kernels are the same in every variant);
PUB_EMPTY makes osar_publish return at once (its launch alone),
PUB_NO_FENCE leaves out its two system-scope fences (both for timing the publication, never
correct); MUTANT_STALE_SLOT breaks the data path on purpose (rank 1 stops copying its input into its ring
slot once every slot has been used, so later collectives reduce a stale slot), for checking that
the GPU tests fail on it. Fails loudly when osar.cu no longer has a pattern a switch needs.
"""
import sys

src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()


def rep(a, b):
    global s
    n = s.count(a)
    if n != 1:
        sys.exit(f"make-variants: expected one match in {src}, found {n}: {a!r}")
    s = s.replace(a, b)


switches = ["OMIT_SAMPLER", "OMIT_TOTALS", "OMIT_PHASE_CLOCKS", "OMIT_WAIT_CLOCK", "OMIT_PEER_ACC",
            "PUB_EMPTY", "PUB_NO_FENCE", "MUTANT_STALE_SLOT"]
rep('#include "osar_params.h"\n', '#include "osar_params.h"\n'
    + "".join(f"#ifndef {w}\n#define {w} 0\n#endif\n" for w in switches)
    + "#define PCLK() ((INSTR && !OMIT_PHASE_CLOCKS) ? clock64() : 0)\n")
rep("u64 t0 = INSTR ? clock64() : 0,", "u64 t0 = PCLK(),")
for k in range(1, 6):
    rep(f"if (INSTR) t{k} = clock64();", f"t{k} = PCLK();")
rep("const bool clock_sampler = INSTR && blockIdx.x == 0",
    "const bool clock_sampler = INSTR && !OMIT_SAMPLER && blockIdx.x == 0")
rep("""      u64 now = INSTR ? clock64() : 0;
      now = __shfl_sync(0xffffffffu, now, 0);
      if (INSTR && lane == 0 && bo.spins == 0) s_first_round = now;""",
    """      constexpr bool WC = INSTR && !OMIT_WAIT_CLOCK;
      u64 now = WC ? clock64() : 0;
      if (WC) now = __shfl_sync(0xffffffffu, now, 0);
      if (WC && lane == 0 && bo.spins == 0) s_first_round = now;""")
rep("            if (INSTR) s_arrival[p] = now;", "            if (WC) s_arrival[p] = now;")
rep("    for (int p = lane; p < world; p += 32) {", "    for (int p = lane; !OMIT_PEER_ACC && p < world; p += 32) {")
rep("  if (accountant && !s_abort) {", "  if (accountant && !OMIT_TOTALS && !s_abort) {")
rep("        if (INSTR) {  // the collective itself", "        if (INSTR && !OMIT_TOTALS) {  // the collective itself")
rep('__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile',
    '__device__ __forceinline__ void fence_acq_rel_sys() { if (!PUB_NO_FENCE) asm volatile')
rep("osar_publish(const u64* P) {\n", "osar_publish(const u64* P) {\n  if (PUB_EMPTY) return;\n")
rep("  if (!s_abort) {\n    const float term", "  if (!s_abort && !(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots)) {\n    const float term")
open(dst, "w").write(s)
