// The counter block layout (io.collscope.counters.CounterBlock; README.md there has the table).
// Mirrors the Java side exactly: CounterBlockHeaderTest fails when any value here differs from
// CounterBlock, Counter or Phase, or when either side has a constant the other lacks.
#pragma once
#define CB_MAGIC 1111708483  // 0x42435343, "CSCB" little-endian
#define CB_LAYOUT_VERSION 4
#define CB_OFF_SEQLOCK 16
#define CB_OFF_CPS 24
// Scalar counters (io.collscope.model.Counter), one u64 each from CB_OFF_COUNTERS.
#define CB_OFF_COUNTERS 32
#define CB_C_CALLS 0
#define CB_C_BYTES 1
#define CB_C_TIMEOUTS 2
#define CB_C_CLOCK_NS 3
#define CB_C_CLOCK_CYCLES 4
#define CB_N_COUNTERS 5
// Phase cycles (io.collscope.model.Phase), one u64 each from CB_OFF_PHASES.
#define CB_OFF_PHASES 72
#define CB_PH_GUARD 0
#define CB_PH_COPY 1
#define CB_PH_PUBLISH 2
#define CB_PH_WAIT 3
#define CB_PH_REDUCE 4
#define CB_N_PHASES 5
// peer_wait_cycles[W] from here, then peer_arrived_last[W], peer_late_cycles[W],
// peer_late_histogram[W][CB_LATE_BUCKETS], then latency_histogram[H].
#define CB_OFF_PEER_WAIT 112
// A peer's lateness of c cycles lands in bucket clamp(floor(log2 c) - CB_LATE_SHIFT, 0, 15).
#define CB_LATE_BUCKETS 16
#define CB_LATE_SHIFT 9
// Kernel extension words (persistent-CTA kernels: gemm_ar.cu), after the histogram; zero for
// kernels without persistent CTAs. From CB_OFF_PEER_WAIT + 8 * ((3 + CB_LATE_BUCKETS) * W + H).
#define CB_EXT_LEAD_MAX 0          // max lead of any CTA over the grid's begun tiles, 1/1000 round
#define CB_EXT_THROTTLE_STALLS 1   // tiles whose start the throttle held back
#define CB_EXT_TILES 2             // output tiles computed
#define CB_EXT_TILE_SPREAD 3       // per call: max - min tiles per CTA, summed
#define CB_EXT_LEAD_HIST 4         // [CB_EXT_LEAD_BUCKETS] tiles begun with a lead in bucket b
#define CB_EXT_LEAD_BUCKETS 32     // bucket b: lead in [b, b+1) / CB_EXT_LEAD_PER_ROUND rounds
#define CB_EXT_LEAD_PER_ROUND 4
#define CB_EXT_WORDS 36
