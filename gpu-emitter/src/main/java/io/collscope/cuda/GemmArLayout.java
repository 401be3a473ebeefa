package io.collscope.cuda;

/**
 * Word indices and sizes of the fused FP8 GEMM + all-reduce kernel's parameter and state arrays;
 * mirrors {@code src/main/cuda/gemm_ar_params.h} (KernelSourcesTest checks the two agree).
 */
final class GemmArLayout {
  private GemmArLayout() {}

  static final int MAX_RANKS = 8;
  static final int HIST_MAX = 64;
  static final int BM = 128;
  static final int BN = 128;
  static final int BK = 64;
  static final int STAGES = 4;
  static final int THREADS = 256;
  static final int FRAG = 64;
  static final int TILE_BYTES = THREADS * FRAG * 2;
  static final int THROTTLE_ROUNDS = 2;
  static final int PUBLISH_THREADS = 128;

  static final int SMEM_ALIGN = 1024;

  /**
   * Dynamic shared memory of one CTA: STAGES stages of a 128 x 64-byte tile of A and of W, and room
   * to start them on a {@link #SMEM_ALIGN} boundary (wgmma's swizzle is on address bits).
   */
  static final int SMEM_BYTES = STAGES * 2 * BM * BK + SMEM_ALIGN;

  static final int G_RANK = 0;
  static final int G_WORLD = 1;
  static final int G_M = 2;
  static final int G_N = 3;
  static final int G_K = 4;
  static final int G_GROUP_M = 5;
  static final int G_TILES = 6;
  static final int G_BUDGET_NS = 7;
  static final int G_A = 8;
  static final int G_W = 9;
  static final int G_SA = 10;
  static final int G_SW = 11;
  static final int G_OUT = 12;
  static final int G_STATE = 13;
  static final int G_COUNTER_BLOCK = 14;
  static final int G_HIST_BUCKETS = 15;
  static final int G_GRID = 16;
  static final int G_RECV_PTR = 24;
  static final int G_FLAG_PTR = 32;
  static final int G_ABORT_PTR = 40;
  static final int G_WORDS = 48;

  static final int GS_EPOCH = 0;
  static final int GS_BEGUN = 1;
  static final int GS_DONE = 2;
  static final int GS_ABORT = 3;
  static final int GS_CPS = 4;
  static final int GS_LOCK = 5;
  static final int GS_ABORT_WORD = 6;
  static final int GS_TOT = 16;
  // totals: counters (5), phases (5), per-peer arrays at MAX_RANKS, histogram, extension words
  static final int GT_WORDS = 5 + 5 + 3 * MAX_RANKS + HIST_MAX + 36;
  static final int GS_WORDS = GS_TOT + GT_WORDS;
}
