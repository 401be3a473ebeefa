package io.collscope.exporter;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The shipped dashboard has the panels it promises, and asks only for metrics the exporter serves
 * (ExporterITCase runs every expression through a real Prometheus).
 */
class DashboardTest {

  private static final Pattern METRIC = Pattern.compile("\\b(collscope_[a-z0-9_]+)");

  @Test
  void itHasTheMonitoringPanels() throws Exception {
    List<String> types = new ArrayList<>();
    List<String> titles = new ArrayList<>();
    for (JsonNode p : DashboardQueries.dashboard().path("panels")) {
      types.add(p.path("type").asText());
      titles.add(p.path("title").asText());
      assertThat(p.path("datasource").path("uid").asText()).isEqualTo("${datasource}");
      assertThat(p.path("targets")).as(p.path("title").asText()).isNotEmpty();
    }
    assertThat(titles)
        .contains(
            "Max wait over ranks, per communicator", "Culprits (latest window)", "Alerts firing");
    assertThat(types).contains("heatmap", "table", "timeseries");
  }

  @Test
  void everyQueryAsksForMetricsTheExporterServes() throws Exception {
    Set<String> served = new TreeSet<>();
    for (Field f : ExporterMetrics.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
        String v = (String) f.get(null);
        if (v.startsWith("collscope_")) {
          served.add(v);
          served.add(v + "_total"); // counters
        }
      }
    }
    List<DashboardQueries.Query> queries = DashboardQueries.all();
    assertThat(queries).hasSizeGreaterThan(10);
    for (DashboardQueries.Query q : queries) {
      assertThat(q.promql()).as(q.where()).doesNotContain("$");
      Matcher m = METRIC.matcher(q.promql());
      assertThat(m.find()).as(q.where() + ": " + q.promql()).isTrue();
      do {
        assertThat(served).as(q.where()).contains(m.group(1));
      } while (m.find());
    }
  }
}
