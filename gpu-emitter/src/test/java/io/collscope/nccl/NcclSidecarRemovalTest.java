package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.counters.CounterBlock;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sidecar removes the block files of NCCL jobs that died without finalizing their communicators
 * (killed, crashed) once their writer is proven gone, and never a live writer's. Blocks are written
 * by the committed plugin through {@code src/test/c/nccl_profiler_driver.c} (NcclProfilerPluginTest
 * compiles it); a live writer is a driver process that holds its contexts open.
 */
class NcclSidecarRemovalTest {

  @BeforeAll
  static void compileTheDrivers() throws Exception {
    NcclProfilerPluginTest.compileTheDriver();
  }

  static Path driver() {
    return NcclProfilerPluginTest.driver;
  }

  static NcclSidecar sidecar(Path shm, Duration staleAfter) {
    return new NcclSidecar(
        shm,
        new NcclSidecar.Identity("c", "j", "h", "b"),
        new NcclProfilerPluginTest.Collecting(new ArrayList<>()),
        staleAfter,
        true);
  }

  static Path block(Path shm, int rank) {
    return NcclProfilerPluginTest.block(shm, rank);
  }

  /** A crashed job: 2 ranks' blocks, never finalized, their process gone. */
  static void crashedJob(Path shm) throws Exception {
    NcclProfilerPluginTest.run(
        shm,
        true,
        driver().toString(),
        NcclProfilerPluginTest.LIB.toAbsolutePath().toString(),
        "5",
        "2",
        "100",
        "1",
        "1000000",
        "0");
  }

  /** The pid of a process that has exited. */
  static long deadPid() throws Exception {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    return p.pid();
  }

  /** Writes a block's extension fields as another writer would have: pid, flags, heartbeat. */
  static void rewrite(Path block, long pid, int flags, Instant heartbeat) throws Exception {
    NcclBlockFile f = NcclBlockFile.open(block);
    int ext = CounterBlock.sizeOf(f.block().worldSize(), f.block().buckets());
    try (FileChannel ch = FileChannel.open(block, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      ch.write(b.clear().putLong(0, pid), ext + NcclBlockFile.X_PID);
      ch.write(b.clear().limit(4).putInt(0, flags), ext + NcclBlockFile.X_FLAGS);
      long ns = heartbeat.getEpochSecond() * 1_000_000_000L + heartbeat.getNano();
      ch.write(b.clear().putLong(0, ns), ext + NcclBlockFile.X_HEARTBEAT_NS);
    }
  }

  @Test
  void aCrashedJobsBlocksAreRemovedOnceTheyHaveNotMovedForStaleAfter(@TempDir Path shm)
      throws Exception {
    crashedJob(shm);
    assertThat(NcclBlockFile.open(block(shm, 0)).header().writerLocks()).isTrue();
    NcclSidecar s = sidecar(shm, Duration.ofMillis(300));
    assertThat(s.reportOnce()).hasSize(2); // their last counters are published first
    assertThat(block(shm, 0)).exists();
    Thread.sleep(400);
    s.reportOnce();
    assertThat(block(shm, 0)).doesNotExist();
    assertThat(block(shm, 1)).doesNotExist();
    assertThat(block(shm, 0).getParent()).doesNotExist();
    assertThat(s.removed()).isEqualTo(2);
    assertThat(s.following()).isZero();
  }

  /**
   * A live writer that publishes nothing (stopped, or hung without its publisher) and whose pid is
   * not a process here (another PID namespace): its lock keeps its blocks. Once it is killed, they
   * go.
   */
  @Test
  void aLiveWritersBlocksAreNeverRemovedWhateverItsPidSays(@TempDir Path shm) throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
                driver().toString(),
                NcclProfilerPluginTest.LIB.toAbsolutePath().toString(),
                "6",
                "2",
                "100",
                "1",
                "1000000",
                "0")
            .redirectErrorStream(true);
    pb.environment().put("COLLSCOPE_SHM_DIR", shm.toString());
    pb.environment().put("COLLSCOPE_NCCL_NO_THREAD", "1"); // nothing moves after the run
    pb.environment().put("COLLSCOPE_DRIVER_NO_FINALIZE", "1");
    pb.environment().put("COLLSCOPE_DRIVER_HOLD", "1");
    Process writer = pb.start();
    try {
      BufferedReader out =
          new BufferedReader(
              new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8));
      for (String l; (l = out.readLine()) != null && !l.equals("holding"); ) {}
      long dead = deadPid();
      for (int r = 0; r < 2; r++) {
        rewrite(
            block(shm, r), dead, NcclBlockFile.FLAG_WRITER_LOCK, Instant.now().minusSeconds(7200));
      }
      NcclSidecar s = sidecar(shm, Duration.ZERO);
      for (int i = 0; i < 3; i++) {
        s.reportOnce();
        Thread.sleep(50);
      }
      assertThat(block(shm, 0)).exists();
      assertThat(block(shm, 1)).exists();
      assertThat(s.following()).as("still followed: its writer lives").isEqualTo(2);
      writer.destroyForcibly(); // SIGKILL: no finalize, no cleanup of its own
      assertThat(writer.waitFor(10, TimeUnit.SECONDS)).isTrue();
      s.reportOnce();
      assertThat(block(shm, 0)).doesNotExist();
      assertThat(block(shm, 1)).doesNotExist();
      assertThat(s.removed()).isEqualTo(2);
    } finally {
      writer.destroyForcibly();
    }
  }

  /**
   * Blocks of a plugin from before the writer's lock carry only a pid: removed when that pid is no
   * process here and the writer's last heartbeat is an hour old; a live pid keeps its block, and a
   * block retired early (pid gone, heartbeat recent) goes once its heartbeat is old enough.
   */
  @Test
  void anOlderPluginsBlockGoesOnlyWhenItsPidIsGoneAndItsHeartbeatIsOld(@TempDir Path shm)
      throws Exception {
    crashedJob(shm);
    long dead = deadPid();
    Instant old = Instant.now().minus(NcclSidecar.LEGACY_REMOVE_AFTER).minusSeconds(60);
    rewrite(block(shm, 0), dead, 0, Instant.now());
    rewrite(block(shm, 1), ProcessHandle.current().pid(), 0, old);
    NcclSidecar s = sidecar(shm, Duration.ZERO);
    s.reportOnce();
    assertThat(block(shm, 0)).as("pid gone, heartbeat recent").exists();
    assertThat(block(shm, 1)).as("pid alive").exists();
    assertThat(s.following()).as("rank 0 no longer followed").isEqualTo(1);
    rewrite(block(shm, 0), dead, 0, old);
    s.reportOnce();
    assertThat(block(shm, 0)).doesNotExist();
    assertThat(block(shm, 1)).exists();
    assertThat(s.removed()).isEqualTo(1);
  }

  /** A temporary file of an init that died before naming its block: removed once it is old. */
  @Test
  void aTemporaryFileOfADeadInitIsRemovedALiveOnesIsNot(@TempDir Path shm) throws Exception {
    Path comm = Files.createDirectories(shm.resolve("00000000000000aa"));
    Path dead = Files.write(comm.resolve("rank-0.blk." + deadPid() + ".tmp"), new byte[4096]);
    Path live =
        Files.write(
            comm.resolve("rank-1.blk." + ProcessHandle.current().pid() + ".tmp"), new byte[4096]);
    Path young = Files.write(comm.resolve("rank-2.blk." + deadPid() + ".tmp"), new byte[4096]);
    FileTime twoMinutesAgo = FileTime.from(Instant.now().minusSeconds(120));
    Files.setLastModifiedTime(dead, twoMinutesAgo);
    Files.setLastModifiedTime(live, twoMinutesAgo);
    NcclSidecar s = sidecar(shm, Duration.ofSeconds(60));
    assertThat(s.reportOnce()).isEmpty();
    assertThat(dead).doesNotExist();
    assertThat(live).exists();
    assertThat(young).exists();
    List<Path> left;
    try (var files = Files.list(comm)) {
      left = files.toList();
    }
    assertThat(left).containsExactlyInAnyOrder(live, young);
  }
}
