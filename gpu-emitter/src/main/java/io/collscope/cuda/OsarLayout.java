package io.collscope.cuda;

/**
 * Word indices of the kernel's parameter and state arrays; mirrors {@code
 * src/main/cuda/osar_params.h} (a test checks the two agree).
 */
final class OsarLayout {
  private OsarLayout() {}

  static final int MAX_RANKS = 32;
  static final int ACK_HISTORY = 64;
  static final int HIST_MAX = 64;
  static final int MAX_FAULTS = 16;

  /**
   * The pipelined push path's unit ({@code osar.cu}): pieces are {@link #P_PIECE_UNITS} of them;
   * their flags follow the ring (RankBuffers), a word per unit.
   */
  static final int PIECE_BYTES = 4096;

  static final int P_RANK = 0;
  static final int P_WORLD = 1;
  static final int P_SLOTS = 2;
  static final int P_ELEMS = 3;
  static final int P_BUDGET_NS = 4;
  static final int P_SAMPLE_MASK = 5;
  static final int P_PUSH_WARPS = 6;
  static final int P_PIECE_UNITS = 7;
  static final int P_INPUT = 8;
  static final int P_OUTPUT = 9;
  static final int P_STATE = 10;
  static final int P_COUNTER_BLOCK = 11;
  static final int P_HIST_BUCKETS = 12;
  static final int P_WORK_BLOCKS = 13;
  static final int P_SEQ_PERIOD = 14;
  static final int P_N_FAULTS = 15;
  static final int P_BYTES = 16;
  static final int P_SLOT_PTR = 48;
  static final int P_FLAG_PTR = 80;
  static final int P_ACK_PTR = 112;
  static final int P_PUBTIME_PTR = 144;
  static final int P_ACKTIME_PTR = 176;
  static final int P_ABORT_PTR = 208;
  static final int P_FAULTS = 240;
  static final int P_WORDS = 304;

  /** A fault table entry ({@link FaultTable}): what (F_ARRIVAL.. | peer << 8), delay, etc. */
  static final int F_WORDS = 4;

  static final int F_WHAT = 0;
  static final int F_DELAY = 1;
  static final int F_THRESHOLD = 2;
  static final int F_INDEX = 3;
  static final int F_ARRIVAL = 0;
  static final int F_COPY = 1;
  static final int F_PUBLISH = 2;
  static final int F_ACK = 3;
  static final int F_LINK = 4;
  static final int F_ALL = 5;

  static final int S_NEXT_SEQ = 0;
  static final int S_ABORT = 4;
  static final int S_CPS = 5;

  /**
   * The first word of data block 0's slice of the totals; block b's is T_STRIDE words on. A line
   * after the state words ({@code osar_params.h}).
   */
  static final int S_TOT = 16;

  static final int T_STRIDE = 688;

  /** Threads of {@code osar_publish}'s one block. */
  static final int PUBLISH_THREADS = 256;

  /**
   * Sample records after the slices: a sampled collective stores its raw clocks in record {@code
   * seq % RECORDS}, and {@code osar_publish} folds them into the totals ({@code osar_params.h}). A
   * rank must publish at least every {@code RECORDS} collectives ({@link PublishPolicy}).
   */
  static final int RECORDS = 1024;

  static final int R_WORDS = 48;

  /** Words of the kernel state of a rank whose collectives run {@code blocks} data blocks. */
  static int stateWords(int blocks) {
    return S_TOT + blocks * T_STRIDE + RECORDS * R_WORDS;
  }

  /**
   * Bytes of a rank's piece flags on the push path: a row per sending rank, a word per unit of
   * {@code bytesPerRank} (room for pieces of one unit: {@code osar.cu}, "the pipelined push path").
   */
  static long pieceFlagBytes(int worldSize, long bytesPerRank) {
    return 8L * worldSize * ((bytesPerRank + PIECE_BYTES - 1) / PIECE_BYTES);
  }

  /**
   * Per-rank sync region: flag, ack, publish times per slot, ack times per seq % 64, and the abort
   * word (the collective that aborted, 0 while none did), which peers' waits watch.
   */
  static final int SYNC_FLAG = 0;

  static final int SYNC_ACK = 128;
  static final int SYNC_PUBTIME = 256;
  static final int SYNC_ACKTIME = 1024;
  static final int SYNC_ABORT = SYNC_ACKTIME + 8 * ACK_HISTORY;
  static final int SYNC_BYTES = SYNC_ABORT + 8;
}
