package io.collscope.testing;

import io.collscope.broker.EmbeddedKafka;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed certificate for {@code localhost} made for one test by the JDK's own keytool: the
 * broker's PKCS12 key store and the PEM certificate its clients trust. Nothing is downloaded and
 * nothing outlives the test's directory.
 */
public final class TestCertificates {

  private TestCertificates() {}

  /** A fresh key store and trust certificate under {@code dir}, with a random admin password. */
  public static EmbeddedKafka.Security brokerSecurity(Path dir) throws IOException {
    String storePassword = UUID.randomUUID().toString();
    Path keyStore = dir.resolve("broker.p12");
    Path trust = dir.resolve("ca.pem");
    keytool(
        "-genkeypair",
        "-alias",
        "broker",
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=localhost",
        "-ext",
        "SAN=dns:localhost,ip:127.0.0.1",
        "-validity",
        "2",
        "-keystore",
        keyStore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        storePassword,
        "-keypass",
        storePassword);
    keytool(
        "-exportcert",
        "-rfc",
        "-alias",
        "broker",
        "-keystore",
        keyStore.toString(),
        "-storepass",
        storePassword,
        "-file",
        trust.toString());
    return new EmbeddedKafka.Security(keyStore, storePassword, trust, UUID.randomUUID().toString());
  }

  private static void keytool(String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("keytool " + args[0] + " failed: " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}
