package io.collscope.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.cli.Collscope;
import io.collscope.history.HistoryFixtures;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code collscope report} over a generated history, opened in a real headless Chromium with the
 * network closed: no console message and no page error, every chart drawn (each chart's container
 * is marked by ECharts' {@code finished} event), and a screenshot in {@code
 * target/report-it/report.png}. The same check, run on a page with a script error and a request to
 * the network, must fail: the check can see what it looks for.
 */
class ReportChromiumITCase {

  static final Instant END = Instant.parse("2026-11-30T06:00:00Z");

  /** What each communicator with a detail section draws. */
  static final List<String> DETAIL_CHARTS =
      List.of("latency", "culprits", "p99-by-rank", "delay-matrix", "phases");

  static final Path OUT = Path.of("target", "report-it");

  /** Charts of the page: a container's name and whether its chart rendered. */
  static final Pattern CHART =
      Pattern.compile("data-chart=\"([^\"]+)\" data-rendered=\"(true|false)\"");

  @TempDir static Path history;
  static Path page;
  static HeadlessChromium chromium;

  @BeforeAll
  static void generateAndReport() throws Exception {
    chromium = HeadlessChromium.find(); // fails, never skips, without a browser
    HistoryFixtures.generate(history, 16, Duration.ofHours(2), END);
    Files.createDirectories(OUT);
    page = OUT.resolve("report.html");
    StringWriter err = new StringWriter();
    int rc =
        Collscope.execute(
            new PrintWriter(new StringWriter(), true),
            new PrintWriter(err, true),
            "report",
            "--history",
            history.toString(),
            "--since",
            "2h",
            "--until",
            END.toString(),
            "--out",
            page.toString());
    assertThat(rc).as(err.toString()).isZero();
  }

  /** Why the loaded page is broken; empty when it is not. */
  static List<String> problems(HeadlessChromium.Loaded loaded) {
    List<String> problems = new ArrayList<>();
    for (String line : loaded.console()) problems.add("console: " + line);
    if (!"0".equals(loaded.bodyAttribute("data-errors"))) {
      problems.add("page errors: " + loaded.bodyAttribute("data-errors"));
    }
    if (!"true".equals(loaded.bodyAttribute("data-report-ready"))) {
      problems.add("the page's script did not finish");
    }
    Matcher m = CHART.matcher(loaded.dom());
    while (m.find()) {
      if (!m.group(2).equals("true")) problems.add("chart not rendered: " + m.group(1));
    }
    return problems;
  }

  static List<String> charts(HeadlessChromium.Loaded loaded) {
    List<String> names = new ArrayList<>();
    Matcher m = CHART.matcher(loaded.dom());
    while (m.find()) names.add(m.group(1));
    return names;
  }

  @Test
  void theReportOpensOfflineWithoutErrorsAndEveryChartRenders() throws Exception {
    HeadlessChromium.Loaded loaded = chromium.load(page);

    assertThat(problems(loaded)).isEmpty();
    List<String> charts = charts(loaded);
    List<String> expected = new ArrayList<>(List.of("overview"));
    // both communicators of the 16 ranks have findings: each has its section
    for (String comm : List.of("gen/train/tp000", "gen/train/tp001")) {
      for (String chart : DETAIL_CHARTS) expected.add(chart + ":" + comm);
    }
    assertThat(charts).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(loaded.bodyAttribute("data-charts")).isEqualTo(String.valueOf(expected.size()));
    assertThat(loaded.bodyAttribute("data-charts-rendered"))
        .isEqualTo(String.valueOf(expected.size()));

    int height = Integer.parseInt(loaded.bodyAttribute("data-height"));
    Path png = OUT.resolve("report.png");
    chromium.screenshot(page, png, Math.min(height, 12_000));
    assertThat(Files.size(png)).isGreaterThan(10_000);
  }

  /** A copy of the report with {@code html} added at the end of its body. */
  static Path withAddedAtEnd(String name, String html) throws Exception {
    String page = Files.readString(ReportChromiumITCase.page);
    int end = page.lastIndexOf("</body>");
    Path copy = OUT.resolve(name);
    Files.writeString(copy, page.substring(0, end) + html + page.substring(end));
    return copy;
  }

  @Test
  void everyChartsTooltipShowsWithoutError() throws Exception {
    // One tooltip per series of every chart, as a pointer over its middle point would show it.
    Path tips =
        withAddedAtEnd(
            "tooltips-report.html",
            """
            <script>
            var shown = 0;
            window.collscopeCharts.forEach(function (c) {
              c.getOption().series.forEach(function (s, i) {
                var n = (s.data || []).length;
                if (!n) return;
                c.dispatchAction({ type: 'showTip', seriesIndex: i, dataIndex: Math.floor(n / 2) });
                shown++;
              });
            });
            document.body.setAttribute('data-tips-shown', String(shown));
            </script>""");

    HeadlessChromium.Loaded loaded = chromium.load(tips);

    assertThat(problems(loaded)).isEmpty();
    assertThat(Integer.parseInt(loaded.bodyAttribute("data-tips-shown"))).isGreaterThan(20);
    assertThat(loaded.dom())
        .contains("waiting on") // the delay matrix's
        .contains("(rank ") // the latency chart's worst rank
        .contains("windows, excess up to"); // the culprit timeline's
  }

  @Test
  void theCheckSeesAScriptErrorAndARequestToTheNetwork() throws Exception {
    Path brokenPage =
        withAddedAtEnd(
            "broken-report.html",
            "<img src=\"http://collscope.invalid/pixel.png\">"
                + "<script>collscopeNoSuchFunction();</script>");

    List<String> problems = problems(chromium.load(brokenPage));

    assertThat(problems).anyMatch(p -> p.contains("collscopeNoSuchFunction"));
    assertThat(problems).anyMatch(p -> p.contains("collscope.invalid"));
    assertThat(problems).anyMatch(p -> p.startsWith("page errors: "));
  }
}
