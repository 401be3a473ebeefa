#!/usr/bin/env python3
"""Writes the clock-sample variants of run 52's candidate kernel (issue 14).

Usage: make-clock-variants.py CANDIDATE_OSAR_CU OUT_DIR

The candidate (docs/gpu-runs/2026-11-30-run52-x2/osar.cu) takes the clock sample (the collective
timed on clock64 and %globaltimer, whose ratio consumers use as the clock's rate) in the block
that published the rank's flag, the last to finish its copy, through the accounting warp; main
takes it in block 0. Its rate read 5-23 % low in 5 of 36 GPU tests. Two variants, each changing
only where the sample is taken and who adds it:

  cand-b0.cu         block 0's thread 0 adds t5 - t0 and g5 - g0 itself, at the collective's end
                     (main's block, without the hand-off)
  cand-pubdirect.cu  the publishing block's thread 0 adds them itself at the same place (the
                     candidate's block, without the hand-off)
  cand-b0g.cu        cand-b0, and only block 0 reads %globaltimer at the start (the candidate has
                     every block's thread 0 read it, since which block accounts is known only
                     later; run 66: the rate reads lower the more blocks a size uses)
  cand-b0after.cu    cand-b0, with the cycles' end read once %globaltimer's value has come back
                     (a clock read that depends on it): if the rate then reads right, the timer's
                     end sample came back late — hundreds of ns after the clock's — under the
                     reduce's memory traffic

If cand-b0 reads right and cand-pubdirect low, the block is the cause (the publisher's interval
ends on a back-off that wakes on the timer's step); if both read right, the hand-off is.
Fails loudly when the source no longer has a pattern it needs.
"""
import os
import sys

src, out = sys.argv[1], sys.argv[2]
base = open(src).read()

SAMPLE_IN_ACCOUNTANT = """    if (lane == 0) {  // the clock samples: the whole collective
      red_add(tot + CB_C_CLOCK_NS, s_clock[7] - s_clock[6]);
      red_add(tot + CB_C_CLOCK_CYCLES, s_clock[5] - c0);
    }
"""
T5 = "  const u64 t5 = INSTR ? clock64() : 0;\n"


G0 = "  const u64 g0 = INSTR && threadIdx.x == 0 ? globaltimer() : 0;\n"


def variant(who, g0_block0=False, cycles_after=False):
    s = base
    if g0_block0:
        if s.count(G0) != 1:
            sys.exit(f"make-clock-variants: expected one match in {src}: {G0!r}")
        s = s.replace(G0, G0.replace("threadIdx.x == 0", "blockIdx.x == 0 && threadIdx.x == 0"))
    for pat in (SAMPLE_IN_ACCOUNTANT, T5):
        n = s.count(pat)
        if n != 1:
            sys.exit(f"make-clock-variants: expected one match in {src}, found {n}: {pat!r}")
    s = s.replace(SAMPLE_IN_ACCOUNTANT, "")
    s = s.replace(
        T5,
        T5
        + f"""  if (INSTR && ({who}) && threadIdx.x == 0 && !s_abort) {{
    const u64 g5s = globaltimer();
    u64* tot_s = st + S_TOT + (long long)blockIdx.x * T_STRIDE;
    red_add(tot_s + CB_C_CLOCK_NS, g5s - g0);
    red_add(tot_s + CB_C_CLOCK_CYCLES, {"t5b" if cycles_after else "t5"} - t0);
  }}
""".replace("    u64* tot_s", "    // a volatile read under a branch on g5s: issued only once g5s has come back\n    const u64 t5b = g5s != 0 ? clock64() : 0;\n    u64* tot_s" if cycles_after else "    u64* tot_s"),
    )
    return s


os.makedirs(out, exist_ok=True)
open(os.path.join(out, "cand-b0.cu"), "w").write(variant("blockIdx.x == 0"))
open(os.path.join(out, "cand-pubdirect.cu"), "w").write(variant("s_publisher"))
open(os.path.join(out, "cand-b0g.cu"), "w").write(variant("blockIdx.x == 0", g0_block0=True))
open(os.path.join(out, "cand-b0after.cu"), "w").write(variant("blockIdx.x == 0", cycles_after=True))
