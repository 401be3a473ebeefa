package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.testing.SessionCluster;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The closed door of the Kubernetes manifest ({@code web.submit.enable: "false"} in
 * deploy/k8s/flink-deployment.yaml), on a real Flink session cluster: the REST API answers, but a
 * jar upload — what would let anyone who reaches it run code — is refused.
 */
class FlinkRestUploadRefusedITCase {

  @TempDir Path tmp;

  @Test
  void withWebSubmitDisabledAJarUploadIsRefused() throws Exception {
    // Without Flink's web submission handlers on the classpath every upload is refused, setting
    // or not, and this test could not fail; a Flink distribution's lib/ has them.
    Class.forName("org.apache.flink.runtime.webmonitor.WebSubmissionExtension");
    SessionCluster cluster =
        SessionCluster.start(tmp.resolve("flink"), Map.of("web.submit.enable", "false"));
    try {
      cluster.awaitTaskManagers(1); // the REST API answers
      HttpClient http = HttpClient.newHttpClient();
      String boundary = UUID.randomUUID().toString();
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      body.write(
          ("--"
                  + boundary
                  + "\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"job.jar\"\r\n"
                  + "Content-Type: application/x-java-archive\r\n\r\n")
              .getBytes(StandardCharsets.UTF_8));
      body.write(Files.readAllBytes(SessionCluster.JOB_JAR));
      body.write(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
      HttpResponse<String> upload =
          http.send(
              HttpRequest.newBuilder(cluster.restUrl().resolve("jars/upload"))
                  .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                  .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      System.out.println("POST /jars/upload: " + upload.statusCode() + " " + upload.body());
      assertThat(upload.statusCode()).as(upload.body()).isGreaterThanOrEqualTo(400);
      HttpResponse<String> jars =
          http.send(
              HttpRequest.newBuilder(cluster.restUrl().resolve("jars")).GET().build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(jars.statusCode()).as("no jar listing either").isGreaterThanOrEqualTo(400);
    } finally {
      cluster.close();
    }
  }
}
