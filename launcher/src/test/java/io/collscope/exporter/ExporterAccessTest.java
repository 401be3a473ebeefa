package io.collscope.exporter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.testing.TestCertificates;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The exporter's closed doors, against its real HTTP server: it listens on loopback unless told
 * otherwise, and with TLS and a users file a scrape without credentials is refused (401) and one
 * with them answered (200), over HTTPS only.
 */
class ExporterAccessTest {

  @TempDir Path dir;

  /** An address of this machine that is not loopback: where a remote scraper would connect. */
  private static InetAddress outsideAddress() throws Exception {
    for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (!nif.isUp() || nif.isLoopback()) continue;
      for (InetAddress a : Collections.list(nif.getInetAddresses())) {
        if (a instanceof Inet4Address) return a;
      }
    }
    throw new AssertionError("this machine has no non-loopback IPv4 address to test from");
  }

  @Test
  void byDefaultTheExporterListensOnLoopbackOnly() throws Exception {
    OutputTopicReader.Topics topics = new OutputTopicReader.Topics("rw", "at", "al", "dl");
    try (Exporter e = Exporter.start("127.0.0.1:1", topics, 0, Duration.ofMinutes(1))) {
      InetAddress outside = outsideAddress();
      assertThatThrownBy(
              () -> {
                try (Socket s = new Socket()) {
                  s.connect(new InetSocketAddress(outside, e.port()), 2000);
                }
              })
          .as("a connection from %s", outside)
          .isInstanceOf(ConnectException.class);
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), e.port()), 2000);
      }
    }
  }

  @Test
  void withTlsAndBasicAuthAScrapeWithoutCredentialsIsRefusedAndOneWithThemAnswered()
      throws Exception {
    EmbeddedKafka.Security cert = TestCertificates.brokerSecurity(dir);
    Path password = Files.writeString(dir.resolve("ks.pw"), cert.keyStorePassword() + "\n");
    Path users = Files.writeString(dir.resolve("users"), "# scrapers\nprometheus:s3cret-pw\n");
    ExporterAccess access = new ExporterAccess("127.0.0.1", cert.keyStore(), password, users);
    HTTPServer server = access.start(0, new PrometheusRegistry());
    try {
      HttpClient https = HttpClient.newBuilder().sslContext(trusting(cert.trustPem())).build();
      String url = "https://localhost:" + server.getPort() + "/metrics";
      assertThat(get(https, url, null)).as("no credentials").isEqualTo(401);
      assertThat(get(https, url, "prometheus:wrong")).as("a wrong password").isEqualTo(401);
      assertThat(get(https, url, "nobody:s3cret-pw")).as("an unknown user").isEqualTo(401);
      assertThat(get(https, url, "prometheus:s3cret-pw")).as("the credentials").isEqualTo(200);
      HttpClient plain = HttpClient.newHttpClient();
      assertThatThrownBy(
              () -> get(plain, "http://localhost:" + server.getPort() + "/metrics", null))
          .as("plain HTTP to the TLS port")
          .isInstanceOf(java.io.IOException.class);
    } finally {
      server.close();
    }
  }

  @Test
  void aUsersFileWithoutAUserIsAnError() throws Exception {
    Path users = Files.writeString(dir.resolve("users"), "# nobody\n");
    assertThatThrownBy(() -> ExporterAccess.readUsers(users)).hasMessageContaining("no user");
    Path bad = Files.writeString(dir.resolve("bad"), "just-a-name\n");
    assertThatThrownBy(() -> ExporterAccess.readUsers(bad)).hasMessageContaining(":1: expected");
  }

  private static int get(HttpClient c, String url, String userPassword) throws Exception {
    HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10));
    if (userPassword != null) {
      r.header(
          "Authorization",
          "Basic "
              + Base64.getEncoder().encodeToString(userPassword.getBytes(StandardCharsets.UTF_8)));
    }
    return c.send(r.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private static SSLContext trusting(Path pem) throws Exception {
    KeyStore ts = KeyStore.getInstance(KeyStore.getDefaultType());
    ts.load(null, null);
    try (InputStream in = Files.newInputStream(pem)) {
      ts.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ts);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }
}
