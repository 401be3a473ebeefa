package io.collscope.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The JobManager's REST API
 * (https://nightlies.apache.org/flink/flink-docs-release-2.2/docs/ops/rest_api/), the calls {@code
 * collscope job} and {@code collscope cluster} make: upload and run the job jar, list jobs,
 * savepoints (with and without stopping), cancel, the cluster's overview. The same calls work
 * against a session cluster started by {@code collscope cluster start}, by compose, or by the Flink
 * Kubernetes Operator.
 */
public final class FlinkRest {

  /** A job as {@code /jobs/overview} lists it. */
  public record Job(String id, String name, String state) {}

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

  private final URI base;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  public FlinkRest(URI base) {
    String s = base.toString();
    this.base = URI.create(s.endsWith("/") ? s : s + "/");
  }

  public URI base() {
    return base;
  }

  /** {@code GET /overview}: task managers, slots, jobs; empty while the JobManager is not up. */
  public Optional<JsonNode> overview() {
    try {
      return Optional.of(get("overview"));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** Waits until the cluster has {@code taskManagers} task managers registered. */
  public void awaitTaskManagers(int taskManagers, Duration timeout) throws IOException {
    Instant deadline = Instant.now().plus(timeout);
    String last = "no answer";
    while (Instant.now().isBefore(deadline)) {
      Optional<JsonNode> o = overview();
      if (o.isPresent()) {
        last = o.get().toString();
        if (o.get().path("taskmanagers").asInt() >= taskManagers) return;
      }
      sleep(500);
    }
    throw new IOException(
        "the cluster at " + base + " has not " + taskManagers + " task managers: " + last);
  }

  /** {@code POST /jars/upload}: the jar's id on the JobManager. */
  public String uploadJar(Path jar) throws IOException {
    String boundary = "collscope-" + UUID.randomUUID();
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(
        ("--"
                + boundary
                + "\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\""
                + jar.getFileName()
                + "\"\r\nContent-Type: application/x-java-archive\r\n\r\n")
            .getBytes(StandardCharsets.UTF_8));
    body.write(Files.readAllBytes(jar));
    body.write(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
    HttpRequest req =
        HttpRequest.newBuilder(base.resolve("jars/upload"))
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", "multipart/form-data; boundary=" + boundary)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
            .build();
    String filename = send(req).path("filename").asText();
    if (filename.isEmpty()) throw new IOException("upload of " + jar + " returned no file name");
    return Path.of(filename).getFileName().toString();
  }

  /** The cluster's task slots, all TaskManagers together ({@code GET /overview}). */
  public int slotsTotal() throws IOException {
    return get("overview").path("slots-total").asInt();
  }

  /** The largest parallelism of a job's operators ({@code GET /jobs/:id}). */
  public int parallelism(String jobId) throws IOException {
    int p = 0;
    for (JsonNode v : get("jobs/" + jobId).path("vertices")) {
      p = Math.max(p, v.path("parallelism").asInt());
    }
    return p;
  }

  /**
   * {@code POST /jars/:id/run}: runs the jar's main class with these arguments at this parallelism,
   * from a savepoint if one is given; the new job's id.
   */
  public String runJar(
      String jarId, List<String> args, String savepoint, boolean allowNonRestored, int parallelism)
      throws IOException {
    ObjectNode body = JSON.createObjectNode();
    body.putPOJO("programArgsList", args);
    body.put("parallelism", parallelism);
    if (savepoint != null) {
      body.put("savepointPath", savepoint);
      body.put("allowNonRestoredState", allowNonRestored);
    }
    String id = post("jars/" + jarId + "/run", body).path("jobid").asText();
    if (id.isEmpty()) throw new IOException("run of jar " + jarId + " returned no job id");
    return id;
  }

  /** {@code GET /jobs/overview}. */
  public List<Job> jobs() throws IOException {
    List<Job> jobs = new ArrayList<>();
    for (JsonNode j : get("jobs/overview").path("jobs")) {
      jobs.add(new Job(j.path("jid").asText(), j.path("name").asText(), j.path("state").asText()));
    }
    return jobs;
  }

  /** The job's state ({@code RUNNING}, {@code FINISHED}, ...). */
  public String state(String jobId) throws IOException {
    return get("jobs/" + jobId).path("state").asText();
  }

  /** Waits until the job runs (and all its tasks do); fails when it ends first. */
  public void awaitRunning(String jobId, Duration timeout) throws IOException {
    Instant deadline = Instant.now().plus(timeout);
    String state = "";
    while (Instant.now().isBefore(deadline)) {
      JsonNode job = get("jobs/" + jobId);
      state = job.path("state").asText();
      if (state.equals("RUNNING") && allVerticesRunning(job)) return;
      if (List.of("FAILED", "CANCELED", "FINISHED").contains(state)) break;
      sleep(500);
    }
    throw new IOException("job " + jobId + " is " + state + ", not RUNNING");
  }

  private static boolean allVerticesRunning(JsonNode job) {
    for (JsonNode v : job.path("vertices")) {
      if (!v.path("status").asText().equals("RUNNING")) return false;
    }
    return true;
  }

  /**
   * A savepoint of the job into {@code targetDirectory} ({@code null}: the cluster's
   * execution.checkpointing.savepoint-dir); with {@code stop}, the job stops once it is taken
   * (stop-with-savepoint). Waits for it and returns its path.
   */
  public String savepoint(String jobId, String targetDirectory, boolean stop, Duration timeout)
      throws IOException {
    ObjectNode body = JSON.createObjectNode();
    String trigger;
    if (stop) {
      if (targetDirectory != null) body.put("targetDirectory", targetDirectory);
      body.put("drain", false);
      trigger = post("jobs/" + jobId + "/stop", body).path("request-id").asText();
    } else {
      if (targetDirectory != null) body.put("target-directory", targetDirectory);
      body.put("cancel-job", false);
      trigger = post("jobs/" + jobId + "/savepoints", body).path("request-id").asText();
    }
    Instant deadline = Instant.now().plus(timeout);
    while (Instant.now().isBefore(deadline)) {
      JsonNode s = get("jobs/" + jobId + "/savepoints/" + trigger);
      if (s.path("status").path("id").asText().equals("COMPLETED")) {
        JsonNode op = s.path("operation");
        if (op.hasNonNull("location")) return op.path("location").asText();
        throw new IOException(
            "savepoint of " + jobId + " failed: " + op.path("failure-cause").toString());
      }
      sleep(500);
    }
    throw new IOException("savepoint of " + jobId + " not completed within " + timeout);
  }

  /** {@code PATCH /jobs/:id?mode=cancel}. */
  public void cancel(String jobId) throws IOException {
    HttpRequest req =
        HttpRequest.newBuilder(base.resolve("jobs/" + jobId + "?mode=cancel"))
            .timeout(REQUEST_TIMEOUT)
            .method("PATCH", HttpRequest.BodyPublishers.noBody())
            .build();
    send(req);
  }

  /** The savepoint or checkpoint the job was restored from, if it was. */
  public Optional<String> restoredFrom(String jobId) throws IOException {
    JsonNode r = get("jobs/" + jobId + "/checkpoints").path("latest").path("restored");
    return r.hasNonNull("external_path")
        ? Optional.of(r.path("external_path").asText())
        : Optional.empty();
  }

  /**
   * A job's checkpoints so far ({@code GET /jobs/:id/checkpoints}, counted over its restarts):
   * {@code failed} counts every failure, also the checkpoints Flink never started because a task
   * was not yet running (at the job's start: not a failure of the checkpoint, and not in the
   * history); {@code failedInHistory} the failed ones of the {@code history} (the latest attempts
   * that started, up to web.checkpoints.history). The state size of the latest completed one (-1 if
   * none completed), the failure message of the latest failed one (null if none failed).
   */
  public record CheckpointCounts(
      long completed,
      long failed,
      long failedInHistory,
      int history,
      long latestStateBytes,
      String lastFailure) {}

  public CheckpointCounts checkpoints(String jobId) throws IOException {
    JsonNode c = get("jobs/" + jobId + "/checkpoints");
    JsonNode completed = c.path("latest").path("completed");
    JsonNode failed = c.path("latest").path("failed");
    long failedInHistory = 0;
    for (JsonNode h : c.path("history")) {
      if (h.path("status").asText().equals("FAILED")) failedInHistory++;
    }
    return new CheckpointCounts(
        c.path("counts").path("completed").asLong(),
        c.path("counts").path("failed").asLong(),
        failedInHistory,
        c.path("history").size(),
        completed.path("state_size").asLong(-1),
        failed.hasNonNull("failure_message") ? failed.path("failure_message").asText() : null);
  }

  /** {@code GET /jobmanager/config}: the cluster's Flink configuration, key to value. */
  public Map<String, String> configuration() throws IOException {
    Map<String, String> conf = new TreeMap<>();
    for (JsonNode e : get("jobmanager/config")) {
      conf.put(e.path("key").asText(), e.path("value").asText());
    }
    return conf;
  }

  private JsonNode get(String path) throws IOException {
    return send(HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT).GET().build());
  }

  private JsonNode post(String path, JsonNode body) throws IOException {
    return send(
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build());
  }

  private JsonNode send(HttpRequest req) throws IOException {
    HttpResponse<String> res;
    try {
      res = http.send(req, HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    if (res.statusCode() / 100 != 2) {
      throw new IOException(
          req.method() + " " + req.uri() + ": HTTP " + res.statusCode() + " " + errors(res.body()));
    }
    return res.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(res.body());
  }

  /** Flink's {"errors": [...]}: the first line of each. */
  private static String errors(String body) {
    try {
      List<String> out = new ArrayList<>();
      for (JsonNode e : JSON.readTree(body).path("errors")) {
        out.add(e.asText().lines().findFirst().orElse(""));
      }
      return out.isEmpty() ? body : String.join("; ", out);
    } catch (IOException e) {
      return body;
    }
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}
