package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class AvroCodecTest {

  private final AvroCodec<CounterSnapshot> codec = AvroCodec.of(CounterSnapshot.class);

  @Test
  void roundTripsTheCurrentVersion() throws Exception {
    CounterSnapshot s =
        SnapshotFixtures.snapshot("c", 1, 4).setCalls(7).setWaitCycles(123).setSeq(9).build();
    byte[] bytes = codec.encode(s);
    assertThat(bytes[0]).isEqualTo((byte) 0xC3);
    assertThat(bytes[1]).isEqualTo((byte) 0x01);
    assertThat(codec.decode(bytes)).isEqualTo(s);
  }

  @Test
  void garbageBytesAreABadHeader() {
    assertThatThrownBy(() -> codec.decode("hello, kafka".getBytes()))
        .isInstanceOf(DecodeException.class)
        .hasMessageContaining("BAD_HEADER")
        .satisfies(
            e -> assertThat(((DecodeException) e).reason()).isEqualTo(DeadLetterReason.BAD_HEADER));
  }

  @Test
  void emptyInputIsReportedAsEmpty() {
    assertThatThrownBy(() -> codec.decode(new byte[0]))
        .satisfies(
            e -> assertThat(((DecodeException) e).reason()).isEqualTo(DeadLetterReason.EMPTY));
    assertThatThrownBy(() -> codec.decode(null))
        .satisfies(
            e -> assertThat(((DecodeException) e).reason()).isEqualTo(DeadLetterReason.EMPTY));
  }

  @Test
  void anUnknownFingerprintIsNamed() {
    byte[] bytes = codec.encode(SnapshotFixtures.snapshot("c", 0, 2).build());
    bytes[5] ^= 0x5A;
    assertThatThrownBy(() -> codec.decode(bytes))
        .isInstanceOf(DecodeException.class)
        .hasMessageContaining("fingerprint")
        .satisfies(
            e ->
                assertThat(((DecodeException) e).reason())
                    .isEqualTo(DeadLetterReason.UNKNOWN_FINGERPRINT));
  }

  @Test
  void anotherRecordTypeIsAnUnknownFingerprintNotACrash() {
    byte[] deadLetterBytes =
        AvroCodec.of(DeadLetter.class)
            .encode(
                DeadLetter.newBuilder()
                    .setReason(DeadLetterReason.INVALID)
                    .setDetail("d")
                    .setStage(io.collscope.avro.Stage.DECODE)
                    .setSourceTopic("t")
                    .setPartition(0)
                    .setOffset(0)
                    .setRaw(ByteBuffer.wrap(new byte[] {1}))
                    .setDetectedAt(java.time.Instant.EPOCH)
                    .build());
    assertThatThrownBy(() -> codec.decode(deadLetterBytes))
        .satisfies(
            e ->
                assertThat(((DecodeException) e).reason())
                    .isEqualTo(DeadLetterReason.UNKNOWN_FINGERPRINT));
  }

  @Test
  void aTruncatedOrRandomBodyIsCorruptNeverNullOrUnchecked() {
    byte[] good = codec.encode(SnapshotFixtures.snapshot("c", 0, 8).setCalls(1).build());
    Random rnd = new Random(42);
    int corrupt = 0;
    for (int trial = 0; trial < 2_000; trial++) {
      byte[] bad;
      if (trial % 2 == 0) {
        bad =
            java.util.Arrays.copyOf(
                good, AvroCodec.HEADER_LENGTH + rnd.nextInt(good.length - AvroCodec.HEADER_LENGTH));
      } else {
        bad = good.clone();
        for (int i = AvroCodec.HEADER_LENGTH; i < bad.length; i++) {
          bad[i] = (byte) rnd.nextInt();
        }
      }
      try {
        CounterSnapshot s = Snapshots.decode(bad);
        assertThat(s).isNotNull(); // random bytes may decode into a valid record: fine.
      } catch (DecodeException e) {
        assertThat(e.reason()).isIn(DeadLetterReason.CORRUPT_BODY, DeadLetterReason.INVALID);
        corrupt++;
      }
    }
    assertThat(corrupt).isGreaterThan(1_000);
  }

  @Test
  void decodingIntoThePreviousRecordGivesWhatAFreshDecodeGives() throws Exception {
    // Records of different shapes one after the other into one object: longer arrays then
    // shorter, peer_index set then absent, lateness then none. A field or array element left over
    // from the previous record would make a snapshot differ from its fresh decode.
    io.collscope.model.RankTotals t = new io.collscope.model.RankTotals(256, 40);
    t.set(io.collscope.model.Counter.CALLS, 2);
    t.recordLateness(200, 7_000);
    t.recordLateness(200, 9_000);
    t.peerWaitCycles()[200] = 9_000;
    CounterSnapshot compact =
        io.collscope.model.CompactPeers.writeCompact(
            SnapshotFixtures.snapshot("dp", 0, 256).build(), t, new int[] {0, 200});
    List<CounterSnapshot> records =
        List.of(
            SnapshotFixtures.snapshot("dp", 0, 64).setCalls(3).setWaitCycles(40).build(),
            compact,
            SnapshotFixtures.snapshot("tp", 5, 8).setSeq(2).setHost("h").build(),
            compact,
            SnapshotFixtures.snapshot("tp", 1, 2).build());
    CounterSnapshot reuse = null;
    for (CounterSnapshot r : records) {
      byte[] bytes = Snapshots.encode(r);
      CounterSnapshot fresh = Snapshots.decode(bytes);
      CounterSnapshot filled = Snapshots.decode(bytes, reuse);
      if (reuse != null) assertThat(filled).isSameAs(reuse);
      assertThat(filled).isEqualTo(fresh).isEqualTo(r);
      reuse = filled;
    }
  }

  @Test
  void aSampleMustBeAPositiveIntervalAndNoLargerThanTheCalls() {
    var ok = SnapshotFixtures.snapshot("c", 0, 4).setCalls(100);
    assertThat(Snapshots.validate(ok.setSampleEvery(16).setSampledCalls(7L).build())).isNull();
    assertThat(Snapshots.validate(ok.setSampleEvery(16).setSampledCalls(null).build())).isNull();
    assertThat(Snapshots.validate(ok.setSampleEvery(0).setSampledCalls(null).build()))
        .isEqualTo("sample_every 0 outside [1, 65536]");
    assertThat(Snapshots.validate(ok.setSampleEvery(16).setSampledCalls(101L).build()))
        .isEqualTo("sampled_calls 101 outside [0, calls 100]");
    assertThat(Snapshots.validate(ok.setSampleEvery(16).setSampledCalls(-1L).build()))
        .isEqualTo("sampled_calls -1 outside [0, calls 100]");
  }

  @Test
  void timedCollectivesComeInPairsWithKeysFromOneAndNoNegativeKernelLength() {
    var ok = SnapshotFixtures.snapshot("c", 0, 4).setCalls(100);
    assertThat(
            Snapshots.validate(
                ok.setTimedKeys(List.of(9L, 17L)).setTimedKernelNs(List.of(5_000L, 0L)).build()))
        .isNull();
    assertThat(
            Snapshots.validate(
                ok.setTimedKeys(List.of(9L, 17L)).setTimedKernelNs(List.of(5_000L)).build()))
        .isEqualTo("timed_keys has 2 entries, timed_kernel_ns 1");
    assertThat(
            Snapshots.validate(
                ok.setTimedKeys(List.of(0L)).setTimedKernelNs(List.of(5_000L)).build()))
        .isEqualTo("timed_keys[0] is 0, below 1");
    assertThat(
            Snapshots.validate(ok.setTimedKeys(List.of(9L)).setTimedKernelNs(List.of(-1L)).build()))
        .isEqualTo("timed_kernel_ns[0] is negative: -1");
  }

  @Test
  void networkWaitsComeByPeerForOtherRanksAscendingAndWithinTheCounterBounds() {
    var ok = SnapshotFixtures.snapshot("c", 0, 4).setCalls(100);
    ok.setNetPeers(List.of(1, 3))
        .setNetSendWaitNs(List.of(5_000L, 7_000L))
        .setNetSendSteps(List.of(4L, 4L))
        .setNetRecvWaitNs(List.of(6_000L, 0L))
        .setNetRecvSteps(List.of(4L, 0L));
    assertThat(Snapshots.validate(ok.build())).isNull();
    assertThat(Snapshots.validate(ok.setNetRecvSteps(List.of(4L)).build()))
        .isEqualTo("net_recv_steps has 1 entries, net_peers 2");
    ok.setNetRecvSteps(List.of(4L, 0L));
    assertThat(Snapshots.validate(ok.setNetPeers(List.of(0, 3)).build()))
        .isEqualTo(
            "net_peers[0] is 0: not another rank of the communicator (world size 4, rank 0)");
    assertThat(Snapshots.validate(ok.setNetPeers(List.of(1, 4)).build()))
        .isEqualTo(
            "net_peers[1] is 4: not another rank of the communicator (world size 4, rank 0)");
    assertThat(Snapshots.validate(ok.setNetPeers(List.of(3, 1)).build()))
        .isEqualTo("net_peers is not ascending at 1: 3, 1");
    ok.setNetPeers(List.of(1, 3));
    assertThat(Snapshots.validate(ok.setNetSendWaitNs(List.of(5_000L, -1L)).build()))
        .isEqualTo("net_send_wait_ns[1] is -1, outside [0, " + Snapshots.MAX_COUNTER + "]");
  }

  @Test
  void countersAreBoundedByZeroAndTheMaximumAndANegativeOneIsNamedFirst() throws Exception {
    long max = Snapshots.MAX_COUNTER;
    assertThat(Snapshots.validate(SnapshotFixtures.snapshot("c", 0, 4).setCalls(max).build()))
        .isNull();
    assertThat(Snapshots.validate(SnapshotFixtures.snapshot("c", 0, 4).setCalls(max + 1).build()))
        .isEqualTo("calls is " + (max + 1) + ", above " + max);
    List<Long> wait = SnapshotFixtures.zeros(4);
    wait.set(2, -1L);
    assertThat(
            Snapshots.validate(
                SnapshotFixtures.snapshot("c", 0, 4).setPeerWaitCycles(wait).build()))
        .isEqualTo("peer_wait_cycles[2] is negative: -1");
    // Above the maximum in an early field, negative in a later one: the negative one is named,
    // as it was before the single pass over the fields.
    List<Long> hist = SnapshotFixtures.zeros(40);
    hist.set(39, -7L);
    assertThat(
            Snapshots.validate(
                SnapshotFixtures.snapshot("c", 0, 4)
                    .setCalls(max + 1)
                    .setLatencyHistogram(hist)
                    .build()))
        .isEqualTo("latency_histogram[39] is negative: -7");
  }

  @Test
  void contractViolationsAreInvalid() {
    CounterSnapshot s =
        SnapshotFixtures.snapshot("c", 0, 4).setPeerWaitCycles(List.of(1L, 2L)).build();
    assertThatThrownBy(() -> Snapshots.decode(Snapshots.encode(s)))
        .hasMessageContaining("INVALID")
        .hasMessageContaining("world_size is 4");
  }

  @Test
  void roundTripsANullableTimestampInAUnion() throws Exception {
    java.time.Instant t = java.time.Instant.parse("2025-01-02T03:04:05.678Z");
    io.collscope.avro.Alert a =
        io.collscope.avro.Alert.newBuilder()
            .setAlertId("f1")
            .setCommunicator("comm0")
            .setState(io.collscope.avro.AlertState.RESOLVED)
            .setStartsAt(t.minusSeconds(60))
            .setEndsAt(t)
            .setClassification(io.collscope.avro.Classification.PARITY)
            .setMetric("p50_us")
            .setBaseline(1)
            .setCurrent(1)
            .setNoise(0.1)
            .setWindowEnd(t)
            .setMessage("resolved")
            .build();
    AvroCodec<io.collscope.avro.Alert> alerts = AvroCodec.of(io.collscope.avro.Alert.class);
    assertThat(alerts.decode(alerts.encode(a))).isEqualTo(a);
    a.setEndsAt(null);
    assertThat(alerts.decode(alerts.encode(a)).getEndsAt()).isNull();
  }

  @Test
  void aCorruptCollectionLengthIsADecodeErrorNotAnOutOfMemoryError() throws Exception {
    assertThat(AvroCodec.limitsInForce()).as("Avro's collection limit is set").isTrue();
    // A valid record whose latency_histogram claims 2^30 entries: zig-zag varint of the count.
    CounterSnapshot s = SnapshotFixtures.snapshot("c", 0, 2).build();
    byte[] good = codec.encode(s);
    byte[] huge = {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x08}; // 2^30, zig-zag
    // The histogram's count (40, zig-zag 0x50) followed by 40 zeros: replace the count.
    int at = -1;
    for (int k = good.length - 41; k >= 10; k--) {
      if (good[k] == 0x50) {
        at = k;
        break;
      }
    }
    assertThat(at).isPositive();
    byte[] bad = new byte[good.length + huge.length - 1];
    System.arraycopy(good, 0, bad, 0, at);
    System.arraycopy(huge, 0, bad, at, huge.length);
    System.arraycopy(good, at + 1, bad, at + huge.length, good.length - at - 1);
    assertThatThrownBy(() -> codec.decode(bad))
        .isInstanceOf(DecodeException.class)
        .hasMessageContaining("does not decode");
  }
}
