package io.collscope.flink.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.source.RawRecord;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The fuzzer's records, straight through the decoder: each decodes or fails with a reason. */
class FuzzedRecordsTest {

  @Test
  void everyRecordDecodesOrFailsWithAReasonAndBreachesAlwaysFail() {
    FuzzedRecords fuzz = new FuzzedRecords(7);
    fuzz.map(1L); // loads the codec, which sets Avro's limits
    assertThat(io.collscope.schema.AvroCodec.limitsInForce()).as("Avro's limits").isTrue();
    int failed = 0;
    for (long i = 0; i < 20_000; i++) {
      RawRecord r = fuzz.map(i);
      try {
        Snapshots.decode(r.value);
        assertThat(FuzzedRecords.kindOf(i))
            .as("record %d decoded", i)
            .isNotEqualTo(FuzzedRecords.Kind.SEMANTIC);
      } catch (DecodeException e) {
        failed++;
        assertThat(e.reason()).isNotNull();
        assertThat(FuzzedRecords.kindOf(i))
            .as("record %d failed: %s", i, e.getMessage())
            .isNotIn(FuzzedRecords.Kind.CANARY, FuzzedRecords.Kind.VALID_VICTIM);
      } catch (Throwable t) {
        throw new AssertionError(
            "record "
                + i
                + " ("
                + FuzzedRecords.kindOf(i)
                + ") threw "
                + t
                + ": "
                + Arrays.toString(Arrays.copyOf(r.value, Math.min(64, r.value.length))),
            t);
      }
    }
    assertThat(failed).isGreaterThan(20_000 / 8 * 4);
  }

  @Test
  void validVictimsAreWrittenWithEveryPublishedSchemaVersionAndDecodeToTheSameSnapshot()
      throws DecodeException {
    FuzzedRecords fuzz = new FuzzedRecords(5);
    int versions = FuzzedRecords.snapshotVersions().size();
    assertThat(versions).as("history versions and the current one").isGreaterThanOrEqualTo(4);
    java.util.Set<String> fingerprints = new java.util.TreeSet<>();
    java.util.Set<Integer> seen = new java.util.TreeSet<>();
    for (long i = 0; i < 8L * versions * 2; i++) {
      if (FuzzedRecords.kindOf(i) != FuzzedRecords.Kind.VALID_VICTIM) continue;
      RawRecord r = fuzz.map(i);
      // The single-object header: marker 0xC3 0x01, then the writer schema's 8-byte fingerprint.
      fingerprints.add(Arrays.toString(Arrays.copyOfRange(r.value, 2, 10)));
      seen.add(FuzzedRecords.versionOf(i));
      var s = Snapshots.decode(r.value);
      assertThat(s.getCommunicator().toString()).isEqualTo(FuzzedRecords.VICTIM);
      assertThat(s.getEventTime().toEpochMilli()).isEqualTo(FuzzedRecords.eventTimeMs(i));
      assertThat(s.getSeq()).isEqualTo(i / 8 + 1);
    }
    assertThat(seen).hasSize(versions);
    assertThat(fingerprints).as("distinct writer schemas").hasSize(versions);
  }

  @Test
  void recordsAreAFunctionOfSeedAndIndex() {
    assertThat(new FuzzedRecords(3).map(12345L).value)
        .isEqualTo(new FuzzedRecords(3).map(12345L).value);
    assertThat(new FuzzedRecords(3).map(12345L).value)
        .isNotEqualTo(new FuzzedRecords(4).map(12345L).value);
  }
}
