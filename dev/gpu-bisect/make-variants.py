#!/usr/bin/env python3
"""Writes osar_variants.cu: gpu-emitter's osar.cu with compile-time switches for the bisect.

Usage: make-variants.py OSAR_CU OUT_CU. Each OMIT_* switch removes one part of the
instrumentation from the instrumented kernels (the plain kernels are the same in every variant;
run 147 added OMIT_ACCOUNT, OMIT_HANDOVER and OMIT_DIV: the accounting warp's work, the clocks'
hand-off to it, the division by the gaters (since run 181 also in osar_publish's fold of the
sample records, whose arrivals OMIT_PEER_ACC leaves out; OMIT_LATENCY_ADD went with the
accounting warp's adds, and the inline billing's switches with that billing in run 188);
PUB_EMPTY makes osar_publish return at once (its launch alone),
PUB_NO_FENCE leaves out its two system-scope fences (both for timing the publication, never
correct); GUARD_EVERY_TIME and SYS_FENCE_ARRIVE each undo one latency change of run 50 (the
guard polls the peers' acks in every collective; a system-scope fence before every block's
arrival), NO_LOCAL_FLAG_WAIT sends the blocks that did not publish straight to the peers' flags
(run 50's kernel); MUTANT_STALE_SLOT breaks the data path on purpose (rank 1 stops copying its input into its ring
slot, or pushing it into its peers', once every slot has been used, so later collectives reduce a stale slot;
two-shot: its chunks of the input), MUTANT_STALE_GATHER breaks two-shot's second exchange (rank 1
stops pushing its reduced chunk into its peers' slots once every slot has been used: its gather
flag still goes out, the peers copy a chunk of an earlier collective), for checking that the GPU
tests fail on them. (PUSH_BULK, the pipelined push path's stores as bulk copies, was
measured slower in run 109 and removed; it is in git history, f91979c.) Fails loudly when osar.cu
no longer has a pattern a switch needs.
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
            "OMIT_ACCOUNT", "OMIT_HANDOVER", "OMIT_DIV",
            "PUB_EMPTY", "PUB_NO_FENCE", "MUTANT_STALE_SLOT", "MUTANT_STALE_GATHER",
            "GUARD_EVERY_TIME", "SYS_FENCE_ARRIVE", "NO_LOCAL_FLAG_WAIT"]
rep('#include "osar_params.h"\n', '#include "osar_params.h"\n'
    + "".join(f"#ifndef {w}\n#define {w} 0\n#endif\n" for w in switches)
)
# the phase clocks (t0..t5, MARK_CLOCK) and the sampler's timer read (g0) as zeros when omitted
rep("if (threadIdx.x == 0) s_clock[k] = clock64();",
    "if (threadIdx.x == 0) s_clock[k] = OMIT_PHASE_CLOCKS ? 0 : clock64();")
rep("      t##k = clock64();", "      t##k = OMIT_PHASE_CLOCKS ? 0 : clock64();")
rep("const u64 g0 = !PUSH && sampled && threadIdx.x == 0 ? globaltimer() : 0;",
    "const u64 g0 = !PUSH && sampled && !OMIT_SAMPLER && threadIdx.x == 0 ? globaltimer() : 0;")
rep("if (PUSH && sampled && threadIdx.x == 0) s_clock[6] = globaltimer();",
    "if (PUSH && sampled && threadIdx.x == 0) s_clock[6] = OMIT_SAMPLER ? 0 : globaltimer();")
rep("      const u64 g5 = globaltimer();", "      const u64 g5 = OMIT_SAMPLER ? 0 : globaltimer();")
rep("    const bool clocks = sampled && s_publisher;", "    const bool clocks = sampled && !OMIT_WAIT_CLOCK && s_publisher;")
rep("for (int p = lane; p < world; p += 32) rec[R_ARRIVAL + p]",
    "for (int p = lane; !OMIT_PEER_ACC && p < world; p += 32) rec[R_ARRIVAL + p]")
rep("  if (accountant && sampled && s_publisher && !s_abort) store_record<PUSH>",
    "  if (accountant && !OMIT_TOTALS && !OMIT_ACCOUNT && sampled && s_publisher && !s_abort) store_record<PUSH>")
# the clocks' handover to the accounting warp (its named barrier; the accountant then reads stale
# clocks: for timing only), and the per-peer wait's division by the gaters (a software divide)
rep("  if (!PUSH && sampled && s_publisher) {\n", "  if (!OMIT_HANDOVER && !PUSH && sampled && s_publisher) {\n")
rep("  } else if (PUSH && sampled && s_publisher) {\n", "  } else if (!OMIT_HANDOVER && PUSH && sampled && s_publisher) {\n")
rep("(latest - c[3]) / gaters * w", "(OMIT_DIV ? (latest - c[3]) : (latest - c[3]) / gaters) * w")
rep('__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile',
    '__device__ __forceinline__ void fence_acq_rel_sys() { if (!PUB_NO_FENCE) asm volatile')
rep("osar_publish(const u64* P) {\n", "osar_publish(const u64* P) {\n  if (PUB_EMPTY) return;\n")
rep("    if (!s_abort) {\n      if (PUSH) {", "    if (!s_abort && !(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots)) {\n      if (PUSH) {")
# two-shot: the chunks of rank 1's input (copy) and of its sums (reduce) stop reaching the peers
# (since run 157 at the calls of the out-of-line loops, two_shot_scatter and two_shot_reduce)
rep("      two_shot_scatter<T>(P, rank, world, blocks, elems, my_seg, term);",
    "      if (!(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots))\n"
    "      two_shot_scatter<T>(P, rank, world, blocks, elems, my_seg, term);")
rep("    if (!s_abort) two_shot_reduce<T>(P, rank, world, blocks, slot, elems, term);",
    "    if (!s_abort && MUTANT_STALE_GATHER && rank == 1 && seq > (u64)nslots) {\n"
    "      long long a, b;\n"
    "      two_shot_share(elems / Vec16<T>::N, world, blocks, rank, &a, &b);\n"
    "      reduce_vec<T, true>(P, rank, world, slot, elems, a, b, (T*)P[P_OUTPUT], term);\n"
    "    } else\n"
    "    if (!s_abort) two_shot_reduce<T>(P, rank, world, blocks, slot, elems, term);")
# the pipelined push path: the pieces' flags still go out, their data do not
rep("      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg) + unit * UNIT_VECS + lane;\n",
    "      if (MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots) continue;\n"
    "      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg) + unit * UNIT_VECS + lane;\n")
# the data-path changes of runs 50-51, each undone alone
rep("(s_delay[F_ACK] != 0 || s_ack_seen < seq - (u64)nslots)",
    "(GUARD_EVERY_TIME || s_delay[F_ACK] != 0 || s_ack_seen < seq - (u64)nslots)")
rep("    const u64 before = system_arrival ? atom_add_acq_rel_sys(st + S_ARRIVED, 1ull)",
    "    if (SYS_FENCE_ARRIVE) __threadfence_system();\n    const u64 before = system_arrival ? atom_add_acq_rel_sys(st + S_ARRIVED, 1ull)")
rep("    } else if (local_wait) {\n      // The other blocks wait until the flag is out",
    "    } else if (local_wait && !NO_LOCAL_FLAG_WAIT) {\n      // The other blocks wait until the flag is out")
open(dst, "w").write(s)
