package io.collscope.flink.attribution;

import io.collscope.avro.RankWindow;
import io.collscope.model.Phase;
import io.collscope.model.SampledCalls;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;

/**
 * One window's delay matrix over the present ranks, with its errors and tail shares, and the
 * collective's own cost.
 *
 * <p>Held sparsely. Row i has its listed cells (the present peers its rank window lists, by matrix
 * index, ascending) and one value for every other cell of the row, {@code otherCount[i]} of them: a
 * compact rank window ({@link RankWindow#getPeerIndex()}) gives every unlisted peer the same
 * values, so its row is its listed peers plus one weighted value. A dense window lists every peer
 * (no weighted value). Every statistic below is the one the dense matrix of the same cells gives —
 * quantiles over weighted values, column medians from a sorted array of the rows' common values
 * corrected by the few rows that list the column — at O(listed cells + ranks × log ranks) instead
 * of O(ranks²): a 1,024-rank window of 16 listed peers a row is 17,000 values, not a million cells.
 */
final class LatenessMatrix {
  final TreeMap<Integer, RankWindow> byRank = new TreeMap<>();
  final List<Integer> present = new ArrayList<>();
  final List<Integer> missing = new ArrayList<>();
  final List<Integer> unmeasured = new ArrayList<>();
  int n;
  int k;
  boolean lateness; // every row has per-peer lateness (else waits stand in, with no errors)
  RankWindow[] rows; // present ranks' windows, by matrix index
  int[] column; // by rank: matrix index, -1 when not in the matrix
  int[][] rowIndex; // by matrix index: the window's peer_index (ranks), null when dense
  int[][] listed; // row i's listed cells: present columns, ascending, not i
  int[] otherCount; // row i's cells that are not listed (present columns but i)
  boolean[] hasTail; // row i has tail shares
  Cells mean; // lateness means (per-peer waits without lateness)
  Cells se; // their standard errors (0 where unknown)
  Cells tail; // tail shares (0 in rows without)
  Cells lastShare; // share of the row rank's collectives the column's peer gated
  int[][] listers; // column j: the rows that list it, ascending
  int[][] listerAt; // ... and where in their row
  double cost;
  int costRow = -1; // the row whose rank paid the collective's own cost
  long bytesPerCall;
  long minCalls;

  static LatenessMatrix of(List<RankWindow> windows) {
    LatenessMatrix x = new LatenessMatrix();
    for (RankWindow w : windows) {
      x.n = Math.max(x.n, w.getWorldSize());
      x.byRank.put(w.getRank(), w);
    }
    x.column = new int[x.n];
    for (int r = 0; r < x.n; r++) {
      RankWindow w = x.byRank.get(r);
      x.column[r] = -1;
      if (w != null && w.getCalls() > 0 && w.getPeerWaitMeanUs().size() == entries(w, x.n)) {
        // Calls but no sampled call: nothing was measured, and zeros would read as "on time".
        if (SampledCalls.of(w) > 0) {
          x.column[r] = x.present.size();
          x.present.add(r);
        } else {
          x.unmeasured.add(r);
        }
      } else {
        x.missing.add(r);
      }
    }
    x.k = x.present.size();
    x.lateness = x.k > 0;
    for (int r : x.present) {
      RankWindow w = x.byRank.get(r);
      x.lateness &= w.getPeerLateMeanUs().size() == entries(w, x.n) && entries(w, x.n) > 0;
    }
    int k = x.k;
    x.rows = new RankWindow[k];
    x.rowIndex = new int[k][];
    x.listed = new int[k][];
    x.otherCount = new int[k];
    x.hasTail = new boolean[k];
    x.mean = new Cells(k);
    x.se = new Cells(k);
    x.tail = new Cells(k);
    x.lastShare = new Cells(k);
    int[] listerCount = new int[k];
    for (int i = 0; i < k; i++) x.readRow(i, listerCount);
    x.listers = new int[k][];
    x.listerAt = new int[k][];
    for (int j = 0; j < k; j++) {
      x.listers[j] = new int[listerCount[j]];
      x.listerAt[j] = new int[listerCount[j]];
    }
    int[] fill = new int[k];
    for (int i = 0; i < k; i++) {
      for (int c = 0; c < x.listed[i].length; c++) {
        int j = x.listed[i][c];
        x.listers[j][fill[j]] = i;
        x.listerAt[j][fill[j]++] = c;
      }
    }
    x.cost = Double.MAX_VALUE;
    long calls = 0;
    long bytes = 0;
    x.minCalls = Long.MAX_VALUE;
    for (int r : x.present) {
      RankWindow w = x.byRank.get(r);
      double total = 0;
      for (Phase p : Phase.values()) total += meanUs(w, p);
      if (total < x.cost) x.costRow = x.column[r];
      x.cost = Math.min(x.cost, total);
      calls += w.getCalls() - w.getTimeouts();
      bytes += w.getBytes();
      // the sample, not the calls: confidence grows with what was measured
      x.minCalls = Math.min(x.minCalls, SampledCalls.of(w));
    }
    if (x.k == 0) {
      x.cost = 0;
      x.minCalls = 0;
    }
    x.bytesPerCall = calls > 0 ? Math.round((double) bytes / calls) : 0;
    return x;
  }

  /** Row i of the matrix from its rank window: its listed cells and its others' value. */
  private void readRow(int i, int[] listerCount) {
    RankWindow w = byRank.get(present.get(i));
    rows[i] = w;
    rowIndex[i] = peerIndex(w);
    int entries = entries(w, n);
    List<Double> lateOf = lateness ? w.getPeerLateMeanUs() : w.getPeerWaitMeanUs();
    List<Double> seOf =
        lateness && orEmpty(w.getPeerLateSeUs()).size() == entries
            ? orEmpty(w.getPeerLateSeUs())
            : null;
    hasTail[i] = orEmpty(w.getPeerLateTailShare()).size() == entries && entries > 0;
    List<Double> tailOf = hasTail[i] ? orEmpty(w.getPeerLateTailShare()) : null;
    List<Long> lastOf = w.getPeerArrivedLast();
    int[] cols = new int[entries];
    double[] m = new double[entries];
    double[] s = new double[entries];
    double[] tl = new double[entries];
    double[] g = new double[entries];
    int c = 0;
    for (int e = 0; e < entries; e++) {
      int p = rowIndex[i] == null ? e : rowIndex[i][e];
      int j = p < n ? column[p] : -1;
      if (j < 0 || j == i) continue;
      cols[c] = j;
      m[c] = lateOf.get(e);
      s[c] = seOf == null ? 0 : seOf.get(e);
      tl[c] = tailOf == null ? 0 : tailOf.get(e);
      g[c] = (double) lastOf.get(e) / accounted(w);
      listerCount[j]++;
      c++;
    }
    listed[i] = Arrays.copyOf(cols, c);
    mean.listed[i] = Arrays.copyOf(m, c);
    se.listed[i] = Arrays.copyOf(s, c);
    tail.listed[i] = Arrays.copyOf(tl, c);
    lastShare.listed[i] = Arrays.copyOf(g, c);
    otherCount[i] = k - 1 - c;
    mean.other[i] = lateness ? w.getOthersLateMeanUs() : w.getOthersWaitMeanUs();
    se.other[i] = seOf == null ? 0 : w.getOthersLateSeUs();
    tail.other[i] = tailOf == null ? 0 : w.getOthersLateTailShare();
    lastShare.other[i] = (double) w.getOthersArrivedLast() / accounted(w);
  }

  /** A rank window's peer_index, null when it is dense. */
  static int[] peerIndex(RankWindow w) {
    List<Integer> index = w.getPeerIndex();
    if (index == null || index.isEmpty()) return null;
    int[] a = new int[index.size()];
    for (int i = 0; i < a.length; i++) a[i] = index.get(i);
    return a;
  }

  /** How many entries a rank window's per-peer arrays must have: world size, or its listed. */
  static int entries(RankWindow w, int n) {
    List<Integer> index = w.getPeerIndex();
    return index == null || index.isEmpty() ? n : index.size();
  }

  /** The entry of rank p in row i's per-peer arrays, or -1 when p is not listed. */
  int entryOf(int i, int p) {
    if (rowIndex[i] == null) return p;
    int at = Arrays.binarySearch(rowIndex[i], p);
    return at >= 0 ? at : -1;
  }

  /** Lateness of rank p as row i saw it (the per-peer wait without lateness), any rank p. */
  double late(int i, int p) {
    int at = entryOf(i, p);
    RankWindow w = rows[i];
    if (at < 0) return mean.other[i];
    return (lateness ? w.getPeerLateMeanUs() : w.getPeerWaitMeanUs()).get(at);
  }

  /** The standard error of {@link #late}, 0 where unknown. */
  double lateSe(int i, int p) {
    RankWindow w = rows[i];
    if (!lateness || orEmpty(w.getPeerLateSeUs()).isEmpty()) return 0;
    int at = entryOf(i, p);
    return at < 0 ? w.getOthersLateSeUs() : orEmpty(w.getPeerLateSeUs()).get(at);
  }

  /** Where column j is among row i's listed cells, or -1 when the row's common value holds. */
  int cellOf(int i, int j) {
    int c = Arrays.binarySearch(listed[i], j);
    return c >= 0 ? c : -1;
  }

  /** A quantity's value at cell (i, j). */
  double at(Cells q, int i, int j) {
    int c = cellOf(i, j);
    return c >= 0 ? q.listed[i][c] : q.other[i];
  }

  /** Row i's cells of q as a weighted multiset. */
  Weighted row(Cells q, int i) {
    Weighted v = new Weighted();
    for (double d : q.listed[i]) v.add(d, 1);
    v.add(q.other[i], otherCount[i]);
    return v;
  }

  /**
   * Column sums of one quantity over the given rows (each column without its own row): the sum of
   * the rows' common values, less the own row's, corrected by the rows that list the column.
   */
  double[] columnSums(Cells q, boolean[] rowsIn) {
    double total = 0;
    for (int i = 0; i < k; i++) if (rowsIn[i] && otherCount[i] > 0) total += q.other[i];
    double[] out = new double[k];
    Arrays.fill(out, total);
    for (int i = 0; i < k; i++) {
      if (!rowsIn[i]) continue;
      double common = otherCount[i] > 0 ? q.other[i] : 0;
      out[i] -= common;
      double[] v = q.listed[i];
      for (int c = 0; c < v.length; c++) out[listed[i][c]] += v[c] - common;
    }
    return out;
  }

  /** The rows of each column among {@code rowsIn} (its own excluded). */
  double[] columnCounts(boolean[] rowsIn) {
    int in = 0;
    for (boolean r : rowsIn) if (r) in++;
    double[] count = new double[k];
    for (int j = 0; j < k; j++) count[j] = in - (rowsIn[j] ? 1 : 0);
    return count;
  }

  /** The median of f over the present ranks but one. */
  double median(ToDoubleFunction<RankWindow> f, int exceptRank) {
    List<Double> v = new ArrayList<>();
    for (int r : present) if (r != exceptRank) v.add(f.applyAsDouble(byRank.get(r)));
    return RobustStatistics.median(v);
  }

  /** Confidence scale: 1 once every present rank counted enough calls. */
  double callsFactor(Thresholds t) {
    return Math.min(1.0, (double) minCalls / t.minCalls());
  }

  /**
   * Whether every present rank sampled at least half the median rank's collectives: a window a rank
   * joined or left part-way describes less than the whole communicator's cost.
   */
  boolean evenCalls() {
    List<Double> v = new ArrayList<>();
    for (RankWindow w : rows) v.add((double) SampledCalls.of(w));
    double med = RobustStatistics.median(v);
    for (double c : v) if (c < med / 2) return false;
    return true;
  }

  /** A phase's mean microseconds per collective in a rank window. */
  static double meanUs(RankWindow w, Phase p) {
    return (Double) w.get(p.meanUsField());
  }

  /**
   * The divisor of w's arrived-last shares: the collectives its accounted counts stand for, at
   * least 1 (a window with no sampled collective has no arrivals counted: every share 0).
   */
  static double accounted(RankWindow w) {
    return Math.max(1, SampledCalls.accounted(w));
  }

  /** A list field of a record built without its builder (tests, older code) may be null. */
  static <T> List<T> orEmpty(List<T> list) {
    return list == null ? List.of() : list;
  }
}
