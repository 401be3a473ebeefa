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
  void recordsAreAFunctionOfSeedAndIndex() {
    assertThat(new FuzzedRecords(3).map(12345L).value)
        .isEqualTo(new FuzzedRecords(3).map(12345L).value);
    assertThat(new FuzzedRecords(3).map(12345L).value)
        .isNotEqualTo(new FuzzedRecords(4).map(12345L).value);
  }
}
