package io.collscope.emitter;

import io.collscope.collective.CollectiveBackend;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a collective backend and its reporter: every {@code interval} the reporter thread snapshots
 * each rank's counter block and sends it to the sink. On stop (duration elapsed, SIGTERM, or a
 * backend failure) the ranks finish their collective, a last snapshot is taken, and the sink is
 * flushed, so the final counters are never lost. A backend whose ranks agreed with other processes
 * to stop ({@link CollectiveBackend#stoppedAt()}: a peer's run ended first) ends the run too.
 */
public final class Emitter {

  private static final Logger LOG = LoggerFactory.getLogger(Emitter.class);

  /** What a run did. */
  public record Result(
      long published, long failedDeliveries, long tornSkips, Optional<Throwable> failure) {}

  private final CollectiveBackend backend;
  private final Reporter reporter;
  private final SnapshotSink sink;
  private final Duration interval;
  private final CountDownLatch stop = new CountDownLatch(1);
  private io.collscope.health.GpuHealthReporter health;

  public Emitter(
      CollectiveBackend backend, Identity identity, SnapshotSink sink, Duration interval) {
    this.backend = backend;
    this.sink = sink;
    this.interval = interval;
    this.reporter = new Reporter(backend, identity, sink);
  }

  /** After each interval's snapshots, publishes their ranks' GPU health (null: none). */
  public Emitter withHealth(io.collscope.health.GpuHealthReporter health) {
    this.health = health;
    return this;
  }

  /** Asks a running {@link #run} to finish (e.g. from a SIGTERM hook). */
  public void requestStop() {
    stop.countDown();
  }

  /**
   * Runs until {@code duration} elapses (null: until {@link #requestStop}), the backend fails, or
   * its ranks stopped on their own ({@link CollectiveBackend#stoppedAt()}).
   */
  public Result run(Duration duration) throws InterruptedException {
    ScheduledExecutorService reporterThread =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "collscope-reporter");
              t.setDaemon(true);
              return t;
            });
    long deadline = duration == null ? Long.MAX_VALUE : System.nanoTime() + duration.toNanos();
    backend.start();
    try {
      reporterThread.scheduleAtFixedRate(
          this::reportSafely, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
      while (System.nanoTime() < deadline
          && backend.failure().isEmpty()
          && backend.stoppedAt().isEmpty()) {
        long left = Math.min(deadline - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(100));
        if (stop.await(Math.max(left, 0), TimeUnit.NANOSECONDS)) {
          break;
        }
      }
    } finally {
      backend.stop();
      reporterThread.shutdown();
      reporterThread.awaitTermination(30, TimeUnit.SECONDS);
      // The ranks are stopped: one last read captures their final counters.
      reportSafely();
      sink.flush();
    }
    backend
        .failure()
        .ifPresent(t -> LOG.error("backend {} failed: {}", backend.name(), t.toString()));
    return new Result(reporter.published(), sink.failed(), reporter.tornSkips(), backend.failure());
  }

  private synchronized void reportSafely() {
    try {
      java.util.List<io.collscope.avro.CounterSnapshot> taken = reporter.reportOnce();
      if (health != null) health.publishFor(taken);
    } catch (RuntimeException e) {
      LOG.error("reporter: {}", e.toString(), e);
    }
  }
}
