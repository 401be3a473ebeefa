package io.collscope.collective;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A bounded spin wait that backs off: a few hot spins, then sleeps doubling from 128 ns to 4096 ns
 * (the same schedule as the kernel's {@code __nanosleep}). It never hangs: past its budget it
 * reports a timeout and the caller aborts the collective.
 */
public final class Backoff {

  // Public for the simulator (io.collscope.sim), which polls on this schedule.
  /** Hot spins before the first sleep. */
  public static final int HOT_SPINS = 32;

  /** First sleep between polls after the hot spins. */
  public static final long FIRST_SLEEP_NANOS = 128;

  /** Longest sleep between polls. */
  public static final long MAX_SLEEP_NANOS = 4096;

  private Backoff() {}

  /**
   * Polls {@code ready} until it returns true (returns true) or {@code budgetNanos} have passed
   * since {@code startNanos} (returns false), or {@code running} turns false (returns false).
   */
  public static boolean await(
      BooleanSupplier ready, long startNanos, long budgetNanos, BooleanSupplier running) {
    long sleep = FIRST_SLEEP_NANOS;
    for (int spins = 0; ; spins++) {
      if (ready.getAsBoolean()) {
        return true;
      }
      if (System.nanoTime() - startNanos > budgetNanos || !running.getAsBoolean()) {
        return false;
      }
      if (spins < HOT_SPINS) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(sleep);
        sleep = Math.min(sleep * 2, MAX_SLEEP_NANOS);
      }
    }
  }

  /** Sleeps close to {@code nanos}: parks for the bulk, spins the last stretch. */
  public static void delay(long nanos) {
    if (nanos <= 0) {
      return;
    }
    long deadline = System.nanoTime() + nanos;
    for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
      if (left > 120_000) {
        // Linux parks overshoot by ~50 us (timer slack); leave that to the spin.
        LockSupport.parkNanos(left - 100_000);
      } else {
        Thread.onSpinWait();
      }
    }
  }
}
