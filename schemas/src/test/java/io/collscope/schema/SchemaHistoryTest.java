package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.FindingKind;
import io.collscope.avro.Stage;
import io.collscope.avro.Verdict;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.IndexedRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.specific.SpecificRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every schema version ever published (the files listed in the history INDEX) stays readable: a
 * record written with it decodes to the current type, every value it carried arrives in the field
 * of the same name or alias, and fields it lacked hold their defaults.
 */
class SchemaHistoryTest {

  static Stream<String> publishedVersions() throws IOException {
    List<String> files = new ArrayList<>();
    for (String line : resource("INDEX").split("\n")) {
      if (!line.isBlank() && !line.startsWith("#")) files.add(line.trim());
    }
    return files.stream();
  }

  @ParameterizedTest
  @MethodSource("publishedVersions")
  void aRecordOfEveryPublishedVersionDecodesToTheCurrentType(String file) throws Exception {
    Schema old = new Schema.Parser().parse(resource(file));
    GenericRecord written = sample(old, 1);

    SpecificRecord decoded = RecordTypes.decodeAny(encode(written));

    assertThat(decoded.getSchema().getFullName()).isEqualTo(old.getFullName());
    assertCarriedOver(written, (IndexedRecord) decoded, file);
  }

  @Test
  void theHistoryHoldsEveryTypeAndNoCurrentVersion() throws Exception {
    List<String> files = publishedVersions().toList();
    for (Class<? extends SpecificRecord> t : RecordTypes.ALL) {
      // A type still at its first version (its doc ends "Version 1.") has no history yet.
      if (!AvroCodec.of(t).schema().getDoc().endsWith("Version 1.")) {
        assertThat(files).anyMatch(f -> f.startsWith(t.getSimpleName() + ".v"));
      }
      long current = AvroCodec.of(t).knownFingerprints().get(0);
      assertThat(
              AvroCodec.of(t)
                  .knownFingerprints()
                  .subList(1, AvroCodec.of(t).knownFingerprints().size()))
          .as("%s: the current version must not also be in the history", t.getSimpleName())
          .doesNotContain(current);
    }
  }

  @Test
  void freeStringsOfVersion1BecomeTheEnumsOfTheSameName() throws Exception {
    Schema v1 = new Schema.Parser().parse(resource("Attribution.v1.avsc"));
    GenericRecord a = sample(v1, 1);
    a.put("verdict", "MULTIPLE");
    GenericRecord finding = (GenericRecord) ((List<?>) a.get("findings")).get(0);
    finding.put("kind", "SLOW_LINK");
    finding.put("cause", "a cause nobody defined");

    Attribution decoded = AvroCodec.of(Attribution.class).decode(encode(a));

    assertThat(decoded.getVerdict()).isEqualTo(Verdict.MULTIPLE);
    assertThat(decoded.getFindings().get(0).getKind()).isEqualTo(FindingKind.SLOW_LINK);
    assertThat(decoded.getFindings().get(0).getCause()).isEqualTo(Cause.UNKNOWN);
    assertThat(decoded.getCluster()).isEmpty();

    Schema d1 = new Schema.Parser().parse(resource("DeadLetter.v1.avsc"));
    GenericRecord d = sample(d1, 2);
    d.put("reason", "COUNTER_WENT_BACKWARDS");
    d.put("stage", "delta");
    DeadLetter dl = AvroCodec.of(DeadLetter.class).decode(encode(d));
    assertThat(dl.getReason()).isEqualTo(DeadLetterReason.COUNTER_WENT_BACKWARDS);
    assertThat(dl.getStage()).isEqualTo(Stage.DELTA);
  }

  @Test
  void snapshotsOfVersion1And2HaveNoClockSamples() throws Exception {
    for (String file : List.of("CounterSnapshot.v1.avsc", "CounterSnapshot.v2.avsc")) {
      GenericRecord written = sample(new Schema.Parser().parse(resource(file)), 3);
      CounterSnapshot s = AvroCodec.of(CounterSnapshot.class).decode(encode(written));
      assertThat(s.getClockNs()).as(file).isZero();
      assertThat(s.getClockCycles()).as(file).isZero();
      assertThat(s.getEventTime().toEpochMilli()).as(file).isEqualTo(written.get("event_time_ms"));
    }
  }

  // ---- helpers -------------------------------------------------------------------------------

  /** A record of {@code schema} whose every value is distinct and derived from {@code k}. */
  static GenericRecord sample(Schema schema, long k) {
    GenericRecord r = new GenericData.Record(schema);
    for (Schema.Field f : schema.getFields()) {
      r.put(f.pos(), value(f.schema(), f.name(), k + f.pos()));
    }
    return r;
  }

  private static Object value(Schema s, String name, long k) {
    return switch (s.getType()) {
      case STRING -> name + "-" + k;
      case INT -> (int) k;
      case LONG -> k;
      case DOUBLE -> k + 0.5;
      case BOOLEAN -> k % 2 == 0;
      case BYTES -> ByteBuffer.wrap(new byte[] {(byte) k, 7});
      case ENUM -> new GenericData.EnumSymbol(s, s.getEnumSymbols().get(0));
      case ARRAY ->
          List.of(value(s.getElementType(), name, k), value(s.getElementType(), name, k + 1));
      case RECORD -> sample(s, k);
      case MAP -> java.util.Map.of(name + "-" + k, value(s.getValueType(), name, k + 1));
      case UNION -> value(s.getTypes().get(s.getTypes().size() - 1), name, k);
      default -> throw new AssertionError("no sample for " + s);
    };
  }

  private static byte[] encode(GenericRecord r) throws IOException {
    ByteBuffer buf =
        new BinaryMessageEncoder<GenericRecord>(GenericData.get(), r.getSchema()).encode(r);
    byte[] b = new byte[buf.remaining()];
    buf.get(b);
    return b;
  }

  private static void assertCarriedOver(
      IndexedRecord written, IndexedRecord decoded, String where) {
    for (Schema.Field f : decoded.getSchema().getFields()) {
      Schema.Field source = written.getSchema().getField(f.name());
      for (String alias : f.aliases()) {
        if (source == null) source = written.getSchema().getField(alias);
      }
      Object now = decoded.get(f.pos());
      if (source == null) {
        assertThat(normal(now))
            .as("%s: %s is new and takes its default", where, f.name())
            .isEqualTo(normal(GenericData.get().getDefaultValue(f)));
        continue;
      }
      Object was = written.get(source.pos());
      if (was instanceof IndexedRecord wr) {
        assertCarriedOver(wr, (IndexedRecord) now, where + "." + f.name());
      } else if (was instanceof List<?> wl && !wl.isEmpty() && wl.get(0) instanceof IndexedRecord) {
        for (int i = 0; i < wl.size(); i++) {
          assertCarriedOver(
              (IndexedRecord) wl.get(i),
              (IndexedRecord) ((List<?>) now).get(i),
              where + "." + f.name());
        }
      } else if (f.schema().getType() == Schema.Type.ENUM
          && !(was instanceof GenericData.EnumSymbol)) {
        // a free string that is no symbol: the enum's default
        assertThat(normal(now))
            .as("%s: %s", where, f.name())
            .isEqualTo(f.schema().getEnumDefault());
      } else {
        assertThat(normal(now)).as("%s: %s", where, f.name()).isEqualTo(normal(was));
      }
    }
  }

  private static Object normal(Object v) {
    if (v instanceof Instant i) return i.toEpochMilli();
    if (v instanceof CharSequence || v instanceof Enum<?> || v instanceof GenericData.EnumSymbol)
      return v.toString();
    if (v instanceof List<?> l) return l.stream().map(SchemaHistoryTest::normal).toList();
    if (v instanceof Map<?, ?> m) return m.toString();
    return v;
  }

  private static String resource(String name) throws IOException {
    try (InputStream in =
        SchemaHistoryTest.class.getResourceAsStream(AvroCodec.HISTORY_DIR + name)) {
      assertThat(in).as(name).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
