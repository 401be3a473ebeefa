package io.collscope.flink.attribution;

/**
 * One quantity over a {@link LatenessMatrix}'s cells: row by row its listed cells, and the others'.
 */
final class Cells {
  final double[][] listed;
  final double[] other;

  Cells(int k) {
    listed = new double[k][];
    other = new double[k];
  }

  /** The same shape, each value mapped with its row. */
  Cells map(RowFunction f) {
    Cells c = new Cells(other.length);
    for (int i = 0; i < other.length; i++) {
      c.listed[i] = new double[listed[i].length];
      for (int e = 0; e < listed[i].length; e++) c.listed[i][e] = f.apply(i, listed[i][e]);
      c.other[i] = f.apply(i, other[i]);
    }
    return c;
  }

  /** A function of a cell's value and its row (the value less the row's effect, say). */
  @FunctionalInterface
  interface RowFunction {
    double apply(int row, double value);
  }
}
