package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.CompactPeers;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import io.collscope.schema.Snapshots;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The committed {@code libnccl-profiler-collscope.so}, driven the way NCCL drives it by {@code
 * src/test/c/nccl_profiler_driver.c} (no NCCL, no GPU: made-up %globaltimer values), fills counter
 * blocks that {@link NcclBlockFile} and {@link SnapshotReader} read back with the straggler in
 * them, and the sidecar publishes them. {@code src/test/c/nccl_comms_driver.c} drives one rank's
 * process with several communicators and one event mask, as NCCL does. The drivers are compiled
 * with gcc (a test tool: see dev/setup-test-tools.sh).
 */
class NcclProfilerPluginTest {

  static final Path SOURCES = Path.of("src/main/c/nccl-profiler");
  static final Path LIB =
      Path.of("src/main/resources/collscope/nccl/libnccl-profiler-collscope.so");
  static final long COMM = 0xc0115c09eL;
  static Path driver;
  static Path commsDriver;

  @BeforeAll
  static void compileTheDriver() throws Exception {
    driver = NcclTestPrograms.compile("nccl-profiler-driver", "nccl_profiler_driver.c", "-ldl");
    commsDriver =
        NcclTestPrograms.compile("nccl-comms-driver", "nccl_comms_driver.c", "-ldl", "-lpthread");
  }

  static String run(Path shm, String... cmd) throws Exception {
    return run(shm, false, cmd);
  }

  static String run(Path shm, boolean noFinalize, String... cmd) throws Exception {
    return run(shm, noFinalize, 1, cmd);
  }

  /** sampling: COLLSCOPE_NCCL_KERNEL_SAMPLING (1: every collective timed, exact totals). */
  static String run(Path shm, boolean noFinalize, int sampling, String... cmd) throws Exception {
    return run(shm, noFinalize, sampling, java.util.Map.of(), cmd);
  }

  static String run(
      Path shm, boolean noFinalize, int sampling, java.util.Map<String, String> env, String... cmd)
      throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    if (noFinalize) pb.environment().put("COLLSCOPE_DRIVER_NO_FINALIZE", "1");
    pb.environment().put("COLLSCOPE_NCCL_KERNEL_SAMPLING", "" + sampling);
    if (shm != null) {
      pb.environment().put("COLLSCOPE_SHM_DIR", shm.toString());
      pb.environment().put("COLLSCOPE_NCCL_NO_THREAD", "1");
    }
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(String.join(" ", cmd) + "\n" + out).isZero();
    return out;
  }

  /** Rank lateRank's kernels start lateNs after the others' (and end with them). */
  static void drive(
      Path shm, int version, int ranks, int n, int lateRank, long lateNs, int captured)
      throws Exception {
    run(
        shm,
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "" + version,
        "" + ranks,
        "" + n,
        "" + lateRank,
        "" + lateNs,
        "" + captured);
  }

  static Path block(Path shm, int rank) {
    return shm.resolve(String.format("%016x", COMM)).resolve("rank-" + rank + ".blk");
  }

  @Test
  void theCommittedLibraryWasBuiltFromTheseSources() throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    sha.update(Files.readAllBytes(SOURCES.resolve("collscope_profiler.c")));
    sha.update(Files.readAllBytes(SOURCES.resolve("collscope_block.h")));
    sha.update(Files.readAllBytes(Path.of("src/main/cuda/counter_block.h")));
    try (Stream<Path> headers = Files.list(SOURCES.resolve("nccl"))) {
      for (Path h :
          headers.filter(p -> p.toString().endsWith(".h")).sorted().toList()) { // as `nccl/*.h`
        sha.update(Files.readAllBytes(h));
      }
    }
    assertThat(HexFormat.of().formatHex(sha.digest()))
        .as("the committed .so is stale: run %s/build.sh and commit it", SOURCES)
        .isEqualTo(Files.readString(Path.of(LIB + ".sha256")).trim());
    // Both architectures are built from these sources in one build.sh run (one hash): x86-64 and
    // aarch64 (Grace-based nodes), each with NCCL's entry points.
    for (var lib :
        java.util.Map.of(
                LIB,
                EM_X86_64,
                LIB.resolveSibling("aarch64").resolve(LIB.getFileName()),
                EM_AARCH64)
            .entrySet()) {
      byte[] bytes = Files.readAllBytes(lib.getKey());
      String elf = new String(bytes, StandardCharsets.ISO_8859_1);
      assertThat(elf)
          .as("%s", lib.getKey())
          .startsWith("\u007fELF")
          .contains("ncclProfiler_v5", "ncclProfiler_v6");
      int machine = (bytes[18] & 0xff) | (bytes[19] & 0xff) << 8; // e_machine, little-endian
      assertThat(machine).as("e_machine of %s", lib.getKey()).isEqualTo(lib.getValue());
    }
  }

  /** ELF e_machine values: the architectures the plugin is built for. */
  static final int EM_X86_64 = 62;

  static final int EM_AARCH64 = 183;

  /**
   * Bytes are counted from each collective's datatype: the plugin maps a datatype name to its size
   * once per pointer it sees (NCCL passes its own constant strings), so names at new addresses,
   * alternating types and a copy of an earlier name must each be matched again by their text.
   */
  @Test
  void bytesFollowEachCollectivesDatatypeWhateverAddressItsNameIsAt(@TempDir Path shm)
      throws Exception {
    run(
        shm,
        false,
        64,
        java.util.Map.of("COLLSCOPE_DRIVER_MIXED_TYPES", "1"),
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "5",
        "2",
        "1000",
        "1",
        "0",
        "0");
    for (int r = 0; r < 2; r++) {
      Counters c = new SnapshotReader(NcclBlockFile.open(block(shm, r)).block()).read();
      assertThat(c.calls()).isEqualTo(1000);
      // per 4 collectives of 1024 elements: float32, bfloat16, float32 (a copy), int64
      assertThat(c.totals().get(io.collscope.model.Counter.BYTES))
          .as("rank %d bytes", r)
          .isEqualTo(250L * 1024 * (4 + 2 + 4 + 8));
    }
  }

  @ParameterizedTest(name = "profiler interface v{0}")
  @ValueSource(ints = {5, 6})
  void theLateRankIsLateInItsPeersBlocksAndWaitsForNoOne(int version, @TempDir Path shm)
      throws Exception {
    drive(shm, version, 2, 1000, 1, 2_000_000, 0);
    NcclBlockFile r0 = NcclBlockFile.open(block(shm, 0));
    NcclBlockFile r1 = NcclBlockFile.open(block(shm, 1));
    assertThat(r0.header().commId()).isEqualTo(COMM);
    assertThat(r0.header().rank()).isZero();
    assertThat(r1.header().rank()).isEqualTo(1);
    assertThat(r0.header().instance()).isNotEqualTo(r1.header().instance());
    Counters c0 = new SnapshotReader(r0.block()).read();
    Counters c1 = new SnapshotReader(r1.block()).read();
    // 1000 all-reduces of 1024 floats; cycles are ns
    assertThat(c0.calls()).isEqualTo(1000);
    assertThat(c1.calls()).isEqualTo(1000);
    assertThat(c0.totals().get(io.collscope.model.Counter.BYTES)).isEqualTo(4096L * 1000);
    assertThat(c0.cyclesPerSecond()).isEqualTo(1_000_000_000L);
    // rank 0 saw rank 1 start 2 ms after it every time, and waited that long on it
    assertThat(c0.totals().peerLateCycles()).containsExactly(0, 2_000_000_000L);
    assertThat(c0.peerArrivedLast()).containsExactly(0, 1000);
    assertThat(c0.peerWaitCycles()).containsExactly(0, 2_000_000_000L);
    assertThat(c0.cycles(Phase.WAIT)).isEqualTo(2_000_000_000L);
    // rank 1 came last every time: it waited for no one; its kernel is the collective's own cost
    assertThat(c1.totals().peerLateCycles()).containsExactly(0, 0);
    assertThat(c1.peerArrivedLast()).containsExactly(0, 1000);
    assertThat(c1.cycles(Phase.WAIT)).isZero();
    assertThat(c1.cycles(Phase.REDUCE)).isEqualTo(10_000L * 1000);
    NcclBlockFile.Extension x0 = r0.readExtension(100);
    assertThat(x0.finalized()).isTrue();
    assertThat(x0.stat(NcclBlockFile.Stat.PEERS_SEEN)).isEqualTo(1);
    assertThat(x0.stat(NcclBlockFile.Stat.UNMATCHED)).isZero();
    assertThat(x0.stat(NcclBlockFile.Stat.DROPPED)).isZero();
    assertThat(x0.funcs()[0][0]).as("AllReduce calls").isEqualTo(1000);
  }

  @Test
  void sampledKernelEventsStandForEveryCollectiveAndAreEnabledOnlyForTheTimedOnes(@TempDir Path shm)
      throws Exception {
    // 1 collective in 10 timed (chosen by a hash of the collective's number): each timed one
    // stands for 10 in the straggler totals, NCCL asked for KernelCh on few collectives, and
    // calls and bytes still count every one
    String out =
        run(
            shm,
            false,
            10,
            driver.toString(),
            LIB.toAbsolutePath().toString(),
            "5",
            "2",
            "1000",
            "1",
            "2000000",
            "0");
    int kernelColls =
        Integer.parseInt(
            out.lines()
                .filter(l -> l.startsWith("kernel-channel collectives "))
                .findFirst()
                .orElseThrow()
                .substring("kernel-channel collectives ".length()));
    // each rank's own ~100, and (one mask per process) the other rank's choice the collective
    // before: about 300 of the 2000 enqueues, against 2000 without sampling
    assertThat(kernelColls).isBetween(150, 450);
    NcclBlockFile r0 = NcclBlockFile.open(block(shm, 0));
    NcclBlockFile r1 = NcclBlockFile.open(block(shm, 1));
    Counters c0 = new SnapshotReader(r0.block()).read();
    Counters c1 = new SnapshotReader(r1.block()).read();
    assertThat(c0.calls()).isEqualTo(1000);
    assertThat(c0.totals().get(io.collscope.model.Counter.BYTES)).isEqualTo(4096L * 1000);
    NcclBlockFile.Extension x0 = r0.readExtension(100);
    long timed = x0.stat(NcclBlockFile.Stat.TIMED);
    assertThat(timed).isBetween(60L, 140L);
    assertThat(r1.readExtension(100).stat(NcclBlockFile.Stat.TIMED)).isEqualTo(timed);
    long stands = 10 * timed; // collectives the timed ones stand for
    assertThat(c0.totals().peerLateCycles()).containsExactly(0, 2_000_000L * stands);
    assertThat(c0.peerArrivedLast()).containsExactly(0, stands);
    assertThat(c0.cycles(Phase.WAIT)).isEqualTo(2_000_000L * stands);
    assertThat(c1.cycles(Phase.REDUCE)).isEqualTo(10_000L * stands);
    assertThat(x0.stat(NcclBlockFile.Stat.SAMPLING)).isEqualTo(10);
    assertThat(x0.stat(NcclBlockFile.Stat.UNMATCHED)).isZero();
    assertThat(x0.stat(NcclBlockFile.Stat.STALE)).isZero();
    assertThat(x0.funcs()[0][0]).as("AllReduce calls").isEqualTo(1000);
    // The sidecar's records say so: 1 in 10, and the timed collectives as their sample, so the
    // job divides the weighted totals by 10 x timed rather than by the calls.
    List<CounterSnapshot> sent = new ArrayList<>();
    new NcclSidecar(
            shm,
            new NcclSidecar.Identity("c", "j", "h", "sidecar-boot"),
            new Collecting(sent),
            Duration.ofSeconds(60),
            true)
        .reportOnce();
    assertThat(sent).hasSize(2);
    for (CounterSnapshot s : sent) {
      assertThat(s.getSampleEvery()).isEqualTo(10);
      assertThat(s.getSampledCalls()).isEqualTo(timed);
      assertThat(s.getWaitCycles() + s.getReduceCycles()).isPositive();
    }
  }

  /** Kernel-channel pairs enqueued: {all, among the captured, after the capture}. */
  static int[] kernelChannelPairs(String out) {
    int[] r = new int[3];
    for (String l : out.lines().toList()) {
      if (l.startsWith("kernel-channel collectives ")) {
        r[0] = Integer.parseInt(l.substring("kernel-channel collectives ".length()));
      } else if (l.startsWith("kernel-channel captured ")) {
        String[] f = l.split(" ");
        r[1] = Integer.parseInt(f[2]);
        r[2] = Integer.parseInt(f[4]);
      }
    }
    return r;
  }

  /** 1 in 10 timed; EAGER collectives, 7 captured, 100 eager after them; rank 1 late by 2 ms. */
  static String driveCapture(Path shm, int eager) throws Exception {
    return run(
        shm,
        false,
        10,
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "5",
        "2",
        "" + eager,
        "1",
        "2000000",
        "7",
        "0",
        "100");
  }

  @Test
  void aCaptureWhoseFirstCollectiveHasNoKernelEventsStopsTimingAndNeverMixesThem(@TempDir Path shm)
      throws Exception {
    // collective 101 is not timed: the capture starts without KernelCh. With KernelCh on a later
    // captured or eager collective NCCL 2.28.9's profiler counters disagree and
    // ncclCommDestroy hangs (run 60), so none gets it again; calls and bytes go on
    String out = driveCapture(shm, 101);
    assertThat(kernelChannelPairs(out)[1]).as("captured with KernelCh").isZero();
    assertThat(kernelChannelPairs(out)[2]).as("after the capture with KernelCh").isZero();
    assertThat(out).contains("timing stops on every communicator of this process");
    for (int r = 0; r < 2; r++) {
      NcclBlockFile b = NcclBlockFile.open(block(shm, r));
      assertThat(new SnapshotReader(b.block()).read().calls()).isEqualTo(201);
      NcclBlockFile.Extension x = b.readExtension(100);
      assertThat(x.stat(NcclBlockFile.Stat.KERNEL_OFF)).isEqualTo(1);
      assertThat(x.stat(NcclBlockFile.Stat.TIMED)).as("before the capture only").isBetween(1L, 30L);
      assertThat(x.stat(NcclBlockFile.Stat.GRAPH_REFUSED)).isEqualTo(7);
      assertThat(x.stat(NcclBlockFile.Stat.GRAPH_MIXED)).isZero();
    }
  }

  @Test
  void aCaptureWhoseFirstCollectiveHasKernelEventsKeepsThemForAllItsCollectives(@TempDir Path shm)
      throws Exception {
    // collective 102 is timed: every captured collective gets KernelCh (both ranks: 14), and
    // sampling goes on after the capture
    String out = driveCapture(shm, 102);
    assertThat(kernelChannelPairs(out)[1]).as("captured with KernelCh").isEqualTo(14);
    assertThat(kernelChannelPairs(out)[2]).as("after the capture with KernelCh").isPositive();
    assertThat(out).doesNotContain("timing stops");
    NcclBlockFile r0 = NcclBlockFile.open(block(shm, 0));
    NcclBlockFile.Extension x = r0.readExtension(100);
    assertThat(x.stat(NcclBlockFile.Stat.KERNEL_OFF)).isZero();
    long timed = x.stat(NcclBlockFile.Stat.TIMED);
    assertThat(timed).isBetween(10L, 40L);
    assertThat(new SnapshotReader(r0.block()).read().peerArrivedLast())
        .containsExactly(0, 10 * timed);
  }

  @Test
  void graphCapturedCollectivesAreRefusedAndCountedNotCountedAsCollectives(@TempDir Path shm)
      throws Exception {
    drive(shm, 5, 2, 100, 1, 1_000_000, 7);
    for (int r = 0; r < 2; r++) {
      NcclBlockFile b = NcclBlockFile.open(block(shm, r));
      assertThat(new SnapshotReader(b.block()).read().calls()).isEqualTo(100);
      assertThat(b.readExtension(100).stat(NcclBlockFile.Stat.GRAPH_REFUSED)).isEqualTo(7);
    }
  }

  @Test
  void aLostChannelEventDoesNotStopTheCounting(@TempDir Path shm) throws Exception {
    // rank 0 never hears the end of one channel of every 50th collective; no finalize, which
    // would close every open collective and hide a publisher stuck on the first lost one
    run(
        shm,
        true,
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "6",
        "2",
        "1000",
        "1",
        "2000000",
        "0",
        "50");
    NcclBlockFile r0 = NcclBlockFile.open(block(shm, 0));
    NcclBlockFile r1 = NcclBlockFile.open(block(shm, 1));
    // calls count every collective at its enqueue; the 980 whose channels all ended were timed
    // (a publisher stuck on the first lost one would have timed 24)
    assertThat(new SnapshotReader(r0.block()).read().calls()).isEqualTo(1000);
    assertThat(r0.readExtension(100).stat(NcclBlockFile.Stat.TIMED)).isEqualTo(980);
    assertThat(r0.readExtension(100).stat(NcclBlockFile.Stat.STALE)).isEqualTo(20);
    Counters c1 = new SnapshotReader(r1.block()).read();
    assertThat(c1.calls()).isEqualTo(1000);
    assertThat(r1.readExtension(100).stat(NcclBlockFile.Stat.UNMATCHED)).isEqualTo(20);
    assertThat(r1.readExtension(100).finalized()).isFalse();
  }

  /**
   * NCCL 2.28.9's CollNet path leaves the Coll event's nChannels at 0 while the channel events
   * come: each collective is complete once its channels have all stopped, not closed as stale (no
   * finalize here, which would close every open collective).
   */
  @Test
  void aCollNetCollectiveWithoutAChannelCountIsTimedNotClosedAsStale(@TempDir Path shm)
      throws Exception {
    run(
        shm,
        true,
        1,
        java.util.Map.of("COLLSCOPE_DRIVER_COLLNET", "1"),
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "6",
        "2",
        "200",
        "1",
        "1000000",
        "0");
    for (int r = 0; r < 2; r++) {
      NcclBlockFile b = NcclBlockFile.open(block(shm, r));
      NcclBlockFile.Extension x = b.readExtension(100);
      assertThat(x.stat(NcclBlockFile.Stat.TIMED)).as("rank %d timed", r).isEqualTo(200);
      assertThat(x.stat(NcclBlockFile.Stat.STALE)).as("rank %d stale", r).isZero();
    }
    Counters c0 = new SnapshotReader(NcclBlockFile.open(block(shm, 0)).block()).read();
    assertThat(c0.peerArrivedLast()).containsExactly(0, 200);
    assertThat(c0.totals().peerLateCycles()).containsExactly(0, 1_000_000L * 200);
  }

  /** ncclFuncToString's names (NCCL 2.28.9, src/collectives.cc) land in their type's counters. */
  @ParameterizedTest(name = "{0}")
  @ValueSource(
      strings = {
        "AllReduce=0",
        "AllGather=1",
        "ReduceScatter=2",
        "Broadcast=3",
        "Reduce=4",
        "AlltoAll=5",
        "Gather=6",
        "Scatter=6",
        "SendRecv=7"
      })
  void ncclsFunctionNamesCountUnderTheirCollectiveType(String nameAndIndex, @TempDir Path shm)
      throws Exception {
    String name = nameAndIndex.split("=")[0];
    int index = Integer.parseInt(nameAndIndex.split("=")[1]);
    run(
        shm,
        false,
        1,
        java.util.Map.of("COLLSCOPE_DRIVER_FUNC", name),
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "5",
        "2",
        "30",
        "-1",
        "0",
        "0");
    NcclBlockFile.Extension x = NcclBlockFile.open(block(shm, 0)).readExtension(100);
    for (int f = 0; f < NcclBlockFile.FUNCS.length; f++) {
      assertThat(x.funcs()[f][0])
          .as("%s calls counted as %s", name, NcclBlockFile.FUNCS[f])
          .isEqualTo(f == index ? 30 : 0);
    }
    assertThat(x.stat(NcclBlockFile.Stat.TIMED)).isEqualTo(30);
  }

  static String comms(Path shm, String mode) throws Exception {
    return run(shm, false, 2, commsDriver.toString(), LIB.toAbsolutePath().toString(), mode);
  }

  static NcclBlockFile.Extension extension(Path shm, long comm) throws Exception {
    return NcclBlockFile.open(shm.resolve(String.format("%016x", comm)).resolve("rank-0.blk"))
        .readExtension(100);
  }

  /**
   * Communicator A captures collectives, the first without KernelCh, while B samples on (1 in 2
   * timed). NCCL's profiler counters of A then disagree, and any later KernelCh collective of A
   * would hang its ncclCommDestroy: the mask is one per process, so none of A's collectives may get
   * KernelCh from B's choices while A lives. B is timed again once A is gone.
   */
  @Test
  void aCommunicatorThatCapturedWithoutKernelEventsGetsNoneFromAnotherOnesSampling(
      @TempDir Path shm) throws Exception {
    String out = comms(shm, "veto");
    assertThat(out)
        .contains("comm A captured with 0 without 5, kernel-channel after 0")
        .doesNotContain("would hang");
    long afterA =
        Long.parseLong(
            out.lines()
                .filter(l -> l.startsWith("B timed after A's finalize "))
                .findFirst()
                .orElseThrow()
                .substring("B timed after A's finalize ".length()));
    assertThat(afterA).as("B timed once A is gone").isBetween(100L, 200L);
    assertThat(out).contains("timing stops on every communicator of this process");
    NcclBlockFile.Extension a = extension(shm, 0xa0a0a0L);
    assertThat(a.stat(NcclBlockFile.Stat.KERNEL_OFF)).isEqualTo(1);
    assertThat(a.stat(NcclBlockFile.Stat.GRAPH_REFUSED)).isEqualTo(5);
    assertThat(a.stat(NcclBlockFile.Stat.GRAPH_MIXED)).isZero();
    NcclBlockFile.Extension b = extension(shm, 0xb0b0b0L);
    assertThat(b.stat(NcclBlockFile.Stat.KERNEL_OFF)).as("B at its finalize, A gone").isZero();
    assertThat(b.stat(NcclBlockFile.Stat.STALE)).isZero();
  }

  /**
   * The mask changes between NCCL's latch of a collective's mask and the plugin's CollApi event
   * (another thread destroys a communicator that kept KernelCh out): the plugin takes a collective
   * for timed only if NCCL sends its Coll event, which it does only for a latched KernelCh. Read
   * again at CollApi, the mask said KernelCh for collectives that had none: timed slots that never
   * completed, closed as stale (and on the other ranks, which timed them, unmatched).
   */
  @Test
  void aCollectiveIsTimedOnlyWhenNcclLatchedKernelEventsForIt(@TempDir Path shm) throws Exception {
    String out = comms(shm, "latch");
    long timed =
        Long.parseLong(
            out.lines()
                .filter(l -> l.startsWith("comm A "))
                .findFirst()
                .orElseThrow()
                .replaceAll(".* timed (\\d+):.*", "$1"));
    NcclBlockFile.Extension a = extension(shm, 0xa0a0a0L);
    assertThat(a.stat(NcclBlockFile.Stat.STALE)).isZero();
    assertThat(a.stat(NcclBlockFile.Stat.TIMED)).isEqualTo(timed).isPositive();
  }

  /**
   * Communicators created and destroyed on another thread while A's collectives go on: every one of
   * A's enqueues latches a mask that sends the plugin its CollApi event (an init that cleared the
   * mask for a moment let collectives through unseen: this rank's count of A's collectives, and
   * with it the choice of the timed ones, fell behind the other ranks').
   */
  @Test
  void anotherCommunicatorsInitNeverHidesACollectiveFromThePlugin(@TempDir Path shm)
      throws Exception {
    String out = comms(shm, "initrace");
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("enqueued (\\d+) latched without CollApi (\\d+)")
            .matcher(out);
    assertThat(m.find()).as(out).isTrue();
    assertThat(Long.parseLong(m.group(2))).isZero();
    Counters a =
        new SnapshotReader(
                NcclBlockFile.open(
                        shm.resolve(String.format("%016x", 0xa0a0a0L)).resolve("rank-0.blk"))
                    .block())
            .read();
    assertThat(a.calls()).isEqualTo(Long.parseLong(m.group(1)));
  }

  @Test
  void withoutALateRankNobodyIsLate(@TempDir Path shm) throws Exception {
    drive(shm, 6, 4, 300, -1, 0, 0);
    for (int r = 0; r < 4; r++) {
      Counters c = new SnapshotReader(NcclBlockFile.open(block(shm, r)).block()).read();
      assertThat(c.totals().peerLateCycles()).containsOnly(0L);
      assertThat(c.cycles(Phase.WAIT)).isZero();
    }
  }

  @Test
  void theSidecarPublishesEachInstanceUnderItsOwnBootAndRemovesFinishedBlocks(@TempDir Path shm)
      throws Exception {
    List<CounterSnapshot> sent = new ArrayList<>();
    NcclSidecar sidecar =
        new NcclSidecar(
            shm,
            new NcclSidecar.Identity("c", "j", "h", "sidecar-boot"),
            new Collecting(sent),
            Duration.ofSeconds(60),
            true);
    assertThat(sidecar.reportOnce()).isEmpty(); // nothing there yet: no error
    drive(shm, 5, 2, 200, 1, 1_000_000, 0);
    List<CounterSnapshot> first = sidecar.reportOnce();
    assertThat(first).hasSize(2);
    for (CounterSnapshot s : first) {
      assertThat(s.getBackend()).isEqualTo("nccl");
      assertThat(s.getCommunicator()).isEqualTo(String.format("nccl-%016x", COMM));
      assertThat(s.getWorldSize()).isEqualTo(2);
      assertThat(s.getSeq()).isEqualTo(1);
      assertThat(s.getCalls()).isEqualTo(200);
      assertThat(s.getBootId()).startsWith("sidecar-boot-");
    }
    assertThat(first.get(0).getBootId()).isNotEqualTo(first.get(1).getBootId());
    // finalized: read once, then the files (and the communicator's directory) are gone
    assertThat(shm.resolve(String.format("%016x", COMM))).doesNotExist();
    assertThat(sidecar.following()).isZero();
    // the job comes back: a new communicator instance, new boots, counters from zero
    drive(shm, 5, 2, 50, 1, 1_000_000, 0);
    List<CounterSnapshot> second = sidecar.reportOnce();
    assertThat(second).hasSize(2);
    assertThat(second).extracting(CounterSnapshot::getCalls).containsOnly(50L);
    assertThat(second)
        .extracting(CounterSnapshot::getBootId)
        .doesNotContainAnyElementsOf(first.stream().map(CounterSnapshot::getBootId).toList());
    assertThat(sidecar.instances()).isEqualTo(4);
    assertThat(sent).hasSize(4);
  }

  @Test
  void aCommunicatorFromTheCompactSizeIsPublishedCompactWithTheLateRankListedExactly(
      @TempDir Path shm) throws Exception {
    // 8 ranks stand in for a 1,024-rank data-parallel communicator: the size that makes records
    // compact is the sidecar's setting (128 by default), the form is the same.
    drive(shm, 6, 8, 300, 5, 1_000_000, 0);
    List<CounterSnapshot> compact = readingSidecar(shm, 8).reportOnce();
    List<CounterSnapshot> dense = readingSidecar(shm, 9).reportOnce();
    assertThat(compact).hasSize(8);
    assertThat(dense).hasSize(8).noneMatch(CompactPeers::isCompact);
    for (int i = 0; i < 8; i++) {
      CounterSnapshot s = compact.get(i);
      CounterSnapshot d = dense.get(i);
      assertThat(s.getRank()).isEqualTo(d.getRank());
      assertThat(Snapshots.validate(s)).as("rank %d", s.getRank()).isNull();
      assertThat(CompactPeers.isCompact(s)).isTrue();
      assertThat(s.getPeerIndex())
          .contains(s.getRank())
          .hasSizeLessThanOrEqualTo(CompactPeers.DEFAULT_MAX_PEERS)
          .hasSizeLessThan(8); // quiet peers are summed, not listed
      if (s.getRank() != 5) {
        assertThat(s.getPeerIndex()).as("rank %d lists the late rank", s.getRank()).contains(5);
        // A listed peer's counters are exact: the compact record says what the dense one says.
        assertThat(RankTotals.of(s).peerLateCycles()[5])
            .isEqualTo(RankTotals.of(d).peerLateCycles()[5])
            .isPositive();
      }
      assertThat(s.getCalls()).isEqualTo(d.getCalls()).isEqualTo(300);
    }
  }

  @Test
  void aFileThatIsNotABlockIsSkippedWithoutStoppingTheOthers(@TempDir Path shm) throws Exception {
    Path junk = shm.resolve("0000000000000001").resolve("rank-0.blk");
    Files.createDirectories(junk.getParent());
    Files.write(junk, new byte[8192]);
    drive(shm, 6, 2, 10, 1, 1_000_000, 0);
    List<CounterSnapshot> sent = new ArrayList<>();
    NcclSidecar sidecar =
        new NcclSidecar(
            shm,
            new NcclSidecar.Identity("c", "j", "h", "b"),
            new Collecting(sent),
            Duration.ofSeconds(60),
            false);
    assertThat(sidecar.reportOnce()).hasSize(2);
    assertThat(sidecar.reportOnce()).isEmpty(); // finalized blocks are read once
    assertThat(block(shm, 0)).exists(); // removeFinalized=false leaves them
  }

  /** A sidecar that leaves the blocks in place, records compact from {@code compactFrom} ranks. */
  /**
   * Two nodes of two ranks, every collective timed (sampling 1): the driver's network links are 1→2
   * and 3→0 (channel 0, ring successor) and 2→1 and 0→3 (channel 1, predecessor), 200 collectives ×
   * 4 steps each; the link 1→2 takes SLOW_NS a step.
   */
  static final long SLOW_NS = 200_000;

  static String driveNet(Path shm, java.util.Map<String, String> env) throws Exception {
    java.util.Map<String, String> e = new java.util.HashMap<>(env);
    e.put("COLLSCOPE_DRIVER_RANKS_PER_NODE", "2");
    e.put("COLLSCOPE_DRIVER_SLOW_LINK", "1:2:" + SLOW_NS);
    return run(
        shm,
        false,
        1,
        e,
        driver.toString(),
        LIB.toAbsolutePath().toString(),
        "6",
        "4",
        "200",
        "-1",
        "0");
  }

  @Test
  void networkStepsWaitPerPeerAndTheSlowLinkIsSlowOnBothOfItsEnds(@TempDir Path shm)
      throws Exception {
    assertThat(driveNet(shm, java.util.Map.of())).contains("network proxy operations 1600");
    long[][] r1 = NcclBlockFile.open(block(shm, 1)).readExtension(100).net();
    long[][] r2 = NcclBlockFile.open(block(shm, 2)).readExtension(100).net();
    long[][] r3 = NcclBlockFile.open(block(shm, 3)).readExtension(100).net();
    // [sendNs, sendSteps, recvNs, recvSteps][peer]
    assertThat(r1[1]).containsExactly(0, 0, 800, 0); // sends to its one network peer only
    assertThat(r1[0][2] / r1[1][2]).isGreaterThanOrEqualTo(SLOW_NS);
    assertThat(r2[3]).containsExactly(0, 800, 0, 0); // receives over the network from 1 only
    assertThat(r2[2][1] / r2[3][1]).isGreaterThanOrEqualTo(SLOW_NS);
    // the other direction and the other links: no sleep, a small share of it
    assertThat(r2[0][1] / r2[1][1]).isLessThan(SLOW_NS / 4);
    assertThat(r3[0][0] / r3[1][0]).isLessThan(SLOW_NS / 4);
    assertThat(r1[2][2] / r1[3][2]).isLessThan(SLOW_NS / 4);
    assertThat(
            NcclBlockFile.open(block(shm, 1))
                .readExtension(100)
                .stat(NcclBlockFile.Stat.NET_DROPPED))
        .isZero();
    // the sidecar publishes the network peers only, cumulative, and the records are valid
    List<CounterSnapshot> recs = readingSidecar(shm, 128).reportOnce();
    CounterSnapshot s1 = recs.stream().filter(s -> s.getRank() == 1).findFirst().orElseThrow();
    assertThat(s1.getNetPeers()).containsExactly(2);
    assertThat(s1.getNetSendSteps()).containsExactly(800L);
    assertThat(s1.getNetRecvSteps()).containsExactly(800L);
    assertThat(s1.getNetSendWaitNs().get(0)).isEqualTo(r1[0][2]);
    for (CounterSnapshot s : recs) assertThat(Snapshots.validate(s)).isNull();
  }

  @Test
  void withNetworkEventsOffTheMaskHasNoProxyEventsAndTheBlocksNoWaits(@TempDir Path shm)
      throws Exception {
    assertThat(driveNet(shm, java.util.Map.of("COLLSCOPE_NCCL_NET", "0")))
        .contains("network proxy operations 0");
    long[][] r1 = NcclBlockFile.open(block(shm, 1)).readExtension(100).net();
    for (long[] a : r1) assertThat(a).containsOnly(0L);
  }

  @Test
  void aBlockOfExtensionVersion1IsReadWithoutNetworkWaits(@TempDir Path shm) throws Exception {
    driveNet(shm, java.util.Map.of());
    // What a plugin from before the network region wrote: version 1, the file ends with the ring.
    Path old = shm.resolve("old.blk");
    byte[] b = Files.readAllBytes(block(shm, 1));
    int ext = io.collscope.counters.CounterBlock.sizeOf(4, NcclBlockFile.HIST_BUCKETS);
    java.nio.ByteBuffer.wrap(b)
        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .putInt(ext + NcclBlockFile.X_VERSION, 1);
    Files.write(old, java.util.Arrays.copyOf(b, ext + NcclBlockFile.EXT_SIZE));
    NcclBlockFile f = NcclBlockFile.open(old);
    assertThat(f.version()).isEqualTo(1);
    NcclBlockFile.Extension x = f.readExtension(100);
    assertThat(x.net()).isNull();
    assertThat(x.stat(NcclBlockFile.Stat.TIMED)).isEqualTo(200);
    CounterSnapshot s = new CounterSnapshot();
    s.setRank(1);
    NcclSidecar.net(s, x);
    assertThat(s.getNetPeers()).isEmpty();
    assertThat(s.getNetSendWaitNs()).isEmpty();
  }

  static NcclSidecar readingSidecar(Path shm, int compactFrom) {
    return new NcclSidecar(
        shm,
        new NcclSidecar.Identity("c", "j", "h", "b"),
        new Collecting(new ArrayList<>()),
        Duration.ofSeconds(60),
        false,
        compactFrom);
  }

  static final class Collecting implements SnapshotSink {
    final List<CounterSnapshot> sent;

    Collecting(List<CounterSnapshot> sent) {
      this.sent = sent;
    }

    @Override
    public void send(CounterSnapshot s) {
      sent.add(s);
    }

    @Override
    public void flush() {}

    @Override
    public long failed() {
      return 0;
    }

    @Override
    public void close() {}
  }
}
