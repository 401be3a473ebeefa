package io.collscope.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A real Prometheus (the Debian package's {@code prometheus}, 2.42) for tests: one server on a free
 * port of 127.0.0.1 with the configuration the test writes, its TSDB in a temporary directory, and
 * its HTTP query API. A missing binary fails the test with the command that installs it.
 */
public final class PrometheusProcess implements AutoCloseable {

  public static final ServerProcess.Program PROGRAM =
      new ServerProcess.Program(
          "prometheus", "prometheus", "COLLSCOPE_PROMETHEUS_BIN", "the monitoring tests");

  private static final ObjectMapper JSON = new ObjectMapper();

  private final ServerProcess server;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private PrometheusProcess(ServerProcess server) {
    this.server = server;
  }

  /** Starts Prometheus with the given configuration (YAML) and waits until it is ready. */
  public static PrometheusProcess start(String configYaml) {
    return new PrometheusProcess(
        ServerProcess.start(
            PROGRAM,
            (dir, port) -> {
              Path config = dir.resolve("prometheus.yml");
              Files.writeString(config, configYaml, StandardCharsets.UTF_8);
              return List.of(
                  "--config.file=" + config,
                  "--storage.tsdb.path=" + dir.resolve("data"),
                  "--web.listen-address=127.0.0.1:" + port,
                  "--log.level=warn");
            }));
  }

  public URI url() {
    return server.url();
  }

  /**
   * The answer of {@code GET /api/v1/query?query=EXPR} (an instant query at now), as Prometheus
   * sent it; fails unless it is {@code "status": "success"}.
   */
  public String queryJson(String expr) throws IOException {
    URI uri =
        url().resolve("/api/v1/query?query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8));
    HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build();
    HttpResponse<String> resp;
    try {
      resp = http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("GET " + uri);
    }
    if (resp.statusCode() != 200) {
      throw new IOException("GET " + uri + ": " + resp.statusCode() + " " + resp.body());
    }
    return resp.body();
  }

  /** The result vector of an instant query: one element per series, each {metric, value}. */
  public JsonNode query(String expr) throws IOException {
    JsonNode answer = JSON.readTree(queryJson(expr));
    if (!"success".equals(answer.path("status").asText())) {
      throw new IOException(expr + ": " + answer);
    }
    return answer.path("data").path("result");
  }

  /** The last lines of Prometheus' log. */
  public String logTail() {
    return server.logTail();
  }

  /** Its directory (configuration, TSDB, log). */
  public Path dir() {
    return server.dir();
  }

  @Override
  public void close() {
    server.close();
  }
}
