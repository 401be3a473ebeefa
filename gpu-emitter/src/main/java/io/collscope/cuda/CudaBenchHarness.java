package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import java.util.List;
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

  /** A CUDA graph per rank holding {@code collectives} launches, replayable without the host. */
  public final class Graphs implements AutoCloseable {
    private final CUgraph[] graphs = new CUgraph[backend.worldSize()];
    private final CUgraphExec[] execs = new CUgraphExec[backend.worldSize()];

    private Graphs(int collectives, boolean instrumented) {
      try {
        for (RankBuffers r : ranks.local()) {
          r.device().makeCurrent();
          cuStreamSynchronize(r.stream());
          graphs[r.rank()] = new CUgraph();
          cuStreamBeginCapture(r.stream(), CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
          for (int i = 0; i < collectives; i++) launcher.collective(r, instrumented);
          cuStreamEndCapture(r.stream(), graphs[r.rank()]);
          execs[r.rank()] = new CUgraphExec();
          cuGraphInstantiate(execs[r.rank()], graphs[r.rank()], 0);
        }
      } catch (RuntimeException e) {
        close();
        throw e;
      }
    }

    /** Replays every rank's graph {@code times} times and waits for them. */
    public void replay(int times) {
      List<RankBuffers> local = ranks.local();
      for (int t = 0; t < times; t++) {
        for (RankBuffers r : local) {
          r.device().makeCurrent();
          cuGraphLaunch(execs[r.rank()], r.stream());
        }
      }
      synchronizeAll();
    }

    @Override
    public void close() {
      for (int i = 0; i < execs.length; i++) {
        if (execs[i] != null) cuGraphExecDestroy(execs[i]);
        if (graphs[i] != null) cuGraphDestroy(graphs[i]);
        execs[i] = null;
        graphs[i] = null;
      }
    }
  }
}
