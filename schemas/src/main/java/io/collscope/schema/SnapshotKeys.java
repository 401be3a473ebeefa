package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.RankKey;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

/**
 * The rank key of a snapshot record, read from the first fields of its body without decoding the
 * rest.
 *
 * <p>Why: the job routes each record to its rank's state before anything else. Decoding the whole
 * record for that, and then shipping the decoded snapshot through the keyBy, is three Avro passes
 * per record (decode, Flink's serialize, deserialize: a third of the job's samples in the profile
 * of docs/SCALE.md); reading the key and shipping the bytes is one full decode, done where the
 * snapshot is used. The Kafka record key is not used for this: it is the same string only when the
 * producer is collscope's, and names may contain the '/' that separates its parts.
 *
 * <p>Every published version of {@code CounterSnapshot} starts with the same seven fields (cluster,
 * job, communicator, collective, backend: string; world_size, rank: int); a version that did not
 * would simply not be readable here ({@link #peek} returns null and the caller decodes the whole
 * record), so the set of readable versions is worked out from the schemas, not assumed.
 */
public final class SnapshotKeys {

  private SnapshotKeys() {}

  private static final List<String> PREFIX_NAMES =
      List.of("cluster", "job", "communicator", "collective", "backend", "world_size", "rank");

  private static final List<Schema.Type> PREFIX_TYPES =
      List.of(
          Schema.Type.STRING,
          Schema.Type.STRING,
          Schema.Type.STRING,
          Schema.Type.STRING,
          Schema.Type.STRING,
          Schema.Type.INT,
          Schema.Type.INT);

  /** Fingerprints of the published versions whose body starts with {@link #PREFIX_NAMES}. */
  private static final Set<Long> READABLE = readableVersions();

  /** A buffered binary decoder per thread, pointed at each record's bytes in turn. */
  private static final ThreadLocal<BinaryDecoder> DECODER = new ThreadLocal<>();

  private static Set<Long> readableVersions() {
    AvroCodec<CounterSnapshot> codec = AvroCodec.of(CounterSnapshot.class);
    Set<Long> out = new HashSet<>();
    for (long fp : codec.knownFingerprints()) {
      if (startsWithKey(codec.schemaOf(fp))) out.add(fp);
    }
    return Set.copyOf(out);
  }

  static boolean startsWithKey(Schema s) {
    List<Schema.Field> fields = s.getFields();
    if (fields.size() < PREFIX_NAMES.size()) return false;
    for (int i = 0; i < PREFIX_NAMES.size(); i++) {
      Schema.Field f = fields.get(i);
      if (!f.name().equals(PREFIX_NAMES.get(i)) || f.schema().getType() != PREFIX_TYPES.get(i)) {
        return false;
      }
    }
    return true;
  }

  /** How many published versions {@link #peek} reads (all of them, while the prefix holds). */
  public static int readableVersionCount() {
    return READABLE.size();
  }

  /**
   * The record's rank key, or null when it cannot be read this way: not single-object encoded, a
   * fingerprint of no published version (or of one without the key prefix), a body that ends or
   * breaks before the key. The caller then decodes the whole record, which names the fault. A
   * record that decodes has exactly this key: both read the same bytes with the same schema.
   */
  public static RankKey peek(byte[] bytes) {
    if (bytes == null
        || bytes.length < AvroCodec.HEADER_LENGTH
        || bytes[0] != (byte) 0xC3
        || bytes[1] != (byte) 0x01) {
      return null;
    }
    long fp = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    if (!READABLE.contains(fp)) return null;
    try {
      BinaryDecoder in =
          DecoderFactory.get()
              .binaryDecoder(
                  bytes,
                  AvroCodec.HEADER_LENGTH,
                  bytes.length - AvroCodec.HEADER_LENGTH,
                  DECODER.get());
      DECODER.set(in);
      String cluster = in.readString();
      String job = in.readString();
      String communicator = in.readString();
      in.skipString(); // collective
      in.skipString(); // backend
      in.readInt(); // world_size
      int rank = in.readInt();
      return new RankKey(cluster, job, communicator, rank);
    } catch (IOException | RuntimeException e) {
      return null; // truncated or corrupt: the full decode says how
    }
  }
}
