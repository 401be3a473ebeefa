package io.collscope.alerts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * Prometheus Alertmanager's API v2 over the JDK's HTTP client: {@code POST /api/v2/alerts} to
 * deliver, {@code GET /api/v2/alerts} and {@code GET /-/ready} for tests and diagnostics.
 */
public final class AlertmanagerClient implements AlertSink {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final URI base;
  private final Duration timeout;
  private final HttpClient http;

  /**
   * @param base Alertmanager's URL, e.g. {@code http://alertmanager:9093} (a path prefix such as
   *     {@code http://host/alertmanager/} is kept)
   */
  public AlertmanagerClient(URI base, Duration timeout) {
    String s = base.toString();
    this.base = URI.create(s.endsWith("/") ? s : s + "/");
    this.timeout = timeout;
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(timeout)
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build();
  }

  /** Parses an Alertmanager URL; an IllegalArgumentException that says what is wrong otherwise. */
  public static URI parseUrl(String url) {
    URI u;
    try {
      u = new URI(url == null ? "" : url.trim());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("'" + url + "' is not a URL: " + e.getReason());
    }
    String scheme = u.getScheme();
    if (scheme == null || !(scheme.equals("http") || scheme.equals("https"))) {
      throw new IllegalArgumentException(
          "'" + url + "' is not an http(s) URL (e.g. http://localhost:9093)");
    }
    if (u.getHost() == null || u.getHost().isEmpty()) {
      throw new IllegalArgumentException("'" + url + "' has no host (e.g. http://localhost:9093)");
    }
    if (u.getQuery() != null || u.getFragment() != null) {
      throw new IllegalArgumentException("'" + url + "' must not have a query or fragment");
    }
    return u;
  }

  public URI base() {
    return base;
  }

  /** POSTs the alerts; any answer but 200 is an {@link AlertmanagerException}. */
  @Override
  public void send(List<AlertmanagerAlert> alerts) throws IOException {
    HttpRequest req =
        HttpRequest.newBuilder(base.resolve("api/v2/alerts"))
            .timeout(timeout)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(AlertMapping.toJson(alerts)))
            .build();
    HttpResponse<String> r = exchange(req);
    if (r.statusCode() != 200) {
      throw new AlertmanagerException(r.statusCode(), "POST " + req.uri(), r.body());
    }
  }

  /** The raw JSON of {@code GET /api/v2/alerts}: the alerts Alertmanager holds as not resolved. */
  public String alertsJson() throws IOException {
    HttpRequest req =
        HttpRequest.newBuilder(base.resolve("api/v2/alerts"))
            .timeout(timeout)
            .header("Accept", "application/json")
            .GET()
            .build();
    HttpResponse<String> r = exchange(req);
    if (r.statusCode() != 200) {
      throw new AlertmanagerException(r.statusCode(), "GET " + req.uri(), r.body());
    }
    return r.body();
  }

  /** {@code GET /api/v2/alerts}, parsed. */
  public JsonNode alerts() throws IOException {
    return JSON.readTree(alertsJson());
  }

  /** Whether {@code GET /-/ready} answers 200. */
  public boolean ready() {
    try {
      HttpRequest req = HttpRequest.newBuilder(base.resolve("-/ready")).timeout(timeout).build();
      return exchange(req).statusCode() == 200;
    } catch (IOException e) {
      return false;
    }
  }

  private HttpResponse<String> exchange(HttpRequest req) throws IOException {
    try {
      return http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException ie = new InterruptedIOException(req.method() + " " + req.uri());
      ie.initCause(e);
      throw ie;
    }
  }

  /** Alertmanager answered, but not with 200. */
  public static final class AlertmanagerException extends IOException {
    private final int status;

    AlertmanagerException(int status, String request, String body) {
      super(request + " answered " + status + ": " + oneLine(body));
      this.status = status;
    }

    public int status() {
      return status;
    }

    private static String oneLine(String s) {
      String t = s == null ? "" : s.replaceAll("\\s+", " ").trim();
      return t.length() > 300 ? t.substring(0, 300) + "..." : t;
    }
  }
}
