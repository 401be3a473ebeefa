// The counter block layout (io.collscope.counters.CounterBlock; README.md there has the table).
// Mirrors the Java side exactly: CounterBlockHeaderTest fails when any value here differs from
// CounterBlock, Counter or Phase, or when either side has a constant the other lacks.
#pragma once
#define CB_MAGIC 1111708483  // 0x42435343, "CSCB" little-endian
#define CB_LAYOUT_VERSION 3
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
