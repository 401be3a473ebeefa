package io.collscope.cuda;

/**
 * One rank of the fused FP8 GEMM + all-reduce, for Nsight Compute: with a world of one the kernel
 * runs its GEMM, its epilogue's local half (the reduce of its own partial, the BF16 store) and
 * nothing over NVLink, so `ncu` can replay it alone. (Two ranks under `ncu` serialize: each
 * rank's kernel then waits for a peer that `ncu` holds back, past its budget.) The dispatcher
 * has no route for one rank, so this opens the program directly, with the raster group the
 * dispatcher would choose for the shape at two ranks.
 *
 * <p>A dev tool for issue 15 (dev/gpu-bisect/run-gemm-ncu.sh builds it against the carry and runs
 * it under `ncu`); not part of any module. Checks its output rows against the host reference
 * first, so a profile is never of a broken kernel.
 *
 * <p>Usage: {@code java -cp LIB GemmArProfile MxNxK [calls] [throttled] [instrumented] [groupM]}
 * (groupM: the raster group, instead of the dispatcher's; for measuring the rule)
 */
public final class GemmArProfile {
  public static void main(String[] args) throws Exception {
    String[] mnk = (args.length > 0 ? args[0] : "16384x6144x4096").split("x");
    GemmAllReduce.Shape s =
        new GemmAllReduce.Shape(
            Integer.parseInt(mnk[0]), Integer.parseInt(mnk[1]), Integer.parseInt(mnk[2]));
    int calls = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    boolean throttled = args.length > 2 && Boolean.parseBoolean(args[2]);
    boolean instrumented = args.length > 3 && Boolean.parseBoolean(args[3]);
    int groupM =
        args.length > 4
            ? Integer.parseInt(args[4])
            : GemmArDispatch.lever(
                    new GemmArDispatch.Key(2, s.m(), s.n(), s.k(), GemmArDispatch.Capacity.FULL))
                .groupM();
    try (GemmAllReduce g =
        GemmAllReduce.open(1, s, groupM, GemmAllReduce.defaultDevices(1), 40, 2_000_000_000L)) {
      GemmArReference.Inputs[] in = {GemmArReference.random(s, 0, 7)};
      g.upload(0, in[0].a(), in[0].w(), in[0].sa(), in[0].sw());
      g.launch(throttled, instrumented);
      g.synchronize();
      if (g.abortedAt(0) != 0) throw new IllegalStateException("the call aborted");
      for (int row : new int[] {0, s.m() / 3, s.m() - 1}) {
        String bad = GemmArReference.check(s, in, row, g.outputRows(0, row, 1));
        if (bad != null) throw new IllegalStateException("row " + row + ": " + bad);
      }
      double us = g.timeCalls(throttled, instrumented, calls);
      System.out.printf(
          "one rank %s group %d grid %d %s%s: %.1f us per call, %.0f TFLOP/s (rows checked)%n",
          s,
          groupM,
          g.grid(),
          throttled ? "throttled" : "unthrottled",
          instrumented ? " instrumented" : "",
          us,
          2.0 * s.m() * s.n() * s.k() / (us * 1e-6) / 1e12);
    }
  }
}
