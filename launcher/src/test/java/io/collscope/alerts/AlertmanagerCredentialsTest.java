package io.collscope.alerts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.testing.TestCertificates;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Alertmanager client's credentials on the wire: an HTTPS endpoint with a certificate of a test
 * CA that answers {@code /-/ready} 200 only to the expected Authorization header (an Alertmanager
 * behind a reverse proxy, or with {@code --web.config.file}). The client trusts the CA only through
 * {@code tls_config.ca_file}, and sends basic auth or a bearer token read from files.
 */
class AlertmanagerCredentialsTest {

  @TempDir Path dir;

  private HttpsServer server;
  private final List<String> seen = new ArrayList<>();
  private EmbeddedKafka.Security cert;
  private String expected;

  @BeforeEach
  void start() throws Exception {
    cert = TestCertificates.brokerSecurity(dir);
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(cert.keyStore())) {
      ks.load(in, cert.keyStorePassword().toCharArray());
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, cert.keyStorePassword().toCharArray());
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf.getKeyManagers(), null, null);
    server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setHttpsConfigurator(new HttpsConfigurator(ctx));
    server.createContext(
        "/",
        ex -> {
          String auth = ex.getRequestHeaders().getFirst("Authorization");
          synchronized (seen) {
            seen.add(String.valueOf(auth));
          }
          int status = expected.equals(auth) ? 200 : 401;
          ex.sendResponseHeaders(status, -1);
          ex.close();
        });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private URI url() {
    return URI.create("https://localhost:" + server.getAddress().getPort());
  }

  @Test
  void basicAuthFromAPasswordFileOverTlsTrustedThroughTheCaFile() throws Exception {
    expected =
        "Basic "
            + Base64.getEncoder()
                .encodeToString("forwarder:pa55:word".getBytes(StandardCharsets.UTF_8));
    Path pw = Files.writeString(dir.resolve("pw"), "pa55:word\n");
    AlertmanagerClient.Credentials creds =
        new AlertmanagerClient.Credentials("forwarder", pw, null, cert.trustPem());
    assertThat(new AlertmanagerClient(url(), Duration.ofSeconds(5), creds).ready()).isTrue();
    AlertmanagerClient.Credentials tlsOnly =
        new AlertmanagerClient.Credentials(null, null, null, cert.trustPem());
    assertThat(new AlertmanagerClient(url(), Duration.ofSeconds(5), tlsOnly).ready())
        .as("no credentials: refused")
        .isFalse();
    assertThat(seen).containsExactly(expected, "null");
  }

  @Test
  void aBearerTokenFromAFile() throws Exception {
    expected = "Bearer tok-123";
    Path token = Files.writeString(dir.resolve("token"), "tok-123\n");
    AlertmanagerClient.Credentials creds =
        new AlertmanagerClient.Credentials(null, null, token, cert.trustPem());
    assertThat(new AlertmanagerClient(url(), Duration.ofSeconds(5), creds).ready()).isTrue();
  }

  @Test
  void withoutTheCaFileTheServersCertificateIsNotTrusted() throws Exception {
    expected = "Bearer tok-123";
    Path token = Files.writeString(dir.resolve("token"), "tok-123\n");
    AlertmanagerClient client =
        new AlertmanagerClient(
            url(),
            Duration.ofSeconds(5),
            new AlertmanagerClient.Credentials(null, null, token, null));
    assertThatThrownBy(client::alertsJson).isInstanceOf(javax.net.ssl.SSLHandshakeException.class);
    assertThat(seen).as("nothing sent before the handshake").isEmpty();
  }
}
