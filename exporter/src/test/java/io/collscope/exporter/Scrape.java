package io.collscope.exporter;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The samples of one scrape in Prometheus' text format, to look series up by name and labels. */
record Scrape(String text, List<Sample> samples) {

  /** One line: {@code name{label="value",...} value}; labels with empty values are left out. */
  record Sample(String name, Map<String, String> labels, double value) {}

  private static final Pattern LINE =
      Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{.*\\})? (\\S+)");
  private static final Pattern LABEL =
      Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  static Scrape of(PrometheusRegistry registry) {
    return parse(PrometheusTextFormatWriter.create().toDebugString(registry.scrape()));
  }

  static Scrape parse(String text) {
    List<Sample> samples = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) continue;
      Matcher m = LINE.matcher(line);
      if (!m.matches()) throw new AssertionError("not a sample line: " + line);
      Map<String, String> labels = new TreeMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) if (!l.group(2).isEmpty()) labels.put(l.group(1), l.group(2));
      }
      samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
    }
    return new Scrape(text, samples);
  }

  /** The samples of the metric {@code name} whose labels include all the given pairs. */
  List<Sample> series(String name, String... labelPairs) {
    List<Sample> out = new ArrayList<>();
    for (Sample s : samples) {
      if (!s.name().equals(name)) continue;
      boolean all = true;
      for (int i = 0; i < labelPairs.length; i += 2) {
        String want = labelPairs[i + 1];
        String have = s.labels().get(labelPairs[i]);
        if (want.isEmpty() ? have != null : !want.equals(have)) all = false;
      }
      if (all) out.add(s);
    }
    return out;
  }

  /** The value of the one series that matches; empty when none does; fails when several do. */
  Optional<Double> value(String name, String... labelPairs) {
    List<Sample> s = series(name, labelPairs);
    if (s.size() > 1) throw new AssertionError(s.size() + " series match: " + s);
    return s.isEmpty() ? Optional.empty() : Optional.of(s.get(0).value());
  }
}
