package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import io.collscope.model.IntList;
import io.collscope.model.LongList;
import io.collscope.model.RankTotals;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The hand decoder of snapshot bodies ({@link CounterSnapshotDecoder}) against Avro's own reader:
 * random records of every published CounterSnapshot writer schema (the history and the current one)
 * decode to equal records both ways, and every truncation of a body fails both ways with the same
 * reason.
 */
class CounterSnapshotDecoderTest {

  private static final AvroCodec<CounterSnapshot> CODEC = AvroCodec.of(CounterSnapshot.class);

  static Stream<String> writerSchemas() throws IOException {
    List<String> files = new ArrayList<>();
    for (String line : resource("INDEX").split("\n")) {
      if (line.trim().startsWith("CounterSnapshot.")) files.add(line.trim());
    }
    files.add("current");
    return files.stream();
  }

  @Test
  void theDecoderReadsTheCurrentSchema() {
    // Fails when the schema changes until the decoder follows it (Avro's reader is used meanwhile).
    assertThat(CounterSnapshotDecoder.fieldsOf(CounterSnapshot.getClassSchema()))
        .isEqualTo(CounterSnapshotDecoder.FIELDS);
    assertThat(CounterSnapshotDecoder.matchesCurrentSchema()).isTrue();
  }

  @ParameterizedTest
  @MethodSource("writerSchemas")
  void recordsOfEveryWriterSchemaDecodeAsAvroDecodesThem(String file) throws Exception {
    Schema writer =
        file.equals("current")
            ? CounterSnapshot.getClassSchema()
            : new Schema.Parser().parse(resource(file));
    Random random = new Random(file.hashCode());
    for (int i = 0; i < 200; i++) {
      byte[] bytes = encode(randomRecord(writer, random));
      CounterSnapshot hand = CODEC.decode(bytes);
      CounterSnapshot avro = CODEC.decodeWithAvro(bytes);
      assertThat(hand).as("%s record %d", file, i).isEqualTo(avro);
      assertThat(hand.toString()).isEqualTo(avro.toString());
      assertThat(hand.getPeerWaitCycles()).isInstanceOf(LongList.class);
      assertThat(hand.getPeerIndex()).isInstanceOf(IntList.class);
      assertThat(RankTotals.unboxed(hand.getLatencyHistogram()))
          .isEqualTo(RankTotals.unboxed(new ArrayList<>(avro.getLatencyHistogram())));
      assertThat(RankTotals.unboxedInts(hand.getPeerIndex()))
          .isEqualTo(RankTotals.unboxedInts(new ArrayList<>(avro.getPeerIndex())));
      // Validation reads the primitive lists on its own path: the same verdict.
      assertThat(Snapshots.validate(hand, 0)).isEqualTo(Snapshots.validate(avro, 0));
    }
  }

  @Test
  void everyTruncatedBodyFailsAsItFailsInAvro() throws Exception {
    Random random = new Random(47);
    for (int r = 0; r < 20; r++) {
      byte[] bytes = encode(randomRecord(CounterSnapshot.getClassSchema(), random));
      for (int cut = AvroCodec.HEADER_LENGTH; cut < bytes.length; cut++) {
        byte[] part = Arrays.copyOf(bytes, cut);
        assertThatThrownBy(() -> CODEC.decodeWithAvro(part))
            .isInstanceOf(DecodeException.class)
            .extracting(e -> ((DecodeException) e).reason())
            .isEqualTo(DeadLetterReason.CORRUPT_BODY);
        assertThatThrownBy(() -> CODEC.decode(part))
            .as("cut at %d of %d", cut, bytes.length)
            .isInstanceOf(DecodeException.class)
            .extracting(e -> ((DecodeException) e).reason())
            .isEqualTo(DeadLetterReason.CORRUPT_BODY);
      }
    }
  }

  @Test
  void aCorruptArrayCountFailsWithoutAllocatingIt() throws Exception {
    CounterSnapshot s = SnapshotFixtures.snapshot("c", 0, 2).build();
    byte[] bytes = CODEC.encode(s);
    // The first array (peer_wait_cycles, 2 entries) follows the scalars: its count is one byte,
    // 0x04 (zig-zag 2); claim 2^25 entries there instead, above Avro's limit of 2^24.
    int at = indexOfCount(bytes, s);
    byte[] corrupt = new byte[bytes.length + 3];
    System.arraycopy(bytes, 0, corrupt, 0, at);
    byte[] huge = {(byte) 0x80, (byte) 0x80, (byte) 0x80, 0x20}; // 2^26: zig-zag of 2^25
    System.arraycopy(huge, 0, corrupt, at, huge.length);
    System.arraycopy(bytes, at + 1, corrupt, at + huge.length, bytes.length - at - 1);
    assertThatThrownBy(() -> CODEC.decode(corrupt))
        .isInstanceOf(DecodeException.class)
        .extracting(e -> ((DecodeException) e).reason())
        .isEqualTo(DeadLetterReason.CORRUPT_BODY);
  }

  /** Where peer_wait_cycles' count is: after the body of a record whose arrays are empty. */
  private static int indexOfCount(byte[] bytes, CounterSnapshot s) {
    CounterSnapshot empty = CounterSnapshot.newBuilder(s).build();
    empty.setPeerWaitCycles(List.of());
    empty.setPeerArrivedLast(List.of());
    empty.setLatencyHistogram(List.of());
    byte[] e = CODEC.encode(empty);
    int i = 0;
    while (i < e.length && e[i] == bytes[i]) i++;
    return i;
  }

  // ---- random records of a writer schema --------------------------------------------------------

  private static GenericRecord randomRecord(Schema schema, Random random) {
    GenericRecord r = new GenericData.Record(schema);
    for (Schema.Field f : schema.getFields()) r.put(f.pos(), value(f.schema(), random));
    return r;
  }

  private static Object value(Schema s, Random random) {
    return switch (s.getType()) {
      case STRING -> randomString(random);
      case INT -> random.nextInt(4) == 0 ? random.nextInt() : random.nextInt(2048) - 8;
      case LONG -> randomLong(random);
      case DOUBLE -> random.nextDouble();
      case BOOLEAN -> random.nextBoolean();
      case ENUM -> new GenericData.EnumSymbol(s, s.getEnumSymbols().get(0));
      case ARRAY -> {
        int n = random.nextInt(5) == 0 ? 0 : random.nextInt(300);
        List<Object> l = new ArrayList<>(n);
        for (int i = 0; i < n; i++) l.add(value(s.getElementType(), random));
        yield l;
      }
      case UNION -> {
        Schema branch = s.getTypes().get(random.nextInt(s.getTypes().size()));
        yield branch.getType() == Schema.Type.NULL ? null : value(branch, random);
      }
      default -> throw new AssertionError("no random value for " + s);
    };
  }

  private static long randomLong(Random random) {
    return switch (random.nextInt(4)) {
      case 0 -> random.nextLong();
      case 1 -> random.nextInt(256) - 128;
      case 2 -> Math.abs(random.nextLong() >>> random.nextInt(64));
      default -> 1_700_000_000_000L + random.nextInt(1_000_000);
    };
  }

  private static String randomString(Random random) {
    String alphabet = "abcXYZ019-/_ ée€𝄞";
    StringBuilder sb = new StringBuilder();
    int n = random.nextInt(20);
    for (int i = 0; i < n; i++) sb.appendCodePoint(alphabet.codePointAt(random.nextInt(12)));
    if (random.nextInt(5) == 0) sb.append("€𝄞é");
    return sb.toString();
  }

  private static byte[] encode(GenericRecord r) throws IOException {
    ByteBuffer buf =
        new BinaryMessageEncoder<GenericRecord>(GenericData.get(), r.getSchema()).encode(r);
    byte[] b = new byte[buf.remaining()];
    buf.get(b);
    return b;
  }

  private static String resource(String name) throws IOException {
    try (InputStream in =
        CounterSnapshotDecoderTest.class.getResourceAsStream(AvroCodec.HISTORY_DIR + name)) {
      assertThat(in).as(name).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
