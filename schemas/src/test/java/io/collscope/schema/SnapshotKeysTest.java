package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.RankKey;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.junit.jupiter.api.Test;

class SnapshotKeysTest {

  private static final AvroCodec<CounterSnapshot> CODEC = AvroCodec.of(CounterSnapshot.class);

  @Test
  void everyPublishedVersionIsReadable() {
    // A new version that moved or retyped one of the key's fields would make its records take the
    // slow path (a full decode before the keyBy) without anyone noticing: this says so.
    assertThat(SnapshotKeys.readableVersionCount()).isEqualTo(CODEC.knownFingerprints().size());
  }

  @Test
  void theKeyIsTheDecodedRecordsForNamesWithSeparatorsAndNonAscii() throws Exception {
    for (String[] names :
        new String[][] {
          {"c", "j", "comm0"},
          {"a/b", "job/with/slashes", "dp/0"},
          {"클러스터", "ジョブ", "comm-\u00e9"},
          {"", "", "x"}
        }) {
      for (int rank : new int[] {0, 7, 1023}) {
        CounterSnapshot s =
            SnapshotFixtures.snapshot(names[2], rank, 1024)
                .setCluster(names[0])
                .setJob(names[1])
                .build();
        byte[] bytes = Snapshots.encode(s);
        assertThat(SnapshotKeys.peek(bytes))
            .isEqualTo(RankKey.of(Snapshots.decode(bytes)))
            .isEqualTo(new RankKey(names[0], names[1], names[2], rank));
      }
    }
  }

  @Test
  void recordsOfEarlierVersionsGiveTheKeyTheirUpgradeHas() throws Exception {
    for (long fp : CODEC.knownFingerprints()) {
      Schema schema = CODEC.schemaOf(fp);
      GenericRecord r = SchemaHistoryTest.sample(schema, 41);
      r.put("cluster", "old/cluster");
      r.put("rank", 5);
      ByteBuffer buf = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), schema).encode(r);
      byte[] bytes = new byte[buf.remaining()];
      buf.get(bytes);
      assertThat(SnapshotKeys.peek(bytes))
          .as("version %016x", fp)
          .isEqualTo(RankKey.of(CODEC.decode(bytes)))
          .extracting(RankKey::cluster, RankKey::rank)
          .containsExactly("old/cluster", 5);
    }
  }

  @Test
  void whatCannotBeReadCheaplyIsNullForTheFullDecodeToName() {
    byte[] good = Snapshots.encode(SnapshotFixtures.snapshot("comm", 1, 2).build());
    byte[] unknown = good.clone();
    unknown[5] ^= 0x55; // a fingerprint of no published version
    byte[] headerOnly = Arrays.copyOf(good, AvroCodec.HEADER_LENGTH + 3);
    for (byte[] b :
        List.of(
            new byte[0],
            new byte[] {1, 2, 3},
            "plain text, not avro".getBytes(),
            unknown,
            headerOnly)) {
      assertThat(SnapshotKeys.peek(b)).isNull();
    }
    assertThat(SnapshotKeys.peek(null)).isNull();
  }

  @Test
  void aCorruptedRecordThatStillDecodesHasThePeekedKey() {
    // Bit flips and truncations anywhere: whenever the whole record still decodes, the cheap read
    // must agree with it (the job keys by one and keeps state by the other).
    Random random = new Random(13);
    byte[] good =
        Snapshots.encode(
            SnapshotFixtures.snapshot("dp0", 3, 4).setCluster("cluster-a").setJob("job-b").build());
    int decoded = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] b =
          random.nextBoolean()
              ? Arrays.copyOf(good, random.nextInt(good.length + 1))
              : good.clone();
      if (b.length > AvroCodec.HEADER_LENGTH && random.nextBoolean()) {
        int at = AvroCodec.HEADER_LENGTH + random.nextInt(Math.min(40, b.length - 10));
        b[at] ^= (byte) (1 << random.nextInt(8));
      }
      CounterSnapshot s;
      try {
        s = CODEC.decode(b);
      } catch (DecodeException e) {
        continue;
      }
      decoded++;
      assertThat(SnapshotKeys.peek(b)).isEqualTo(RankKey.of(s));
    }
    assertThat(decoded).as("some corrupted records still decode").isGreaterThan(100);
  }
}
