package io.collscope.cuda;

import io.collscope.collective.CollectiveBackend;
import io.collscope.counters.CounterBlock;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The fused FP8 GEMM + all-reduce as an emitter backend: one thread launches calls of one program
 * on every rank back to back and publishes the counters every {@link #publishEvery} calls; the
 * reporter reads the blocks as it reads the one-shot all-reduce's. The first call's output is
 * checked against the host reference on every rank (sampled rows): a wrong result stops the run.
 */
public final class GemmArCollective implements CollectiveBackend {

  private final GemmAllReduce g;
  private final boolean throttled;
  private final int publishEvery;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running;
  private Thread thread;
  private boolean closed;

  /**
   * @param throttled the program; {@code null}: the one {@link GemmArDispatch} routes the call to
   */
  public GemmArCollective(
      int world, GemmAllReduce.Shape shape, Boolean throttled, int buckets, long budgetNanos) {
    GemmArDispatch.Lever l =
        GemmArDispatch.route(
            new GemmArDispatch.Key(
                world, shape.m(), shape.n(), shape.k(), GemmArDispatch.Capacity.FULL));
    this.throttled = throttled != null ? throttled : l.throttled();
    this.g =
        GemmAllReduce.open(
            world, shape, l.groupM(), GemmAllReduce.defaultDevices(world), buckets, budgetNanos);
    // about every 50 ms of GEMM at ~300 TFLOP/s: a handful of publications per reporter interval
    double callNs = 2.0 * world * shape.m() * shape.n() * (double) shape.k() / 300e3;
    this.publishEvery = (int) Math.max(1, Math.min(64, 50e6 / Math.max(1, callNs)));
    try {
      GemmArReference.Inputs[] in = new GemmArReference.Inputs[world];
      for (int r = 0; r < world; r++) {
        in[r] = GemmArReference.random(shape, r, 1);
        g.upload(r, in[r].a(), in[r].w(), in[r].sa(), in[r].sw());
      }
      g.launch(this.throttled, true);
      g.synchronize();
      int last = shape.m() - 1;
      for (int r = 0; r < world; r++) {
        for (int row : new int[] {0, shape.m() / 2 + 1, last}) {
          String bad = GemmArReference.check(shape, in, row, g.outputRows(r, row, 1));
          if (bad != null) throw new IllegalStateException("rank " + r + ": " + bad);
        }
      }
      g.publish();
      g.synchronize();
    } catch (RuntimeException | Error e) {
      g.close();
      throw e;
    }
  }

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public String collective() {
    return GemmAllReduce.collectiveName(throttled);
  }

  @Override
  public int worldSize() {
    return g.worldSize();
  }

  @Override
  public synchronized void start() {
    if (closed || thread != null) return;
    running = true;
    thread = new Thread(this::loop, "collscope-gemm-ar");
    thread.setDaemon(true);
    thread.start();
  }

  private void loop() {
    try {
      while (running) {
        for (int i = 0; i < publishEvery; i++) g.launch(throttled, true);
        g.publish();
        g.synchronize();
        for (int r = 0; r < g.worldSize(); r++) {
          long at = g.abortedAt(r);
          if (at != 0) throw new IllegalStateException("rank " + r + " aborted call " + at);
        }
      }
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
    }
  }

  @Override
  public synchronized void stop() throws InterruptedException {
    running = false;
    if (thread != null) {
      thread.join();
      thread = null;
    }
  }

  @Override
  public CounterBlock block(int rank) {
    return g.block(rank);
  }

  @Override
  public boolean reports(int rank) {
    return true;
  }

  @Override
  public String device(int rank) {
    return g.device(rank);
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure.get());
  }

  @Override
  public synchronized void close() throws InterruptedException {
    if (closed) return;
    stop();
    closed = true;
    g.close();
  }
}
