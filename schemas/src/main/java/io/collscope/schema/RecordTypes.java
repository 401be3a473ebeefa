package io.collscope.schema;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.RankWindow;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.specific.SpecificRecord;

/**
 * Every record type collscope publishes, recognised by the schema fingerprint in its single-object
 * header, so a reader (e.g. {@code collscope tail}) needs no topic-to-type map.
 */
public final class RecordTypes {

  public static final List<Class<? extends SpecificRecord>> ALL =
      List.of(
          CounterSnapshot.class,
          RankWindow.class,
          Attribution.class,
          Alert.class,
          DeadLetter.class,
          GpuHealth.class);

  private static final Map<Long, AvroCodec<?>> BY_FINGERPRINT = new HashMap<>();

  static {
    for (Class<? extends SpecificRecord> t : ALL) {
      AvroCodec<?> codec = AvroCodec.of(t);
      for (long fp : codec.knownFingerprints()) {
        BY_FINGERPRINT.put(fp, codec);
      }
    }
  }

  private RecordTypes() {}

  /** Decodes a record of any published type and version. */
  public static SpecificRecord decodeAny(byte[] bytes) throws DecodeException {
    if (bytes == null || bytes.length < AvroCodec.HEADER_LENGTH) {
      // Let the codec produce the precise EMPTY / BAD_HEADER error.
      return AvroCodec.of(CounterSnapshot.class).decode(bytes);
    }
    long fp = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    AvroCodec<?> codec = BY_FINGERPRINT.get(fp);
    if (codec == null) {
      codec = AvroCodec.of(CounterSnapshot.class); // reports BAD_HEADER or UNKNOWN_FINGERPRINT
    }
    return codec.decode(bytes);
  }
}
