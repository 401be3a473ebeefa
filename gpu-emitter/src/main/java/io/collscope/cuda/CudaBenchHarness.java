package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import java.util.List;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstreamCaptureMode;

/**
 * Drives a {@link CudaCollective}'s ranks from the calling thread instead of its dispatcher, for
 * benchmarks and GPU tests: collectives in a loop, CUDA graphs replayed without the host, another
 * publication rate, and checks of the output. Not while the backend is {@link
 * CudaCollective#start() started}.
 */
public final class CudaBenchHarness {

  private final CudaCollective backend;
  private final RankSet ranks;
  private final Launcher launcher;
  private final Dispatcher dispatcher;

  public CudaBenchHarness(CudaCollective backend) {
    this.backend = backend;
    this.ranks = backend.ranks();
    this.launcher = backend.launcher();
    this.dispatcher = backend.dispatcher();
  }

  /** Runs {@code count} collectives on every rank of this process, then waits for them. */
  public void runCollectives(int count, boolean instrumented) {
    List<RankBuffers> local = ranks.local();
    for (int i = 0; i < count; i++) {
      for (RankBuffers r : local) {
        r.device().makeCurrent();
        launcher.collective(r, instrumented);
      }
    }
    synchronizeAll();
  }

  private void synchronizeAll() {
    for (RankBuffers r : ranks.local()) {
      r.device().makeCurrent();
      cuStreamSynchronize(r.stream());
      dispatcher.checkAbort(r);
    }
  }

  /**
   * Changes how often {@code osar_publish} follows a collective; applies to launches and graph
   * captures from now on (benchmarks compare rates).
   */
  public void setPublishEvery(int k) {
    for (RankBuffers r : ranks.local()) { // what ran under the old interval is published first
      r.device().makeCurrent();
      launcher.publishPending(r);
    }
    launcher.setPublishEvery(k);
  }

  public Graphs captureGraphs(int collectives, boolean instrumented) {
    return new Graphs(collectives, instrumented);
  }

  /**
   * Waits for rank {@code rank}, copies its output back and checks it against the host sum of the
   * collective it belongs to, the rank's last completed one.
   */
  public void verifyOutput(int rank) {
    RankBuffers r = ranks.local(rank);
    r.device().makeCurrent();
    cuStreamSynchronize(r.stream());
    dispatcher.verifyOutput(r);
  }

  /** The clock64 rate of rank {@code rank}'s GPU, as its counter block reports it. */
  public long cyclesPerSecond(int rank) {
    return ranks.get(rank).device().cyclesPerSecond;
  }

  /**
   * {@code collectives} launches per rank enqueued on the streams by the host, as the dispatcher
   * enqueues them (the host takes the sample: {@link Launcher#collective}), publishing at the rate
   * in force when they are launched; timed as {@link Graphs} are. Host-bound where a collective
   * takes less than the launches of every rank (small sizes).
   */
  public Streamed streamed(int collectives, boolean instrumented) {
    return new Streamed(collectives, instrumented);
  }

  /**
   * A fixed batch of collectives per rank that can be enqueued again and again, with a start and an
   * end event on every rank's stream to time them on the device.
   */
  public abstract sealed class Replays implements AutoCloseable permits Graphs, Streamed {
    final CUevent[] starts = new CUevent[backend.worldSize()];
    final CUevent[] ends = new CUevent[backend.worldSize()];
    private final int collectives;

    private Replays(int collectives) {
      this.collectives = collectives;
    }

    /** Collectives per rank in one replay. */
    public int collectives() {
      return collectives;
    }

    /** Replays every rank's batch {@code times} times and waits for them. */
    public void replay(int times) {
      launch(times, false);
      synchronizeAll();
    }

    /**
     * Replays every rank's batch {@code times} times, waits for them, and returns the device time
     * they took in microseconds: the longest, over this process's ranks, from an event recorded on
     * the rank's stream right before its first replay to one recorded after its last.
     *
     * <p>Each rank is timed on its own stream because events compare only within one GPU ({@code
     * cuEventElapsedTime} refuses a pair from two contexts), so with one rank per GPU there is no
     * common start event. The longest interval is the round as the devices saw it: every collective
     * waits for all ranks, so the ranks end together, and the rank launched first, whose interval
     * is the longest, also waits for the ranks the host launches after it. That launch skew
     * (microseconds, once per call) is thus counted, never hidden, and spread over all the replayed
     * collectives; the shortest interval would leave it out and undercount the ranks launched
     * first.
     */
    public double replayTimed(int times) {
      if (times < 1) throw new IllegalArgumentException("times must be >= 1: " + times);
      launch(times, true);
      synchronizeAll();
      float[] ms = new float[1];
      double longest = 0;
      for (RankBuffers r : ranks.local()) {
        r.device().makeCurrent();
        cuEventElapsedTime(ms, starts[r.rank()], ends[r.rank()]);
        longest = Math.max(longest, ms[0]);
      }
      return longest * 1000;
    }

    /**
     * Enqueues {@code times} replays on every rank; {@code timed}: each rank's start event
     * immediately before its first launch, its end event after its last.
     */
    abstract void launch(int times, boolean timed);

    /** Creates the timing events of every rank of this process. */
    final void createEvents() {
      for (RankBuffers r : ranks.local()) {
        r.device().makeCurrent();
        starts[r.rank()] = timingEvent();
        ends[r.rank()] = timingEvent();
      }
    }

    /**
     * A timing event in the current context, kept only once created, so {@link #close()} never
     * destroys one that does not exist.
     */
    static CUevent timingEvent() {
      CUevent e = new CUevent();
      cuEventCreate(e, CUevent_flags.CU_EVENT_DEFAULT);
      return e;
    }

    @Override
    public void close() {
      for (int i = 0; i < starts.length; i++) {
        if (starts[i] != null) cuEventDestroy(starts[i]);
        if (ends[i] != null) cuEventDestroy(ends[i]);
        starts[i] = null;
        ends[i] = null;
      }
    }
  }

  /**
   * A CUDA graph per rank holding {@code collectives} launches, replayable without the host. A
   * graph fixes each node's kernel at capture, so its instrumented collectives take the sample on
   * the device ({@link Launcher#capturedCollective}); it ends with a publication when its last
   * collectives would otherwise have none before the next replay ({@link Launcher#publishPending}).
   */
  public final class Graphs extends Replays {
    private final CUgraph[] graphs = new CUgraph[backend.worldSize()];
    private final CUgraphExec[] execs = new CUgraphExec[backend.worldSize()];

    private Graphs(int collectives, boolean instrumented) {
      super(collectives);
      try {
        for (RankBuffers r : ranks.local()) {
          r.device().makeCurrent();
          cuStreamSynchronize(r.stream());
          graphs[r.rank()] = new CUgraph();
          cuStreamBeginCapture(r.stream(), CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
          for (int i = 0; i < collectives; i++) launcher.capturedCollective(r, instrumented);
          launcher.publishPending(r);
          cuStreamEndCapture(r.stream(), graphs[r.rank()]);
          execs[r.rank()] = new CUgraphExec();
          cuGraphInstantiate(execs[r.rank()], graphs[r.rank()], 0);
        }
        createEvents();
      } catch (RuntimeException e) {
        close();
        throw e;
      }
    }

    /** Round-robin over ranks, a replay of every rank before the next, so no rank runs ahead. */
    @Override
    void launch(int times, boolean timed) {
      List<RankBuffers> local = ranks.local();
      for (int t = 0; t < times; t++) {
        for (RankBuffers r : local) {
          r.device().makeCurrent();
          if (timed && t == 0) cuEventRecord(starts[r.rank()], r.stream());
          cuGraphLaunch(execs[r.rank()], r.stream());
          r.enqueuedByGraph(collectives());
          if (timed && t == times - 1) cuEventRecord(ends[r.rank()], r.stream());
        }
      }
    }

    @Override
    public void close() {
      for (int i = 0; i < execs.length; i++) {
        if (execs[i] != null) cuGraphExecDestroy(execs[i]);
        if (graphs[i] != null) cuGraphDestroy(graphs[i]);
        execs[i] = null;
        graphs[i] = null;
      }
      super.close();
    }
  }

  /** Collectives launched by the host on the streams ({@link #streamed}). */
  public final class Streamed extends Replays {
    private final boolean instrumented;

    private Streamed(int collectives, boolean instrumented) {
      super(collectives);
      this.instrumented = instrumented;
      createEvents();
    }

    /** Round-robin over ranks a collective at a time, as the dispatcher launches them. */
    @Override
    void launch(int times, boolean timed) {
      List<RankBuffers> local = ranks.local();
      for (int t = 0; t < times; t++) {
        for (int i = 0; i < collectives(); i++) {
          for (RankBuffers r : local) {
            r.device().makeCurrent();
            if (timed && t == 0 && i == 0) cuEventRecord(starts[r.rank()], r.stream());
            launcher.collective(r, instrumented);
            if (timed && t == times - 1 && i == collectives() - 1) {
              cuEventRecord(ends[r.rank()], r.stream());
            }
          }
        }
      }
    }
  }
}
