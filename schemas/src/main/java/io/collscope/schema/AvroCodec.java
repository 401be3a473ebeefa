package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.message.BadHeaderException;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.message.MissingSchemaException;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;

/**
 * Avro single-object encoding (marker 0xC3 0x01, 8-byte CRC-64-AVRO fingerprint, binary body) for
 * one record type, with a resolver that knows the current schema and every earlier published
 * version shipped under {@code collscope/avro/history/}, so records written by older versions stay
 * readable. A record of an earlier version is read with its own schema and carried over by {@link
 * SchemaUpgrade} (renamed fields through aliases, strings that became enums, new fields' defaults),
 * which covers changes Avro's own resolution rejects.
 *
 * <p>Instances are thread-safe. Decoding never returns null and never throws an unchecked exception
 * for bad input: every failure is a {@link DecodeException} with a reason.
 */
public final class AvroCodec<T extends SpecificRecord> {

  static final String HISTORY_DIR = "/collscope/avro/history/";
  static final int HEADER_LENGTH = 10;

  private static final Map<Class<?>, AvroCodec<?>> CACHE = new ConcurrentHashMap<>();

  /**
   * The most items an array or map of a decoded record may claim: a 2^20-rank world's lateness
   * histogram (16 buckets per peer). A corrupt length prefix otherwise makes Avro allocate up to
   * 2^31 elements before it notices the bytes run out: the fuzzer's first finding, an
   * OutOfMemoryError that failed the job.
   */
  public static final long MAX_COLLECTION_ITEMS = (1L << 20) * 16;

  /** The longest string or bytes field a decoded record may claim. */
  public static final long MAX_STRING_BYTES = 64L << 20;

  static {
    // Avro reads its limits from system properties once, when SystemLimitException is
    // initialised — which building any record with an array already does, before the first
    // decode. So: set the properties (a limit the process already set is kept), then make Avro
    // read them again through its own resetLimits(), package-private, hence reflection.
    // limitsInForce() tells whether that worked; the fuzz tests assert it.
    limit(
        org.apache.avro.SystemLimitException.MAX_COLLECTION_LENGTH_PROPERTY, MAX_COLLECTION_ITEMS);
    limit(org.apache.avro.SystemLimitException.MAX_STRING_LENGTH_PROPERTY, MAX_STRING_BYTES);
    limit(org.apache.avro.SystemLimitException.MAX_BYTES_LENGTH_PROPERTY, MAX_STRING_BYTES);
    try {
      java.lang.reflect.Method reset =
          org.apache.avro.SystemLimitException.class.getDeclaredMethod("resetLimits");
      reset.setAccessible(true);
      reset.invoke(null);
    } catch (ReflectiveOperationException | RuntimeException e) {
      org.slf4j.LoggerFactory.getLogger(AvroCodec.class)
          .warn("cannot apply Avro's decode limits ({}): a corrupt record can exhaust the heap", e);
    }
  }

  private static void limit(String property, long value) {
    if (System.getProperty(property) == null) System.setProperty(property, Long.toString(value));
  }

  /**
   * Whether Avro enforces a collection limit no larger than {@link #MAX_COLLECTION_ITEMS}: false
   * when Avro was loaded before this class set it (then a corrupt record can exhaust the heap).
   */
  public static boolean limitsInForce() {
    try {
      org.apache.avro.SystemLimitException.checkMaxCollectionLength(0L, MAX_COLLECTION_ITEMS + 1);
      return false;
    } catch (org.apache.avro.SystemLimitException e) {
      return true;
    }
  }

  private final Class<T> type;
  private final Schema schema;
  private final BinaryMessageEncoder<T> encoder;
  private final BinaryMessageDecoder<T> decoder;

  /**
   * Reads a body of the current version straight off the record's bytes. Avro's {@link
   * BinaryMessageDecoder} reads through an InputStream with a direct (unbuffered) decoder, byte by
   * byte: most of a snapshot's decoding time. Shared by threads, as the message decoder shares its
   * own (Avro's readers keep per-thread resolvers).
   */
  private final DatumReader<T> currentReader;

  private final long currentFingerprint;

  /**
   * A hand decoder of the current version's body for the type, or null: {@link
   * CounterSnapshotDecoder} for snapshots (every record the job reads), while it matches the
   * current schema.
   */
  private final BodyReader<T> handReader;

  /** Reads one body of the current version. */
  interface BodyReader<T> {
    T read(BinaryDecoder in) throws IOException;
  }

  /** A buffered binary decoder per thread, pointed at each record's bytes in turn. */
  private static final ThreadLocal<BinaryDecoder> BODY_DECODER = new ThreadLocal<>();

  private final List<Long> knownFingerprints = new ArrayList<>();
  private final Map<Long, Schema> earlierVersions = new HashMap<>();
  private final BinaryMessageEncoder<GenericRecord> upgradedEncoder;

  private AvroCodec(Class<T> type) {
    this.type = type;
    this.schema = SpecificData.get().getSchema(type);
    // The generated class's own model: it carries the logical-type conversions (Instant for
    // timestamp-millis), which a union such as Alert.ends_at ["null", timestamp-millis] needs.
    SpecificData model = SpecificData.getForClass(type);
    this.encoder = new BinaryMessageEncoder<>(model, schema);
    this.decoder = new BinaryMessageDecoder<>(model, schema);
    this.upgradedEncoder = new BinaryMessageEncoder<>(GenericData.get(), schema);
    @SuppressWarnings("unchecked")
    DatumReader<T> reader = (DatumReader<T>) model.createDatumReader(schema, schema);
    this.currentReader = reader;
    this.currentFingerprint = SchemaNormalization.parsingFingerprint64(schema);
    @SuppressWarnings("unchecked")
    BodyReader<T> hand =
        type == CounterSnapshot.class && CounterSnapshotDecoder.matchesCurrentSchema()
            ? in -> (T) CounterSnapshotDecoder.read(in)
            : null;
    this.handReader = hand;
    knownFingerprints.add(currentFingerprint);
    for (Schema old : historyOf(schema.getFullName())) {
      long fp = SchemaNormalization.parsingFingerprint64(old);
      knownFingerprints.add(fp);
      earlierVersions.put(fp, old);
    }
  }

  /** The codec for a generated record class. */
  @SuppressWarnings("unchecked")
  public static <T extends SpecificRecord> AvroCodec<T> of(Class<T> type) {
    return (AvroCodec<T>) CACHE.computeIfAbsent(type, t -> new AvroCodec<>(type));
  }

  public Schema schema() {
    return schema;
  }

  /** The schema a fingerprint names: the current one or an earlier version; null if unknown. */
  public Schema schemaOf(long fingerprint) {
    return fingerprint == currentFingerprint ? schema : earlierVersions.get(fingerprint);
  }

  /** Fingerprints of the current schema first, then of each earlier version. */
  public List<Long> knownFingerprints() {
    return List.copyOf(knownFingerprints);
  }

  public byte[] encode(T record) {
    try {
      ByteBuffer buf = encoder.encode(record);
      byte[] out = new byte[buf.remaining()];
      buf.get(out);
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("encoding " + type.getSimpleName(), e);
    }
  }

  /** Decodes bytes written with the current or any earlier published schema version. */
  public T decode(byte[] bytes) throws DecodeException {
    return decode(bytes, null);
  }

  /**
   * As {@link #decode(byte[])}, filling {@code reuse} (its arrays too) when the bytes are of the
   * current version and it is not null: for a caller that is done with the previous record before
   * it decodes the next. A record of an earlier version is always a new object.
   */
  public T decode(byte[] bytes, T reuse) throws DecodeException {
    if (bytes == null || bytes.length == 0) {
      throw new DecodeException(DeadLetterReason.EMPTY, "no bytes");
    }
    if (bytes.length < HEADER_LENGTH || bytes[0] != (byte) 0xC3 || bytes[1] != (byte) 0x01) {
      throw new DecodeException(
          DeadLetterReason.BAD_HEADER,
          "not Avro single-object encoding (expected marker C3 01 and a 10-byte header, got "
              + bytes.length
              + " bytes starting "
              + hexPrefix(bytes)
              + ")");
    }
    long fp = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    try {
      if (fp == currentFingerprint) return readCurrent(bytes, reuse);
      Schema old = earlierVersions.get(fp);
      // An unknown fingerprint: the message decoder throws MissingSchemaException. An earlier
      // version, carried over to the current one, is read as a current record is.
      return old == null ? decoder.decode(bytes) : readCurrent(upgrade(old, bytes), null);
    } catch (MissingSchemaException e) {
      throw new DecodeException(
          DeadLetterReason.UNKNOWN_FINGERPRINT,
          String.format(
              "schema fingerprint %016x is not a published %s version (known: %s)",
              fp, type.getSimpleName(), hexList(knownFingerprints)),
          e);
    } catch (BadHeaderException e) {
      throw new DecodeException(DeadLetterReason.BAD_HEADER, e.getMessage(), e);
    } catch (IOException | RuntimeException e) {
      // Avro signals a truncated or corrupt body with EOFException, AvroRuntimeException,
      // ArrayIndexOutOfBounds, NegativeArraySize... all mean the same thing to the caller.
      throw new DecodeException(
          DeadLetterReason.CORRUPT_BODY, type.getSimpleName() + " body does not decode: " + e, e);
    }
  }

  /**
   * The body after the 10-byte header, read with the current schema (as the message decoder reads
   * it: bytes after the record are not looked at).
   */
  private T readCurrent(byte[] bytes, T reuse) throws IOException {
    BinaryDecoder in =
        DecoderFactory.get()
            .binaryDecoder(bytes, HEADER_LENGTH, bytes.length - HEADER_LENGTH, BODY_DECODER.get());
    BODY_DECODER.set(in);
    // A caller that passes a record to fill keeps Avro's reader, which fills it.
    return handReader != null && reuse == null
        ? handReader.read(in)
        : currentReader.read(reuse, in);
  }

  /**
   * As {@link #decode(byte[])}, with Avro's own reader for every version: the reference {@code
   * CounterSnapshotDecoderTest} compares the hand decoder with.
   */
  T decodeWithAvro(byte[] bytes) throws DecodeException {
    if (handReader == null) return decode(bytes);
    long fp = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    try {
      Schema old = earlierVersions.get(fp);
      return decoder.decode(old == null ? bytes : upgrade(old, bytes));
    } catch (IOException | RuntimeException e) {
      throw new DecodeException(
          DeadLetterReason.CORRUPT_BODY, type.getSimpleName() + " body does not decode: " + e, e);
    }
  }

  /** Reads an earlier version's body with its own schema and re-encodes it as the current one. */
  private byte[] upgrade(Schema old, byte[] bytes) throws IOException {
    BinaryDecoder in =
        DecoderFactory.get()
            .binaryDecoder(bytes, HEADER_LENGTH, bytes.length - HEADER_LENGTH, null);
    GenericRecord record = new GenericDatumReader<GenericRecord>(old).read(null, in);
    if (!in.isEnd()) {
      throw new IOException((bytes.length - HEADER_LENGTH) + "-byte body has trailing bytes");
    }
    ByteBuffer buf = upgradedEncoder.encode(SchemaUpgrade.record(record, schema));
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }

  private static List<Schema> historyOf(String fullName) {
    List<Schema> out = new ArrayList<>();
    String index = readResource(HISTORY_DIR + "INDEX");
    if (index == null) {
      return out;
    }
    for (String line : index.split("\n")) {
      String file = line.trim();
      if (file.isEmpty() || file.startsWith("#")) {
        continue;
      }
      String text = readResource(HISTORY_DIR + file);
      if (text == null) {
        throw new IllegalStateException("schema history lists " + file + " but it is not packaged");
      }
      Schema s = new Schema.Parser().parse(text);
      if (s.getFullName().equals(fullName)) {
        out.add(s);
      }
    }
    return out;
  }

  private static String readResource(String path) {
    try (InputStream in = AvroCodec.class.getResourceAsStream(path)) {
      return in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(path, e);
    }
  }

  private static String hexPrefix(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < Math.min(4, b.length); i++) {
      sb.append(String.format("%02x", b[i]));
    }
    return sb.toString();
  }

  private static String hexList(List<Long> fps) {
    List<String> s = new ArrayList<>();
    for (long fp : fps) {
      s.add(String.format("%016x", fp));
    }
    return String.join(",", s);
  }
}
