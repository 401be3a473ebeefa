package io.collscope.nccl;

import io.collscope.avro.CounterSnapshot;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.counters.TornSnapshotException;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.CompactPeers;
import io.collscope.model.RankTotals;
import io.collscope.schema.Snapshots;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code collscope emit --source nccl}: the node's sidecar for NCCL jobs. Every interval it looks
 * for the counter blocks the profiler plugin creates under {@code DIR/<commHash>/rank-<r>.blk},
 * reads each with {@link SnapshotReader} (the same seqlock read as the kernels' blocks) and sends a
 * {@link CounterSnapshot} of backend {@code nccl} per block to the sink.
 *
 * <p>Training processes come and go while the sidecar runs. Each communicator instance (one NCCL
 * {@code init} of the plugin) gets its own boot_id: this sidecar's boot plus the instance id the
 * plugin drew, so a restarted job — or a restarted sidecar — starts a fresh baseline and never
 * looks like counters going backwards. A block is read one last time and then dropped when its
 * communicator was finalized, when it was replaced by a new instance under the same name, when it
 * disappeared, or when its writer is gone and the block has not moved for {@code staleAfter}.
 *
 * <p>With {@code removeFinished}, the sidecar is the blocks' last reader and removes the files it
 * is done with: a finalized block after its last read, and the block of a writer that died without
 * finalizing (killed, crashed) once the writer is proven gone. Never a live writer's: the plugin
 * holds a write lock on its file while it lives (the kernel releases it however the process ends),
 * and a block whose lock is held is never removed, however long it has not moved and whatever its
 * pid says (a writer in another PID namespace, a stopped one). Blocks of plugins from before the
 * lock ({@link NcclBlockFile.Header#writerLocks()} false) are removed only when their pid is not a
 * process here and their writer's last heartbeat is {@link #LEGACY_REMOVE_AFTER} old. Left-over
 * temporary files of an init that never finished ({@code rank-R.blk.PID.tmp}) go once their lock is
 * free, their pid is not a process here and they are {@code staleAfter} old.
 *
 * <p>Not thread-safe: one reporter thread calls {@link #reportOnce}.
 */
public final class NcclSidecar {

  private static final Logger LOG = LoggerFactory.getLogger(NcclSidecar.class);
  private static final Pattern BLOCK = Pattern.compile("rank-\\d+\\.blk");
  private static final Pattern TMP = Pattern.compile("rank-\\d+\\.blk\\.(\\d+)\\.tmp");

  /**
   * How old a block of a plugin from before the writer's lock must be (its last heartbeat) before
   * its file is removed, its pid being no process here: long enough that a writer stopped for a
   * while in another PID namespace is not taken for gone.
   */
  public static final Duration LEGACY_REMOVE_AFTER = Duration.ofHours(1);

  /** What the sidecar stamps on every record besides what each block says. */
  public record Identity(String cluster, String job, String host, String bootId) {}

  private final Path dir;
  private final Identity identity;
  private final SnapshotSink sink;
  private final Duration staleAfter;
  private final boolean removeFinished;
  private final int compactFrom;
  private final Map<Path, Entry> live = new LinkedHashMap<>();
  private final Set<Object> retired = new HashSet<>();
  // Retired blocks not removed yet (writers not proven gone), checked again every interval.
  private final Map<Path, Object> lingering = new LinkedHashMap<>();
  private long removed;
  private long published;
  private long tornSkips;
  private long instances;

  private static final class Entry {
    final NcclBlockFile file;
    final Object fileKey;
    final SnapshotReader reader;
    final String bootId;
    long seq;
    long lastVersion = -1;
    long unchangedSinceNs = System.nanoTime();
    long graphRefusedLogged;
    boolean kernelOffLogged;

    /** By collective type: the highest key of the arrival ring already published. */
    final long[] timedSeen = new long[NcclBlockFile.FUNCS.length];

    /** Which peers this rank's compact records list (null: the communicator is published dense). */
    final CompactPeers.Selector selector;

    Entry(NcclBlockFile file, Object fileKey, String bootId, boolean compact) {
      this.file = file;
      this.fileKey = fileKey;
      this.reader = new SnapshotReader(file.block());
      this.bootId = bootId;
      this.selector = compact ? new CompactPeers.Selector(CompactPeers.DEFAULT_MAX_PEERS) : null;
    }
  }

  /** Communicators from {@link CompactPeers#DEFAULT_COMPACT_FROM} ranks are published compact. */
  public NcclSidecar(
      Path dir, Identity identity, SnapshotSink sink, Duration staleAfter, boolean removeFinished) {
    this(dir, identity, sink, staleAfter, removeFinished, CompactPeers.DEFAULT_COMPACT_FROM);
  }

  /**
   * Records of communicators of {@code compactFrom} ranks or more are compact (CounterSnapshot
   * version 6: the rank itself and the peers that stand out listed, the others summed): a
   * 1,024-rank data-parallel communicator's dense record is ~30 KB, its compact one ~650 bytes, and
   * the job keeps its state per rank small only for compact records (docs/SCALE.md).
   */
  public NcclSidecar(
      Path dir,
      Identity identity,
      SnapshotSink sink,
      Duration staleAfter,
      boolean removeFinished,
      int compactFrom) {
    if (compactFrom < 1) throw new IllegalArgumentException("compactFrom must be >= 1");
    this.compactFrom = compactFrom;
    this.dir = dir;
    this.identity = identity;
    this.sink = sink;
    this.staleAfter = staleAfter;
    this.removeFinished = removeFinished;
  }

  /** The communicator a block reports as: its NCCL commHash, unique per communicator and job. */
  public static String communicatorOf(NcclBlockFile.Header h) {
    return "nccl-" + h.commHex();
  }

  /** Blocks followed now. */
  public int following() {
    return live.size();
  }

  /** Communicator instances (block files) seen since start. */
  public long instances() {
    return instances;
  }

  public long published() {
    return published;
  }

  public long tornSkips() {
    return tornSkips;
  }

  /** Block and temporary files removed since start (finished communicators, dead writers). */
  public long removed() {
    return removed;
  }

  /** Finds new blocks, reads every followed one, sends their snapshots, drops finished ones. */
  public List<CounterSnapshot> reportOnce() {
    Map<Path, Object> tmps = new LinkedHashMap<>();
    Map<Path, Object> found = scan(tmps);
    List<CounterSnapshot> out = new ArrayList<>();
    // Replaced or vanished blocks: one last read of the old mapping, then drop it.
    for (var it = live.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Path, Entry> e = it.next();
      Object now = found.get(e.getKey());
      if (now == null || !now.equals(e.getValue().fileKey)) {
        read(e.getValue(), out);
        retire(e.getValue(), now == null ? "its file is gone" : "a new instance replaced it");
        it.remove();
      }
    }
    for (Map.Entry<Path, Object> f : found.entrySet()) {
      if (live.containsKey(f.getKey()) || retired.contains(f.getValue())) continue;
      try {
        NcclBlockFile b = NcclBlockFile.open(f.getKey());
        String boot = identity.bootId() + "-" + b.header().instanceHex();
        live.put(f.getKey(), new Entry(b, f.getValue(), boot, b.header().nranks() >= compactFrom));
        instances++;
        if (b.header().nNodes() > 1) {
          // The plugin joins arrivals through this node's files only; the job joins the ranks'
          // timed kernel lengths across nodes (the plugin's README), if every node runs a sidecar.
          LOG.info(
              "comm {} spans {} nodes: lateness between nodes is joined by the attribution job"
                  + " from each rank's timed collectives; every node needs its own sidecar"
                  + " (--node names it)",
              b.header().commHex(),
              b.header().nNodes());
        }
        LOG.info(
            "following {} (comm {} '{}', rank {}/{}, {} node(s), pid {}), boot {}",
            f.getKey(),
            b.header().commHex(),
            b.header().commName(),
            b.header().rank(),
            b.header().nranks(),
            b.header().nNodes(),
            b.header().pid(),
            boot);
      } catch (IOException | IllegalArgumentException e) {
        LOG.warn("skipping {}: {}", f.getKey(), e.getMessage());
        retired.add(f.getValue());
      }
    }
    for (var it = live.values().iterator(); it.hasNext(); ) {
      Entry e = it.next();
      NcclBlockFile.Extension x = read(e, out);
      String why = finished(e, x);
      if (why != null) {
        retire(e, why);
        it.remove();
        if (removeFinished) {
          if ((x != null && x.finalized()) || writerGone(e.file, e.file.path(), x) != null) {
            remove(e.file.path(), e.fileKey);
          } else {
            lingering.put(e.file.path(), e.fileKey);
          }
        }
      }
    }
    if (removeFinished) {
      removeLingering(found);
      removeDeadTemporaries(tmps);
    }
    return out;
  }

  private String finished(Entry e, NcclBlockFile.Extension x) {
    if (x != null && x.finalized()) return "its communicator was finalized";
    if (System.nanoTime() - e.unchangedSinceNs <= staleAfter.toNanos()) return null;
    String gone = writerGone(e.file, e.file.path(), x);
    if (gone != null) return gone + " and it has not moved for " + staleAfter;
    NcclBlockFile.Header h = e.file.header();
    if (!h.writerLocks() && ProcessHandle.of(h.pid()).isEmpty()) {
      // an old plugin's block: stop following it; its file goes once it is old enough
      return "its process " + h.pid() + " is gone and it has not moved for " + staleAfter;
    }
    return null;
  }

  /**
   * Why the block's writer is known to be gone, or null while it may be alive. The writer's lock is
   * the proof: it is held as long as the writer lives, in any PID namespace, and no other process
   * can hold it under the writer's pid. Without it (an old plugin's block), the pid is no process
   * here and the writer has not beaten for {@link #LEGACY_REMOVE_AFTER}.
   */
  static String writerGone(NcclBlockFile f, Path p, NcclBlockFile.Extension x) {
    NcclBlockFile.Header h = f.header();
    if (h.writerLocks()) {
      return lockFree(p) ? "its writer (pid " + h.pid() + ") is gone: its lock is free" : null;
    }
    if (ProcessHandle.of(h.pid()).isPresent() || x == null) return null;
    Duration quiet =
        Duration.ofNanos(Math.max(0, System.currentTimeMillis() * 1_000_000L - x.heartbeatNs()));
    if (quiet.compareTo(LEGACY_REMOVE_AFTER) < 0) return null;
    return "its process " + h.pid() + " is gone and its last heartbeat was " + quiet + " ago";
  }

  /**
   * Whether no process holds a lock on the file: a shared lock of our own (POSIX, what Java takes)
   * is refused while the plugin holds its write lock. Any doubt reads as held.
   */
  static boolean lockFree(Path p) {
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ);
        FileLock l = ch.tryLock(0, Long.MAX_VALUE, true)) {
      return l != null;
    } catch (OverlappingFileLockException | IOException e) {
      return false;
    }
  }

  /** Retired blocks whose writer was not proven gone then: removed once it is. */
  private void removeLingering(Map<Path, Object> found) {
    for (var it = lingering.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Path, Object> l = it.next();
      if (!l.getValue().equals(found.get(l.getKey()))) {
        it.remove(); // gone, or replaced by a new instance (which the scan follows)
        continue;
      }
      try {
        NcclBlockFile f = NcclBlockFile.open(l.getKey());
        if (writerGone(f, l.getKey(), f.readExtension(SnapshotReader.DEFAULT_MAX_RETRIES))
            != null) {
          remove(l.getKey(), l.getValue());
          it.remove();
        }
      } catch (IOException | IllegalArgumentException e) {
        it.remove();
      }
    }
  }

  /** rank-R.blk.PID.tmp left by an init that died between creating and naming its block. */
  private void removeDeadTemporaries(Map<Path, Object> tmps) {
    for (Map.Entry<Path, Object> t : tmps.entrySet()) {
      Matcher m = TMP.matcher(t.getKey().getFileName().toString());
      try {
        if (!m.matches()
            || ProcessHandle.of(Long.parseLong(m.group(1))).isPresent()
            || Files.getLastModifiedTime(t.getKey()).toMillis()
                > System.currentTimeMillis() - staleAfter.toMillis()
            || !lockFree(t.getKey())) {
          continue;
        }
      } catch (IOException | NumberFormatException e) {
        continue;
      }
      LOG.info("removing {}: an unfinished block of a process that is gone", t.getKey());
      remove(t.getKey(), t.getValue());
    }
  }

  /**
   * Removes a file the sidecar is done with, and its communicator's directory once empty. The file
   * is first renamed aside and checked to be the same file: a new instance of the same communicator
   * and rank renamed into the name meanwhile is put back, never removed.
   */
  private void remove(Path p, Object fileKey) {
    Path aside =
        p.resolveSibling(
            p.getFileName()
                + ".removing-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    try {
      try {
        Files.move(p, aside, StandardCopyOption.ATOMIC_MOVE);
      } catch (NoSuchFileException gone) {
        return;
      }
      if (!fileKey.equals(Files.readAttributes(aside, BasicFileAttributes.class).fileKey())) {
        try {
          Files.createLink(p, aside); // the new instance back under its name
        } catch (FileAlreadyExistsException newer) {
          LOG.warn("{} was replaced twice while being removed; left as {}", p, aside);
          return;
        }
        Files.delete(aside);
        return;
      }
      Files.delete(aside);
      removed++;
      try {
        Files.deleteIfExists(p.getParent()); // the last rank's file of its comm
      } catch (DirectoryNotEmptyException others) {
        // other ranks of the communicator still have blocks there
      }
    } catch (IOException ex) {
      LOG.warn("cannot remove {}: {}", p, ex.getMessage());
    }
  }

  private void retire(Entry e, String why) {
    retired.add(e.fileKey);
    NcclBlockFile.Header h = e.file.header();
    LOG.info(
        "done with {} (comm {} rank {}, boot {}): {}; {} snapshots",
        e.file.path(),
        h.commHex(),
        h.rank(),
        e.bootId,
        why,
        e.seq);
  }

  private NcclBlockFile.Extension read(Entry e, List<CounterSnapshot> out) {
    Counters c;
    try {
      c = e.reader.read();
    } catch (TornSnapshotException ex) {
      tornSkips++;
      LOG.warn("{}: skipped this interval: {}", e.file.path(), ex.getMessage());
      return null;
    }
    NcclBlockFile.Extension x = e.file.readExtension(SnapshotReader.DEFAULT_MAX_RETRIES);
    if (c.version() != e.lastVersion) {
      e.lastVersion = c.version();
      e.unchangedSinceNs = System.nanoTime();
    }
    if (x != null) {
      long refused = x.stat(NcclBlockFile.Stat.GRAPH_REFUSED);
      if (refused > e.graphRefusedLogged) {
        LOG.warn(
            "comm {} rank {}: {} graph-captured collectives refused (not counted: a captured"
                + " collective has no host event per replay); {} in all",
            e.file.header().commHex(),
            e.file.header().rank(),
            refused - e.graphRefusedLogged,
            refused);
        e.graphRefusedLogged = refused;
      }
      if (x.stat(NcclBlockFile.Stat.KERNEL_OFF) != 0 && !e.kernelOffLogged) {
        LOG.warn(
            "comm {} rank {}: timing stopped (collectives of this or another communicator of the"
                + " process were graph-captured without kernel-channel events while 1 in {} was"
                + " timed; it resumes when that communicator is destroyed); calls and bytes go on."
                + " Set COLLSCOPE_NCCL_KERNEL_SAMPLING=1 in the job to time graph-capturing jobs",
            e.file.header().commHex(),
            e.file.header().rank(),
            x.stat(NcclBlockFile.Stat.SAMPLING));
        e.kernelOffLogged = true;
      }
    }
    if (c.version() == 0) return x; // nothing published yet
    CounterSnapshot s = toRecord(e, c, x, Instant.now());
    sink.send(s);
    out.add(s);
    published++;
    return x;
  }

  private CounterSnapshot toRecord(Entry e, Counters c, NcclBlockFile.Extension x, Instant now) {
    NcclBlockFile.Header h = e.file.header();
    RankTotals totals = c.totals();
    CounterSnapshot s = totals.writeTo(new CounterSnapshot());
    s.setCluster(identity.cluster());
    s.setJob(identity.job());
    s.setCommunicator(communicatorOf(h));
    s.setCollective("nccl");
    s.setBackend("nccl");
    s.setWorldSize(h.nranks());
    s.setRank(h.rank());
    s.setHost(identity.host());
    s.setDevice("nccl pid " + h.pid());
    s.setBootId(e.bootId);
    s.setSeq(++e.seq);
    s.setEventTime(now);
    s.setCyclesPerSecond(c.cyclesPerSecond());
    s.setReadRetries(e.reader.retries());
    sample(s, x);
    timed(s, e.file.readTimed(e.timedSeen));
    net(s, x);
    return e.selector == null
        ? s
        : CompactPeers.writeCompact(s, totals, e.selector.select(totals, h.rank()));
  }

  /** The collectives timed since the previous record, for the job's cross-node join. */
  static void timed(CounterSnapshot s, NcclBlockFile.Timed t) {
    s.setTimedKeys(RankTotals.boxed(t.keys()));
    s.setTimedKernelNs(RankTotals.boxed(t.kernelNs()));
  }

  /**
   * The rank's network waits per peer (extension version 2), cumulative as the plugin keeps them:
   * only the peers with steps in either direction (a rank's network peers are its ring and tree
   * neighbours on other nodes, a handful), so a record of a large communicator stays small. A block
   * of version 1, or a read that lost the extension, gives none.
   */
  static void net(CounterSnapshot s, NcclBlockFile.Extension x) {
    List<Integer> peers = new ArrayList<>();
    List<List<Long>> arrays =
        List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    long[][] net = x == null ? null : x.net();
    if (net != null) {
      for (int p = 0; p < net[0].length; p++) {
        if (p == s.getRank() || net[1][p] == 0 && net[3][p] == 0) continue;
        peers.add(p);
        for (int a = 0; a < arrays.size(); a++) arrays.get(a).add(net[a][p]);
      }
    }
    s.setNetPeers(peers);
    s.setNetSendWaitNs(arrays.get(0));
    s.setNetSendSteps(arrays.get(1));
    s.setNetRecvWaitNs(arrays.get(2));
    s.setNetRecvSteps(arrays.get(3));
  }

  /**
   * The plugin times 1 collective in SAMPLING by its kernel-channel events and weights them: the
   * record says so, with the collectives timed so far as its sample. The statistics are read just
   * after the counters, so TIMED may already count a collective the counters do not: capped at the
   * calls.
   */
  static void sample(CounterSnapshot s, NcclBlockFile.Extension x) {
    if (x == null) return;
    long every = x.stat(NcclBlockFile.Stat.SAMPLING);
    if (every <= 1 || every > Snapshots.MAX_SAMPLE_EVERY) return;
    s.setSampleEvery((int) every);
    s.setSampledCalls(Math.min(x.stat(NcclBlockFile.Stat.TIMED), s.getCalls()));
  }

  /**
   * Block files under DIR/&lt;comm&gt;/, with their file keys (inode: a replaced file differs); the
   * temporary files of blocks being created go into {@code tmps}.
   */
  private Map<Path, Object> scan(Map<Path, Object> tmps) {
    Map<Path, Object> found = new LinkedHashMap<>();
    if (!Files.isDirectory(dir)) return found;
    try (DirectoryStream<Path> comms = Files.newDirectoryStream(dir, Files::isDirectory)) {
      for (Path comm : comms) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(comm)) {
          for (Path f : files) {
            String name = f.getFileName().toString();
            boolean block = BLOCK.matcher(name).matches();
            if (!block && !TMP.matcher(name).matches()) continue;
            try {
              (block ? found : tmps)
                  .put(f, Files.readAttributes(f, BasicFileAttributes.class).fileKey());
            } catch (NoSuchFileException gone) {
              // removed between the listing and the stat
            }
          }
        } catch (NoSuchFileException gone) {
          // a communicator directory removed meanwhile
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
    return found;
  }
}
