package io.collscope.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.RankWindow;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.flink.history.ParquetFormat;
import io.collscope.history.HistoryDb;
import io.collscope.history.HistoryFixtures;
import io.collscope.history.ParquetHistoryReader;
import io.collscope.model.CompactPeers;
import io.collscope.report.Report.DelayMatrix;
import io.collscope.report.Report.Detail;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.io.LocalOutputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The delay matrix of compact rank windows (RankWindow v6, as the job writes them for large
 * communicators: a few listed peers, every other one at the others' value) is that of the dense
 * windows they stand for: the same generated history, its rank windows once made compact and once
 * made compact and expanded again, reported alike.
 */
class CompactWindowsReportTest {

  static final Instant END = Instant.parse("2026-11-30T06:00:00Z");
  static final Duration SPAN = Duration.ofHours(1);

  @TempDir Path dir;

  @Test
  void compactRankWindowsGiveTheDelayMatrixOfTheirDenseExpansion() throws Exception {
    Path generated = dir.resolve("generated");
    HistoryFixtures.generate(generated, 32, SPAN, END);
    Path compact = copy(generated, dir.resolve("compact"), CompactWindowsReportTest::compact);
    Path dense = copy(generated, dir.resolve("dense"), w -> CompactPeers.expand(compact(w)));

    List<Detail> a = report(compact).details();
    List<Detail> b = report(dense).details();
    assertThat(a).hasSameSizeAs(b).isNotEmpty();
    int matrices = 0;
    for (int i = 0; i < a.size(); i++) {
      assertThat(a.get(i).key()).isEqualTo(b.get(i).key());
      List<DelayMatrix> ma = a.get(i).matrices();
      List<DelayMatrix> mb = b.get(i).matrices();
      assertThat(ma).hasSameSizeAs(mb);
      for (int m = 0; m < ma.size(); m++) {
        assertThat(ma.get(m).values()).as(a.get(i).key()).containsExactly(mb.get(m).values());
        matrices++;
      }
    }
    assertThat(matrices).isPositive();
    // The slow rank is listed by every row: its column is still the hottest.
    DelayMatrix tp003 =
        a.stream()
            .filter(d -> d.key().equals("gen/train/tp003"))
            .findFirst()
            .orElseThrow()
            .matrices()
            .get(0);
    assertThat(tp003.findings()).startsWith("SLOW_RANK(5,");
    assertThat(tp003.values()[0 * 8 + 5]).isGreaterThan(tp003.values()[0 * 8 + 4]);
  }

  static Report report(Path history) throws Exception {
    try (HistoryDb db = HistoryDb.open(history)) {
      return ReportQuery.run(db, new ReportQuery.Options(END.minus(SPAN), END, null, 6), END);
    }
  }

  /** The history at {@code from} copied to {@code to}, each rank window mapped. */
  static Path copy(Path from, Path to, UnaryOperator<RankWindow> map) throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.walk(from)) {
      files = s.filter(Files::isRegularFile).sorted().toList();
    }
    for (Path f : files) {
      Path target = to.resolve(from.relativize(f));
      Files.createDirectories(target.getParent());
      if (!from.relativize(f).startsWith(HistoryLayout.RANK_WINDOWS)
          || !f.getFileName().toString().endsWith(".parquet")) {
        Files.copy(f, target);
        continue;
      }
      List<RankWindow> windows = new ArrayList<>();
      ParquetHistoryReader.forEach(f, RankWindow.class, w -> windows.add(map.apply(w)));
      try (ParquetWriter<RankWindow> out =
          ParquetFormat.writer(RankWindow.class, new LocalOutputFile(target))) {
        for (RankWindow w : windows) out.write(w);
      }
    }
    return to;
  }

  /** Lists the rank itself and its three latest peers; the others at their mean. */
  static RankWindow compact(RankWindow w) {
    int n = w.getWorldSize();
    List<Double> late = w.getPeerLateMeanUs();
    List<Integer> listed =
        Stream.concat(
                Stream.of(w.getRank()),
                IntStream.range(0, n)
                    .filter(p -> p != w.getRank())
                    .boxed()
                    .sorted(Comparator.comparingDouble(p -> -late.get(p)))
                    .limit(3))
            .sorted()
            .toList();
    RankWindow c = RankWindow.newBuilder(w).build();
    c.setPeerIndex(new ArrayList<>(listed));
    c.setPeerWaitMeanUs(listed.stream().map(p -> w.getPeerWaitMeanUs().get(p)).toList());
    c.setPeerLateMeanUs(listed.stream().map(late::get).toList());
    c.setPeerLateP99Us(listed.stream().map(p -> w.getPeerLateP99Us().get(p)).toList());
    c.setPeerArrivedLast(listed.stream().map(p -> w.getPeerArrivedLast().get(p)).toList());
    List<Integer> others = IntStream.range(0, n).filter(p -> !listed.contains(p)).boxed().toList();
    c.setOthersWaitMeanUs(mean(others, w.getPeerWaitMeanUs()));
    c.setOthersLateMeanUs(mean(others, late));
    c.setOthersLateP99Us(mean(others, w.getPeerLateP99Us()));
    c.setOthersArrivedLast(0L);
    return c;
  }

  static double mean(List<Integer> peers, List<Double> values) {
    return peers.stream().mapToDouble(values::get).average().orElse(0);
  }
}
