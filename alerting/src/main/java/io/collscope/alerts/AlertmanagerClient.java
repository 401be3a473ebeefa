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
    this(base, timeout, Credentials.NONE);
  }

  /**
   * What the client presents to an Alertmanager behind authentication or TLS, named as Prometheus'
   * own {@code alertmanager_config} names them: {@code basic_auth.username} and {@code
   * basic_auth.password_file}, {@code authorization.credentials_file} (a bearer token), {@code
   * tls_config.ca_file} (a PEM CA that signs the server's certificate, besides the JVM's). Secrets
   * are read from files, never given on a command line.
   */
  public record Credentials(
      String basicAuthUsername,
      java.nio.file.Path basicAuthPasswordFile,
      java.nio.file.Path bearerTokenFile,
      java.nio.file.Path caFile) {

    public static final Credentials NONE = new Credentials(null, null, null, null);

    /** The Authorization header's value, or null for none. */
    String authorization() throws IOException {
      if (basicAuthUsername != null) {
        String password = basicAuthPasswordFile == null ? "" : firstLine(basicAuthPasswordFile);
        return "Basic "
            + java.util.Base64.getEncoder()
                .encodeToString(
                    (basicAuthUsername + ":" + password).getBytes(StandardCharsets.UTF_8));
      }
      if (bearerTokenFile != null) return "Bearer " + firstLine(bearerTokenFile);
      return null;
    }

    private static String firstLine(java.nio.file.Path p) throws IOException {
      return java.nio.file.Files.readAllLines(p, StandardCharsets.UTF_8).stream()
          .findFirst()
          .orElse("")
          .strip();
    }

    /** The JVM's trusted CAs plus {@link #caFile}'s certificates. */
    javax.net.ssl.SSLContext sslContext() throws IOException {
      try {
        java.security.KeyStore ts = java.security.KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        javax.net.ssl.TrustManagerFactory system =
            javax.net.ssl.TrustManagerFactory.getInstance(
                javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        system.init((java.security.KeyStore) null);
        int n = 0;
        for (var tm : system.getTrustManagers()) {
          if (tm instanceof javax.net.ssl.X509TrustManager x) {
            for (var c : x.getAcceptedIssuers()) ts.setCertificateEntry("system-" + n++, c);
          }
        }
        try (var in = java.nio.file.Files.newInputStream(caFile)) {
          for (var c :
              java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in)) {
            ts.setCertificateEntry("ca-" + n++, c);
          }
        }
        javax.net.ssl.TrustManagerFactory tmf =
            javax.net.ssl.TrustManagerFactory.getInstance(
                javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ts);
        javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
      } catch (java.security.GeneralSecurityException e) {
        throw new IOException("tls_config.ca_file " + caFile + ": " + e.getMessage(), e);
      }
    }
  }

  private final String authorization;

  /** A client that presents {@code credentials} (read now: a missing file fails here). */
  public AlertmanagerClient(URI base, Duration timeout, Credentials credentials) {
    String s = base.toString();
    this.base = URI.create(s.endsWith("/") ? s : s + "/");
    this.timeout = timeout;
    HttpClient.Builder b =
        HttpClient.newBuilder()
            .connectTimeout(timeout)
            // A redirect to another host must not carry the credentials there.
            .followRedirects(
                credentials.basicAuthUsername() != null || credentials.bearerTokenFile() != null
                    ? HttpClient.Redirect.NEVER
                    : HttpClient.Redirect.NORMAL);
    try {
      if (credentials.caFile() != null) b.sslContext(credentials.sslContext());
      this.authorization = credentials.authorization();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    this.http = b.build();
  }

  private HttpRequest.Builder request(URI uri) {
    HttpRequest.Builder r = HttpRequest.newBuilder(uri).timeout(timeout);
    if (authorization != null) r.header("Authorization", authorization);
    return r;
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
        request(base.resolve("api/v2/alerts"))
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
        request(base.resolve("api/v2/alerts")).header("Accept", "application/json").GET().build();
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
      HttpRequest req = request(base.resolve("-/ready")).build();
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
