package io.collscope.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Renders a {@link Report} as one self-contained HTML file: the page template, its stylesheet and
 * script, the vendored Apache ECharts bundle and the report's data (JSON), all inline. Nothing is
 * fetched when the page is opened, and its Content-Security-Policy forbids fetching anything.
 */
public final class ReportPage {

  /** Where the page's parts are on the classpath. */
  static final String RESOURCES = "/io/collscope/report/";

  /** The vendored ECharts bundle (dev/vendor-charts.sh writes it and its VERSION file). */
  static final String ECHARTS = RESOURCES + "echarts/echarts.min.js";

  static final String ECHARTS_VERSION = RESOURCES + "echarts/VERSION";

  private static final ObjectMapper JSON = new ObjectMapper();

  private ReportPage() {}

  /** The HTML page of {@code report}. */
  public static String render(Report report) {
    Map<String, String> parts =
        Map.of(
            "TITLE", escapeHtml(title(report)),
            "CSS", resource("report.css"),
            "DATA", dataJson(report),
            "ECHARTS_VERSION", echartsVersion(),
            "ECHARTS", scriptSafe(resourceAt(ECHARTS)),
            "SCRIPT", scriptSafe(resource("report.js")));
    // One pass over the template only: what is inserted is never searched for markers.
    Matcher m = MARKER.matcher(resource("report.html"));
    StringBuilder out = new StringBuilder(2_000_000);
    while (m.find()) {
      String part = parts.get(m.group(1));
      if (part == null)
        throw new IllegalStateException("template marker without a part: " + m.group());
      m.appendReplacement(out, Matcher.quoteReplacement(part));
    }
    m.appendTail(out);
    return out.toString();
  }

  private static final Pattern MARKER = Pattern.compile("@@([A-Z_]+)@@");

  /** The report as JSON that is safe inside {@code <script type="application/json">}. */
  static String dataJson(Report report) {
    try {
      // '<' only occurs inside JSON strings, where \u003c means the same character: no "</script>"
      // or "<!--" can end or bend the script element.
      return JSON.writeValueAsString(report).replace("<", "\\u003c");
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("report data is not serialisable", e);
    }
  }

  static String title(Report r) {
    String what = r.communicatorFilter() == null ? "cluster" : r.communicatorFilter();
    return "collscope report: " + what;
  }

  /** "6.1.0" from the VERSION file's first line ("echarts 6.1.0 sha512-..."). */
  static String echartsVersion() {
    String first = resourceAt(ECHARTS_VERSION).lines().findFirst().orElse("");
    String[] parts = first.split(" ");
    return parts.length > 1 ? parts[1] : "unknown";
  }

  private static String scriptSafe(String js) {
    if (js.contains("</script")) {
      throw new IllegalStateException("an inlined script contains </script");
    }
    return js;
  }

  static String escapeHtml(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }

  private static String resource(String name) {
    return resourceAt(RESOURCES + name);
  }

  private static String resourceAt(String path) {
    try (InputStream in = ReportPage.class.getResourceAsStream(path)) {
      if (in == null) throw new IllegalStateException("missing resource " + path);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
