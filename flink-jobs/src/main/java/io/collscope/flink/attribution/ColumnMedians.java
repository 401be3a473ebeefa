package io.collscope.flink.attribution;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The medians of one quantity's columns over a set of rows: one sorted array of the rows' common
 * values, corrected per column by the rows that list it.
 */
final class ColumnMedians {
  final LatenessMatrix x;
  final Cells q;
  final boolean[] excluded;
  final double[] common; // ascending
  final int[] position; // by row: where its common value is in it, -1 when it has none
  int included; // rows

  ColumnMedians(LatenessMatrix x, Cells q, boolean[] excluded) {
    this.x = x;
    this.q = q;
    this.excluded = excluded;
    for (boolean s : excluded) if (!s) included++;
    List<Integer> rowsWith = new ArrayList<>();
    for (int r = 0; r < x.k; r++) if (!excluded[r] && x.otherCount[r] > 0) rowsWith.add(r);
    Integer[] order = rowsWith.toArray(Integer[]::new);
    Arrays.sort(order, Comparator.comparingDouble(r -> q.other[r]));
    common = new double[order.length];
    position = new int[x.k];
    Arrays.fill(position, -1);
    for (int p = 0; p < order.length; p++) {
      common[p] = q.other[order[p]];
      position[order[p]] = p;
    }
  }

  ColumnMedian of(int j) {
    List<Integer> removed = new ArrayList<>();
    List<Double> added = new ArrayList<>();
    if (position[j] >= 0) removed.add(position[j]);
    int[] listers = x.listers[j];
    int[] at = x.listerAt[j];
    int[] addedRow = new int[listers.length];
    int na = 0;
    for (int a = 0; a < listers.length; a++) {
      int r = listers[a];
      if (excluded[r]) continue;
      if (position[r] >= 0) removed.add(position[r]);
      added.add(q.listed[r][at[a]]);
      addedRow[na++] = r;
    }
    return new ColumnMedian(this, j, removed, added, Arrays.copyOf(addedRow, na));
  }

  /** One column of {@link ColumnMedians}: its values over the included rows but its own. */
  static final class ColumnMedian {
    private final ColumnMedians all;
    private final int j;
    private final List<Integer> removed;
    private final List<Double> added;
    private final int[] addedRow;

    ColumnMedian(
        ColumnMedians all, int j, List<Integer> removed, List<Double> added, int[] addedRow) {
      this.all = all;
      this.j = j;
      this.removed = removed;
      this.added = added;
      this.addedRow = addedRow;
    }

    int size() {
      return all.included - (all.excluded[j] ? 0 : 1);
    }

    boolean holds(int i) {
      return i >= 0 && i != j && !all.excluded[i];
    }

    /** The median of the column's values without row i's (if it is one; -1: all of them). */
    double medianWithout(int i) {
      List<Integer> r = new ArrayList<>(removed);
      List<Double> a = new ArrayList<>(added);
      if (holds(i)) {
        int listedAt = -1;
        for (int q = 0; q < addedRow.length; q++) if (addedRow[q] == i) listedAt = q;
        if (listedAt >= 0) a.remove(listedAt);
        else r.add(all.position[i]);
      }
      CorrectedSorted c =
          new CorrectedSorted(
              all.common,
              r.stream().mapToInt(Integer::intValue).toArray(),
              a.stream().mapToDouble(Double::doubleValue).toArray());
      return c.size() == 0 ? 0 : c.median();
    }
  }
}
