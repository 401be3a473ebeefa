// collscope one-shot all-reduce: kernel parameter and state layouts shared with the Java host
// side (io.collscope.cuda.OsarLayout). Everything is an array of u64 words so no C struct
// padding rules are involved.
#pragma once

#include "counter_block.h"

#define OSAR_MAX_RANKS 32
#define OSAR_ACK_HISTORY 64
#define OSAR_HIST_MAX 64
#define OSAR_MAX_FAULTS 16  // entries of a rank's fault table
#define OSAR_PIECE_BYTES 4096  // the pipelined push path's unit: pieces are P_PIECE_UNITS of them (osar.cu)

// ---- Params: one u64 array per rank, in device memory --------------------------------------
#define P_RANK 0
#define P_WORLD 1
#define P_SLOTS 2            // ring slots per rank
#define P_ELEMS 3            // elements per rank per collective
#define P_BUDGET_NS 4        // bound on any single wait
#define P_SAMPLE_MASK 5      // accounting sampled 1 in (this + 1), a power of two (osar.cu)
#define P_PUSH_WARPS 6       // push warps per block of the pipelined push path; 0: the serial one (osar.cu)
#define P_PIECE_UNITS 7      // units of OSAR_PIECE_BYTES per piece of the pipelined push path (osar.cu)
#define P_BYTES 16           // payload bytes per rank per collective: osar_publish derives bytes from it
// words 17-47 are free (they held per-kind delays before the fault table)
#define P_INPUT 8            // const T* input (elems)
#define P_OUTPUT 9           // T* output (elems)
#define P_STATE 10           // u64* state (see S_*)
#define P_COUNTER_BLOCK 11   // u64* counter block (mapped host memory, device pointer)
#define P_HIST_BUCKETS 12
#define P_WORK_BLOCKS 13     // blocks per collective launch
#define P_SEQ_PERIOD 14      // the copy adds seq % this to the input (CollectiveConfig.SEQUENCE_PERIOD)
#define P_N_FAULTS 15        // entries in the fault table at P_FAULTS
#define P_SLOT_PTR 48        // [OSAR_MAX_RANKS] peer p's ring base (slot s at + s*elems)
#define P_FLAG_PTR 80        // [OSAR_MAX_RANKS] peer p's flag word (last published seq)
#define P_ACK_PTR 112        // [OSAR_MAX_RANKS] peer p's ack word (last seq fully reduced)
#define P_PUBTIME_PTR 144    // [OSAR_MAX_RANKS] peer p's publish %globaltimer per slot
#define P_ACKTIME_PTR 176    // [OSAR_MAX_RANKS] peer p's ack %globaltimer per seq % 64
#define P_ABORT_PTR 208      // [OSAR_MAX_RANKS] peer p's abort word (its S_ABORT, for peers to see)
#define P_FAULTS 240         // [OSAR_MAX_FAULTS][F_WORDS] the faults injected into this rank
#define P_WORDS 304

// ---- Fault table entry (io.collscope.cuda.FaultTable): F_WORDS words -----------------------
// what     F_* below | peer << 8 (F_LINK: the sending peer)
// delay    ns; 0 while the fault is outside its active interval (the host rewrites the table
//          between launches)
// thresh   the fault hits collective seq when (fault_mix(seq, index) >> 32) < thresh; 2^32: all
// index    the fault's index in the FaultPlan (the per-sequence pattern's key)
#define F_WORDS 4
#define F_WHAT 0
#define F_DELAY 1
#define F_THRESHOLD 2
#define F_INDEX 3
#define F_ARRIVAL 0  // slow-rank: the rank arrives late (before guard; in no phase)
#define F_COPY 1     // slow-copy: the copy phase takes longer
#define F_PUBLISH 2  // slow-publish: flag published late (publish phase)
#define F_ACK 3      // slow-ack: peers' acks reach this rank late (guard phase)
#define F_LINK 4     // slow-link: peer's flag seen late (wait phase)
#define F_ALL 5      // slow-all: every peer's flag seen late (wait phase)

// ---- State: one u64 array per rank, in device memory, zeroed at start ----------------------
#define S_NEXT_SEQ 0     // sequence of the next collective (host sets 1); the kernel advances it
#define S_ARRIVED 1      // blocks done copying, cumulative (publish = last of seq*B)
#define S_FINISHED 2     // blocks done reducing, cumulative
#define S_ACK_SEEN 3     // the least ack of any peer that a guard of this rank last acquired
#define S_ABORT 4        // sticky: the collective (seq) that aborted; later launches return at once
#define S_CPS 5          // cycles per second (clock64 vs %globaltimer), set by the host
#define S_LOCK 6         // the counter block's seqlock value, mirrored here: no PCIe read
#define S_GATHERED 7     // two-shot: blocks done pushing the reduced chunk, cumulative (osar.cu)
#define S_FOLDED 8       // the last collective whose sample record osar_publish folded (below)
// Totals through the last collective, one slice per data block of the rank (block b's at
// S_TOT + b * T_STRIDE): a block adds only to its own slice, with fire-and-forget reductions, so
// no two blocks' adds meet on one cache line when the kernel ends (16 blocks adding to one line
// cost ~1 us per collective: docs/BENCHMARKS.md, run 21). osar_publish, a kernel of its own on
// the same stream, sums the slices and copies the sums out whole. A slice's order is the counter
// block's from CB_OFF_COUNTERS (counters, then phases, then per-peer arrays), with the per-peer
// arrays and the histogram at their maximum sizes. Since run 182 the slices hold what
// osar_publish folds in from the sample records (slice 0) and the timeouts (run 180's kernel and
// the one-shot f32 push kernel until run 188 also billed samples inline, into their own slices). The state of a rank of B blocks is S_TOT + B * T_STRIDE + OSAR_RECORDS *
// R_WORDS words. S_TOT is a whole 128-byte line on, so the words above (polled and atomically
// added by every block, stored by the completing one) share no line with block 0's counters,
// and every slice starts on a line of its own (at 8, slice b shared its first line with slice
// b - 1 and slice 0 with these words).
#define S_TOT 16
#define T_PHASES CB_N_COUNTERS                       // [CB_N_PHASES], summed over data blocks
#define T_PEER_WAIT (T_PHASES + CB_N_PHASES)         // [world], summed over data blocks
#define T_PEER_LAST (T_PEER_WAIT + OSAR_MAX_RANKS)   // [world], block 0's view
#define T_PEER_LATE (T_PEER_LAST + OSAR_MAX_RANKS)   // [world], summed over data blocks
#define T_PEER_LATE_HIST (T_PEER_LATE + OSAR_MAX_RANKS)  // [world][CB_LATE_BUCKETS], block 0's view
#define T_HIST (T_PEER_LATE_HIST + OSAR_MAX_RANKS * CB_LATE_BUCKETS)  // [buckets]
#define T_WORDS (T_HIST + OSAR_HIST_MAX)
#define T_STRIDE 688                                 // T_WORDS rounded up to a 128-byte line
// Sample records, after the slices (from S_TOT + B * T_STRIDE): a sampled collective's accounting
// warp stores its raw clocks and arrivals in record seq % OSAR_RECORDS with plain stores, and
// osar_publish folds the records of the collectives since its last fold (S_FOLDED) into slice 0.
// So a sampled collective runs a few stores where it ran the accounting's arithmetic and ~20
// reductions, code that was cold whenever it ran (docs/GPU.md, "Sample records"). A rank
// publishes at least every OSAR_RECORDS collectives (PublishPolicy), so no record is overwritten
// before it is folded.
#define OSAR_RECORDS 1024  // a multiple of PUBLISH_THREADS
#define R_SEQ 0          // the collective's sequence (0: never written)
#define R_WEIGHT 1       // the collectives it stands for (the sample's 1 in n)
#define R_CLOCK 2        // [6] thread 0's clocks t0..t5 (the phase boundaries)
#define R_G0 8           // %globaltimer at t0
#define R_G5 9           // %globaltimer after t5
#define R_T5_RATE 10     // the clock once R_G5 was back (the rate's cycles end)
#define R_FIRST_ROUND 11 // the clock of the wait's first poll round
#define R_ARRIVAL 16     // [OSAR_MAX_RANKS] the clock of the round that saw each peer's flag
#define R_WORDS 48       // whole 128-byte lines
#define PUBLISH_THREADS 256                          // osar_publish's one block
