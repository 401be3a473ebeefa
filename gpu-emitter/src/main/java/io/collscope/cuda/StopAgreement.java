package io.collscope.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntPredicate;

/**
 * How the processes of one communicator (one rank each, {@link IpcPlacement}) stop after the same
 * collective, so that no rank launches a collective a peer never joins: that collective's waits
 * would run out their budget, count a timeout and fail the run ("backend failed") although every
 * process only meant to stop.
 *
 * <p><b>Words.</b> Each rank owns {@code rank-R.stop} in the rendezvous directory: {@value
 * #FILE_BYTES} bytes, memory-mapped by every rank (its own read-write, its peers' read-only), with
 * three words only its rank writes, with volatile stores and read with volatile loads:
 *
 * <ul>
 *   <li>{@code REQUEST}: non-zero once the rank asks the communicator to stop (its {@code
 *       --seconds} ended, SIGTERM, {@code close()});
 *   <li>{@code LAUNCHED}: the collectives it has launched, written <em>before</em> it enqueues a
 *       batch, so a peer sees how far this rank's kernels will wait on it;
 *   <li>{@code STATE}: {@code RUNNING}; {@code DECLARED} once it launches nothing on its own any
 *       more (its {@code LAUNCHED} is then final, except to follow its peers); {@code LEFT} when it
 *       stopped without an agreement (a failure, an injected dead rank): it is waited on no more.
 * </ul>
 *
 * <p><b>Protocol</b> ({@link #nextBatchEnd}, called by the rank's dispatcher between two batches,
 * its stream idle): while no rank's {@code REQUEST} is raised, announce the next batch and launch
 * it (the cost: a volatile load per rank per batch of 16 collectives). Once one is raised, write
 * {@code DECLARED}, and from then on launch only to follow: up to {@code M}, the highest {@code
 * LAUNCHED} of the ranks that have not left, one batch at a time. Stop when every such rank has
 * declared and this one has launched {@code M}. Every rank stops after the same collective {@code
 * M}: a declared rank never raises {@code M} (it follows up to it), and once every rank has
 * declared no one announces anything new, so {@code M} read after the states is final. A rank still
 * running a batch when the request comes is followed through it, since its kernels wait on the
 * peers' launches; two ranks asking at once both declare; a rank that asks before its peer has
 * launched anything stops with it at whatever the peer had announced by the time it declared.
 *
 * <p>The dispatcher threads of one process with ranks on several GPUs agree the same way, over the
 * same words in memory ({@link #inProcess}): one thread stopping a batch before the other would
 * leave that one's batch waiting on it just the same.
 *
 * <p><b>Bounded.</b> A rank that stays {@code RUNNING} without announcing anything new for the
 * rendezvous timeout, or whose process is gone (the pid it published at the rendezvous no longer
 * runs), ends the wait with {@link NoAgreementException}: the dispatcher then launches on as it
 * would without an agreement, so a dead peer is what it always was, a wait that runs out its
 * budget, counted as a timeout, and a failed run.
 */
final class StopAgreement {

  /** What {@link #nextBatchEnd} returns once every rank has agreed: launch nothing more. */
  static final long STOP = -1;

  static final int FILE_BYTES = 64;
  private static final int W_REQUEST = 0;
  private static final int W_LAUNCHED = 8;
  private static final int W_STATE = 16;
  private static final long RUNNING = 0;
  private static final long DECLARED = 1;
  private static final long LEFT = 2;

  /** How long a waiting rank sleeps between two looks at its peers' words. */
  private static final long POLL_NANOS = 50_000;

  /** How often a waiting rank looks whether a running peer's process is gone. */
  private static final long GONE_CHECK_NANOS = 10_000_000;

  private static final VarHandle WORD =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  /** A peer neither declared nor announced a batch within the timeout, or its process is gone. */
  static final class NoAgreementException extends IllegalStateException {
    NoAgreementException(String message) {
      super(message);
    }
  }

  private final Path dir;
  private final int rank;
  private final Duration timeout;
  private final ByteBuffer own;
  private final ByteBuffer[] words; // by rank; null for a rank that does not take part
  private IntPredicate gone = q -> false;
  private boolean declared; // the dispatcher thread's own
  private volatile long agreedAt = -1;

  private StopAgreement(Path dir, int rank, int worldSize, Duration timeout, ByteBuffer own) {
    this.dir = dir;
    this.rank = rank;
    this.timeout = timeout;
    this.own = own;
    this.words = new ByteBuffer[worldSize];
    words[rank] = own;
  }

  /**
   * The agreement of {@code participants} dispatcher threads of one process (one per GPU, every
   * rank in this process): the same words in direct memory instead of files, one instance per
   * thread. No process can be gone; the timeout still bounds every wait.
   */
  static StopAgreement[] inProcess(int participants, Duration timeout) {
    ByteBuffer[] shared = new ByteBuffer[participants];
    for (int i = 0; i < participants; i++) shared[i] = ByteBuffer.allocateDirect(FILE_BYTES);
    StopAgreement[] out = new StopAgreement[participants];
    for (int i = 0; i < participants; i++) {
      out[i] = new StopAgreement(null, i, participants, timeout, shared[i]);
      System.arraycopy(shared, 0, out[i].words, 0, participants);
    }
    return out;
  }

  static Path file(Path dir, int rank) {
    return dir.resolve("rank-" + rank + ".stop");
  }

  /**
   * Writes rank {@code rank}'s words, all zero ({@code RUNNING}, nothing launched, no request),
   * replacing what an earlier run left, and maps them. Call before the rank publishes its IPC
   * handles: a peer that sees the handles finds this file.
   */
  static StopAgreement create(Path dir, int rank, int worldSize, Duration timeout) {
    try {
      Files.createDirectories(dir);
      Path f = file(dir, rank);
      Path tmp = Files.createTempFile(dir, f.getFileName().toString(), ".tmp");
      Files.write(tmp, new byte[FILE_BYTES]);
      Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      return new StopAgreement(dir, rank, worldSize, timeout, map(f, true));
    } catch (IOException e) {
      throw new UncheckedIOException("stop agreement in " + dir, e);
    }
  }

  /**
   * Maps the words of every other rank {@code takesPart} accepts (not the injected dead ones),
   * waiting for their files within the timeout. {@code gone} says whether a rank's process has
   * ended (checked only while the rank is still {@code RUNNING}).
   */
  void join(IntPredicate takesPart, IntPredicate gone) throws InterruptedException {
    this.gone = gone;
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int q = 0; q < words.length; q++) {
      if (q == rank || !takesPart.test(q)) continue;
      Path f = file(dir, q);
      while (!Files.exists(f)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "stop agreement in "
                  + dir
                  + ": rank "
                  + q
                  + " never wrote "
                  + f.getFileName()
                  + " within "
                  + timeout.toSeconds()
                  + " s");
        }
        Thread.sleep(20);
      }
      try {
        words[q] = map(f, false);
      } catch (IOException e) {
        throw new UncheckedIOException("stop agreement in " + dir, e);
      }
    }
  }

  private static ByteBuffer map(Path f, boolean writable) throws IOException {
    try (FileChannel ch =
        writable
            ? FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)
            : FileChannel.open(f, StandardOpenOption.READ)) {
      // the mapping outlives the channel, and the file once a rank removes it
      return ch.map(
          writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, 0, FILE_BYTES);
    }
  }

  /** Asks every rank to stop; any thread, any time, idempotent. */
  void request() {
    WORD.setVolatile(own, W_REQUEST, 1L);
  }

  /** Whether any rank taking part asked to stop. */
  boolean requested() {
    for (ByteBuffer w : words) {
      if (w != null && (long) WORD.getVolatile(w, W_REQUEST) != 0) return true;
    }
    return false;
  }

  /**
   * At a batch boundary of the rank's dispatcher, {@code launched} collectives launched and
   * completed: the number of collectives to have launched once the next batch is enqueued (at most
   * {@code launched + batch}), or {@link #STOP} once every rank agreed to stop after {@code
   * launched}. Blocks while this rank has declared and a peer has not, with nothing to follow.
   *
   * @throws NoAgreementException a peer stayed {@code RUNNING} with nothing new for the timeout, or
   *     its process is gone
   */
  long nextBatchEnd(long launched, int batch) throws InterruptedException {
    if (!declared) {
      if (!requested()) {
        WORD.setVolatile(own, W_LAUNCHED, launched + batch);
        return launched + batch;
      }
      WORD.setVolatile(own, W_LAUNCHED, launched);
      WORD.setVolatile(own, W_STATE, DECLARED);
      declared = true;
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    long nextGoneCheck = 0;
    long[] state = new long[words.length];
    while (true) {
      // the states before the LAUNCHED words: a rank seen DECLARED has its final LAUNCHED
      List<Integer> running = new ArrayList<>();
      for (int q = 0; q < words.length; q++) {
        if (words[q] == null || q == rank) continue;
        state[q] = (long) WORD.getVolatile(words[q], W_STATE);
        if (state[q] == RUNNING) running.add(q);
      }
      long most = launched;
      for (int q = 0; q < words.length; q++) {
        if (words[q] == null || q == rank || state[q] == LEFT) continue;
        most = Math.max(most, (long) WORD.getVolatile(words[q], W_LAUNCHED));
      }
      if (most > launched) {
        long end = Math.min(most, launched + batch);
        WORD.setVolatile(own, W_LAUNCHED, end);
        return end;
      }
      if (running.isEmpty()) {
        agreedAt = launched;
        return STOP;
      }
      long now = System.nanoTime();
      if (now >= nextGoneCheck) { // a look at a process costs a system call: not every poll
        nextGoneCheck = now + GONE_CHECK_NANOS;
        for (int q : running) {
          if (gone.test(q)) throw noAgreement(q, "its process is gone", launched);
        }
      }
      if (now > deadline) {
        throw noAgreement(
            running.get(0),
            "it neither agreed nor launched more within " + timeout.toSeconds() + " s",
            launched);
      }
      LockSupport.parkNanos(POLL_NANOS);
      if (Thread.interrupted()) throw new InterruptedException();
    }
  }

  private NoAgreementException noAgreement(int q, String why, long launched) {
    return new NoAgreementException(
        "rank "
            + rank
            + " asked to stop after collective "
            + launched
            + " but rank "
            + q
            + " did not agree: "
            + why);
  }

  /** This rank stops without an agreement (failure, injected death): peers stop waiting on it. */
  void leave() {
    if (agreedAt < 0) WORD.setVolatile(own, W_STATE, LEFT);
  }

  /** The collective every rank stopped after, once agreed; -1 before. */
  long agreedAt() {
    return agreedAt;
  }

  /** Removes rank {@code rank}'s file, when it leaves; the peers' mappings stay valid. */
  static void clean(Path dir, int rank) {
    try {
      Files.deleteIfExists(file(dir, rank));
    } catch (IOException ignored) {
      // best effort: create() replaces a stale file
    }
  }
}
