// collscope fused FP8 GEMM + all-reduce (gemm_ar.cu): kernel parameter and state layouts shared
// with the Java host side (io.collscope.cuda.GemmArLayout). Arrays of u64 words, as osar's, so no
// C struct padding rules are involved.
#pragma once

#include "counter_block.h"

#define GA_MAX_RANKS 8
#define GA_HIST_MAX 64
#define GA_BM 128           // output tile rows
#define GA_BN 128           // output tile columns
#define GA_BK 64            // K bytes per pipeline stage
#define GA_STAGES 4         // cp.async pipeline depth
#define GA_SMEM_ALIGN 1024  // the stages' alignment in dynamic shared memory (wgmma's swizzle)
#define GA_THREADS 256      // 8 warps: 2 (M) x 4 (N), 64 x 32 outputs each
#define GA_FRAG 64          // outputs per thread per tile
// A rank's partial tile as its peers receive it: each thread's 64 outputs in its fragment order,
// BF16, so the receiving thread (same fragment layout) reads exactly its own elements.
#define GA_TILE_BYTES (GA_THREADS * GA_FRAG * 2)
#define GA_THROTTLE_ROUNDS 2  // a CTA begins a tile only while < this many rounds ahead

// ---- Params ---------------------------------------------------------------------------------
#define G_RANK 0
#define G_WORLD 1
#define G_M 2
#define G_N 3
#define G_K 4
#define G_GROUP_M 5          // raster group: tile rows walked together (1 = row-major)
#define G_TILES 6            // (M / GA_BM) * (N / GA_BN)
#define G_BUDGET_NS 7        // bound on any single wait
#define G_A 8                // const u8* A [M][K] e4m3, this rank's K-slice
#define G_W 9                // const u8* W [N][K] e4m3
#define G_SA 10              // const float* sa [M]
#define G_SW 11              // const float* sw [N]
#define G_OUT 12             // bf16* OUT [M][N]
#define G_STATE 13           // u64* state (S_*)
#define G_COUNTER_BLOCK 14   // u64* counter block (mapped host memory)
#define G_HIST_BUCKETS 15
#define G_GRID 16            // CTAs of the persistent grid (every rank the same)
#define G_RECV_PTR 24        // [GA_MAX_RANKS] peer p's receive buffer: [2][world][tiles][GA_TILE_BYTES]
#define G_FLAG_PTR 32        // [GA_MAX_RANKS] peer p's flags: u64 [tiles][world], = epoch once the
                             //   source's partial of the tile is in p's receive buffer
#define G_ABORT_PTR 40       // [GA_MAX_RANKS] peer p's abort word
#define G_WORDS 48

// ---- State ----------------------------------------------------------------------------------
#define GS_EPOCH 0       // this call's number (host sets 1); the last CTA to finish advances it
#define GS_BEGUN 1       // tiles begun, cumulative over calls (call e's count: minus (e-1)*tiles)
#define GS_DONE 2        // CTAs finished, cumulative
#define GS_ABORT 3       // sticky: the epoch that aborted
#define GS_CPS 4         // cycles per second, set by the host
#define GS_LOCK 5        // the counter block's seqlock value, mirrored here
#define GS_ABORT_WORD 6  // this rank's abort word, for the peers (G_ABORT_PTR points here)
#define GS_TOT 16        // totals, in the counter block's published order (below)
// Totals: counters, phases, per-peer arrays at GA_MAX_RANKS, histogram, extension.
#define GT_PHASES CB_N_COUNTERS
#define GT_PEER_WAIT (GT_PHASES + CB_N_PHASES)
#define GT_PEER_LAST (GT_PEER_WAIT + GA_MAX_RANKS)
#define GT_PEER_LATE (GT_PEER_LAST + GA_MAX_RANKS)
#define GT_HIST (GT_PEER_LATE + GA_MAX_RANKS)
#define GT_EXT (GT_HIST + GA_HIST_MAX)
#define GT_WORDS (GT_EXT + CB_EXT_WORDS)
#define GS_WORDS (GS_TOT + GT_WORDS)
#define GA_PUBLISH_THREADS 128
