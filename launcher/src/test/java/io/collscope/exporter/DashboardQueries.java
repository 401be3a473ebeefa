package io.collscope.exporter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every PromQL expression of the Grafana dashboard that ships in {@code docker/grafana/}: each
 * panel target's {@code expr}, and each template variable's {@code label_values(SELECTOR, LABEL)}
 * as the query Grafana sends for it ({@code count by (LABEL) (SELECTOR)}). Template variables are
 * replaced by their "All" value, as on the dashboard's first load.
 */
final class DashboardQueries {

  /** The dashboard, from the launcher module's directory (where Maven runs the tests). */
  static final Path DASHBOARD = Path.of("..", "docker", "grafana", "collscope-dashboard.json");

  private static final Pattern LABEL_VALUES =
      Pattern.compile("label_values\\((.*),\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*\\)");

  /** One expression: where it is (panel title and refId, or variable name) and the PromQL. */
  record Query(String where, String promql) {}

  private DashboardQueries() {}

  static JsonNode dashboard() throws IOException {
    return new ObjectMapper().readTree(Files.readString(DASHBOARD));
  }

  static List<Query> all() throws IOException {
    JsonNode d = dashboard();
    List<Query> out = new ArrayList<>();
    List<String[]> allValues = new ArrayList<>();
    for (JsonNode v : d.path("templating").path("list")) {
      if (!"query".equals(v.path("type").asText())) continue;
      allValues.add(new String[] {"$" + v.path("name").asText(), v.path("allValue").asText()});
      Matcher m = LABEL_VALUES.matcher(v.path("definition").asText());
      if (!m.matches()) {
        throw new AssertionError("variable " + v.path("name") + ": not label_values(...): " + v);
      }
      out.add(
          new Query(
              "variable " + v.path("name").asText(),
              "count by (" + m.group(2) + ") (" + m.group(1) + ")"));
    }
    for (JsonNode p : d.path("panels")) {
      for (JsonNode t : p.path("targets")) {
        out.add(
            new Query(
                "panel '" + p.path("title").asText() + "' " + t.path("refId").asText(),
                t.path("expr").asText()));
      }
    }
    List<Query> substituted = new ArrayList<>();
    for (Query q : out) {
      String e = q.promql();
      for (String[] v : allValues) e = e.replace(v[0], v[1]);
      substituted.add(new Query(q.where(), e));
    }
    return substituted;
  }

  /** The expression of the panel with that title (its first target). */
  static String panel(String title) throws IOException {
    for (Query q : all()) if (q.where().startsWith("panel '" + title + "'")) return q.promql();
    throw new AssertionError("no panel '" + title + "' in " + DASHBOARD);
  }
}
