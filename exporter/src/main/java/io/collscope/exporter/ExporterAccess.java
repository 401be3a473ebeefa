package io.collscope.exporter;

import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpsConfigurator;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.Map;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * Who may reach the exporter's {@code /metrics}: the address it binds (loopback unless told
 * otherwise: a scrape from another machine is a decision, not a default), TLS from a PKCS12 key
 * store, and HTTP basic authentication from a file of {@code user:password} lines (the plain
 * password a Prometheus scrape config's {@code basic_auth.password_file} holds too; keep the file
 * 0600). Without a users file every client that reaches the address may scrape.
 *
 * @param bind the address to listen on: 127.0.0.1 by default, 0.0.0.0 for every interface
 * @param keyStore PKCS12 key store with the server's key and certificate, or null for plain HTTP
 * @param keyStorePasswordFile the key store's password (first line), or null for an empty one
 * @param basicAuthUsers a file of {@code user:password} lines, or null for no authentication
 */
public record ExporterAccess(
    String bind, Path keyStore, Path keyStorePasswordFile, Path basicAuthUsers) {

  public static final String DEFAULT_BIND = "127.0.0.1";

  /** Loopback, plain HTTP, no authentication: what the tests and a one-machine setup use. */
  public static final ExporterAccess LOCAL = new ExporterAccess(DEFAULT_BIND, null, null, null);

  public boolean tls() {
    return keyStore != null;
  }

  /** Starts the HTTP(S) server for {@code registry} on {@code port} (0: a free one). */
  public HTTPServer start(int port, PrometheusRegistry registry) throws IOException {
    HTTPServer.Builder b = HTTPServer.builder().hostname(bind).port(port).registry(registry);
    if (keyStore != null) b.httpsConfigurator(new HttpsConfigurator(sslContext()));
    if (basicAuthUsers != null) b.authenticator(authenticator(readUsers(basicAuthUsers)));
    return b.buildAndStart();
  }

  private SSLContext sslContext() throws IOException {
    char[] password =
        keyStorePasswordFile == null ? new char[0] : firstLine(keyStorePasswordFile).toCharArray();
    try (InputStream in = Files.newInputStream(keyStore)) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(in, password);
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, password);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(kmf.getKeyManagers(), null, null);
      return ctx;
    } catch (GeneralSecurityException e) {
      throw new IOException("key store " + keyStore + ": " + e.getMessage(), e);
    }
  }

  private static String firstLine(Path p) throws IOException {
    return Files.readAllLines(p, StandardCharsets.UTF_8).stream().findFirst().orElse("").strip();
  }

  /** {@code user:password} a line; blank lines and {@code #} comments skipped. */
  static Map<String, byte[]> readUsers(Path file) throws IOException {
    Map<String, byte[]> users = new HashMap<>();
    int n = 0;
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      n++;
      if (line.isBlank() || line.strip().startsWith("#")) continue;
      int colon = line.indexOf(':');
      if (colon < 1 || colon == line.length() - 1) {
        throw new IOException(file + ":" + n + ": expected user:password");
      }
      users.put(
          line.substring(0, colon), line.substring(colon + 1).getBytes(StandardCharsets.UTF_8));
    }
    if (users.isEmpty()) throw new IOException(file + ": no user:password line");
    return users;
  }

  private static BasicAuthenticator authenticator(Map<String, byte[]> users) {
    return new BasicAuthenticator("collscope exporter") {
      @Override
      public boolean checkCredentials(String user, String password) {
        byte[] want = users.get(user);
        byte[] got = password.getBytes(StandardCharsets.UTF_8);
        // Constant time in the password, so a timing does not reveal how much of it matched.
        return want != null && MessageDigest.isEqual(want, got);
      }
    };
  }
}
