package io.collscope.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import jcuda.driver.CUipcMemHandle;

/**
 * Where the processes of one communicator, one per GPU, swap their CUDA IPC memory handles: a
 * directory every process can see (node-local, e.g. /dev/shm/collscope-JOB). Each rank writes
 * {@code rank-R.handles} atomically (temp file, then rename), waits for every other rank's, and
 * after opening them all writes {@code rank-R.ready} and waits for every rank to be ready, so no
 * kernel starts while a peer's memory is not yet mapped. Bounded: a missing rank is an error that
 * names it, never a hang.
 */
final class IpcRendezvous {

  /** What one rank publishes: the IPC handles of its ring slots and its sync region. */
  record Published(int rank, long pid, int device, byte[] slots, byte[] sync) {}

  private final Path dir;
  private final int rank;
  private final int worldSize;
  private final Duration timeout;

  IpcRendezvous(Path dir, int rank, int worldSize, Duration timeout) {
    this.dir = dir;
    this.rank = rank;
    this.worldSize = worldSize;
    this.timeout = timeout;
  }

  void publish(Published p) {
    Properties props = new Properties();
    props.setProperty("rank", Integer.toString(p.rank()));
    props.setProperty("pid", Long.toString(p.pid()));
    props.setProperty("device", Integer.toString(p.device()));
    props.setProperty("slots", HexFormat.of().formatHex(p.slots()));
    props.setProperty("sync", HexFormat.of().formatHex(p.sync()));
    write("rank-" + rank + ".handles", props);
  }

  /** Every rank's published handles, index = rank; blocks until all are there. */
  Published[] awaitAll() throws InterruptedException {
    Published[] out = new Published[worldSize];
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int r = 0; r < worldSize; r++) {
      Path f = dir.resolve("rank-" + r + ".handles");
      awaitFile(f, deadline, "rank " + r + " never published its IPC handles");
      Properties p = read(f);
      out[r] =
          new Published(
              Integer.parseInt(p.getProperty("rank")),
              Long.parseLong(p.getProperty("pid")),
              Integer.parseInt(p.getProperty("device")),
              HexFormat.of().parseHex(p.getProperty("slots")),
              HexFormat.of().parseHex(p.getProperty("sync")));
    }
    return out;
  }

  void ready() {
    Properties p = new Properties();
    p.setProperty("rank", Integer.toString(rank));
    write("rank-" + rank + ".ready", p);
  }

  void awaitReady() throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int r = 0; r < worldSize; r++) {
      awaitFile(dir.resolve("rank-" + r + ".ready"), deadline, "rank " + r + " never became ready");
    }
  }

  private void awaitFile(Path f, long deadline, String what) throws InterruptedException {
    while (!Files.exists(f)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "rendezvous in " + dir + ": " + what + " within " + timeout.toSeconds() + " s");
      }
      Thread.sleep(20);
    }
  }

  private void write(String name, Properties p) {
    try {
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, name, ".tmp");
      try (var w = Files.newBufferedWriter(tmp)) {
        p.store(w, "collscope rendezvous");
      }
      Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous in " + dir, e);
    }
  }

  private static Properties read(Path f) {
    Properties p = new Properties();
    try (var r = Files.newBufferedReader(f)) {
      p.load(r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  /** Removes one rank's rendezvous files, when it leaves. */
  static void clean(Path dir, int rank) {
    for (String suffix : List.of(".handles", ".ready")) {
      try {
        Files.deleteIfExists(dir.resolve("rank-" + rank + suffix));
      } catch (IOException ignored) {
        // best effort: a stale file is overwritten by the next run's rank
      }
    }
  }

  // JCuda keeps the 64 handle bytes in a private field; they are what crosses processes.
  private static final Field RESERVED;

  static {
    try {
      RESERVED = CUipcMemHandle.class.getDeclaredField("reserved");
      RESERVED.setAccessible(true);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  static byte[] bytes(CUipcMemHandle h) {
    try {
      return ((byte[]) RESERVED.get(h)).clone();
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  static CUipcMemHandle handle(byte[] b) {
    CUipcMemHandle h = new CUipcMemHandle();
    try {
      byte[] dst = (byte[]) RESERVED.get(h);
      System.arraycopy(b, 0, dst, 0, Math.min(b.length, dst.length));
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    return h;
  }
}
