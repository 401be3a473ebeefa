package io.collscope.cluster;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The checkpoints Flink retained under a checkpoint directory ({@code <dir>/<job id>/chk-N}, a
 * complete one has its {@code _metadata}): what a job is resumed from after its JobManager died
 * without high availability ({@code collscope job recover}).
 */
public final class RetainedCheckpoints {

  /** A complete retained checkpoint: its directory, its job and number, when it completed. */
  public record Checkpoint(Path path, String jobId, long number, FileTime completed) {}

  private RetainedCheckpoints() {}

  /**
   * The newest complete checkpoint of {@code jobId} (or of any job when null) under {@code dir} (a
   * {@code file:} URI or a path), by completion time.
   *
   * @throws IllegalArgumentException for a directory on other storage (S3, HDFS), which this
   *     command does not list: name the checkpoint instead
   */
  public static Optional<Checkpoint> latest(String dir, String jobId) throws IOException {
    Path root;
    if (dir.contains("://") || dir.startsWith("file:")) {
      URI uri = URI.create(dir);
      if (!"file".equals(uri.getScheme())) {
        throw new IllegalArgumentException(
            "checkpoints in "
                + dir
                + " are not on a local file system: give the checkpoint (.../chk-N) with"
                + " --from-checkpoint");
      }
      root = Path.of(uri);
    } else {
      root = Path.of(dir);
    }
    if (!Files.isDirectory(root)) return Optional.empty();
    Checkpoint best = null;
    try (Stream<Path> jobs = Files.list(root)) {
      for (Path job : jobs.filter(Files::isDirectory).toList()) {
        String id = job.getFileName().toString();
        if (jobId != null && !jobId.equals(id)) continue;
        try (Stream<Path> chks = Files.list(job)) {
          for (Path chk : chks.toList()) {
            String n = chk.getFileName().toString();
            Path metadata = chk.resolve("_metadata");
            if (!n.matches("chk-\\d+") || !Files.isRegularFile(metadata)) continue;
            Checkpoint c =
                new Checkpoint(
                    chk, id, Long.parseLong(n.substring(4)), Files.getLastModifiedTime(metadata));
            if (best == null
                || c.completed().compareTo(best.completed()) > 0
                || (c.completed().equals(best.completed()) && c.number() > best.number())) {
              best = c;
            }
          }
        }
      }
    }
    return Optional.ofNullable(best);
  }
}
