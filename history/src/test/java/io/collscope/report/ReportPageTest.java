package io.collscope.report;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.report.Report.CommunicatorSummary;
import io.collscope.report.Report.Overview;
import io.collscope.report.Report.Totals;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The page is one self-contained file whose data no string in the history can break out of. */
class ReportPageTest {

  static Report reportAbout(String communicator) {
    return new Report(
        "/h",
        "2026-11-30T00:00:00Z",
        0,
        3_600_000,
        null,
        10_000,
        new Totals(1, 8, 1, 0, 0),
        List.of(new CommunicatorSummary(communicator, 8, 1, 0, 0, 0, null, 0, 1.5, null, false)),
        0,
        new Overview(List.of(), List.of()),
        List.of(),
        0,
        List.of());
  }

  @Test
  void aNameThatLooksLikeMarkupStaysDataInsideTheDataScript() throws Exception {
    String evil = "c/j/</script><script>alert(1)</script><!-- @@DATA@@ \u2028";
    String page = ReportPage.render(reportAbout(evil));

    Matcher data =
        Pattern.compile(
                "<script type=\"application/json\" id=\"report-data\">(.*?)</script>",
                Pattern.DOTALL)
            .matcher(page);
    assertThat(data.find()).isTrue();
    assertThat(data.group(1)).doesNotContain("<");
    JsonNode json = new ObjectMapper().readTree(data.group(1));
    assertThat(json.at("/communicators/0/key").asText()).isEqualTo(evil);
  }

  @Test
  void thePageInlinesEverythingAndForbidsLoadingAnything() {
    String page = ReportPage.render(reportAbout("c/j/comm0"));

    assertThat(page)
        .doesNotContainPattern("<script[^>]+src=")
        .doesNotContainPattern("<link[^>]+href=");
    assertThat(page).contains("Content-Security-Policy").contains("default-src 'none'");
    assertThat(page).doesNotContainPattern("@@[A-Z_]+@@");
    assertThat(page).contains("Apache ECharts " + ReportPage.echartsVersion());
    assertThat(ReportPage.echartsVersion()).matches("\\d+\\.\\d+\\.\\d+");
  }
}
