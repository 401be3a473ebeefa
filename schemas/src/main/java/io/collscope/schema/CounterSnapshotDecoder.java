package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.IntList;
import io.collscope.model.LongList;
import java.io.IOException;
import java.time.Instant;
import java.util.StringJoiner;
import org.apache.avro.LogicalType;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;

/**
 * Reads a {@link CounterSnapshot} body of the current schema straight off Avro's {@link
 * BinaryDecoder}, field by field in schema order, its arrays into {@link LongList} / {@link
 * IntList} (primitive arrays behind the {@code List} the generated class exposes).
 *
 * <p>Why: Avro's reader boxes every array element (a {@code Long} per counter, then {@code
 * GenericData.Array.add}), and the job's readers unbox them again: together a quarter of the job's
 * task-thread samples in the profile of issue 47. The record it returns is the one Avro's reader
 * returns, value for value ({@code CounterSnapshotDecoderTest} decodes random records of every
 * published writer schema both ways); a body that does not decode throws as Avro's reader does (an
 * {@link IOException} or a runtime exception, which {@link AvroCodec} reports as {@code
 * CORRUPT_BODY}), under Avro's own limits on collection and string lengths, which {@link
 * BinaryDecoder} enforces.
 *
 * <p>It is written for one schema: {@link #FIELDS} is that schema's field list, and when the
 * current schema differs (a field added, retyped or moved) {@link #matchesCurrentSchema()} is
 * false, {@link AvroCodec} keeps Avro's reader, and the test that checks the match fails until this
 * class follows the schema.
 */
final class CounterSnapshotDecoder {

  private CounterSnapshotDecoder() {}

  /** The schema this decoder reads: field name and type, in order. */
  static final String FIELDS =
      "cluster:string,job:string,communicator:string,collective:string,backend:string,"
          + "world_size:int,rank:int,host:string,device:string,boot_id:string,seq:long,"
          + "event_time:timestamp-millis,cycles_per_second:long,clock_ns:long,clock_cycles:long,"
          + "calls:long,bytes:long,timeouts:long,guard_cycles:long,copy_cycles:long,"
          + "publish_cycles:long,wait_cycles:long,reduce_cycles:long,"
          + "peer_wait_cycles:array<long>,peer_arrived_last:array<long>,"
          + "peer_late_cycles:array<long>,peer_late_histogram:array<long>,"
          + "latency_histogram:array<long>,read_retries:long,cta_lead_max_milli_rounds:long,"
          + "cta_lead_histogram:array<long>,throttle_stalls:long,tiles:long,tile_spread:long,"
          + "peer_index:array<int>,others_wait_cycles:long,others_arrived_last:long,"
          + "others_late_cycles:long,others_late_histogram:array<long>,sample_every:int,"
          + "sampled_calls:union<null,long>,timed_keys:array<long>,timed_kernel_ns:array<long>,"
          + "net_peers:array<int>,net_send_wait_ns:array<long>,net_send_steps:array<long>,"
          + "net_recv_wait_ns:array<long>,net_recv_steps:array<long>";

  private static final boolean MATCHES = FIELDS.equals(fieldsOf(CounterSnapshot.getClassSchema()));

  /** Whether the current schema is the one this decoder reads. */
  static boolean matchesCurrentSchema() {
    return MATCHES;
  }

  /** A schema's fields as {@link #FIELDS} writes them. */
  static String fieldsOf(Schema schema) {
    StringJoiner out = new StringJoiner(",");
    for (Schema.Field f : schema.getFields()) out.add(f.name() + ":" + typeOf(f.schema()));
    return out.toString();
  }

  private static String typeOf(Schema s) {
    LogicalType logical = s.getLogicalType();
    if (logical != null) return logical.getName();
    return switch (s.getType()) {
      case ARRAY -> "array<" + typeOf(s.getElementType()) + ">";
      case UNION -> {
        StringJoiner j = new StringJoiner(",", "union<", ">");
        for (Schema t : s.getTypes()) j.add(typeOf(t));
        yield j.toString();
      }
      case RECORD, ENUM, FIXED -> s.getFullName();
      default -> s.getType().getName();
    };
  }

  /** Reads one body; the caller checked the header and fingerprint. */
  static CounterSnapshot read(BinaryDecoder in) throws IOException {
    CounterSnapshot s = new CounterSnapshot();
    s.setCluster(in.readString());
    s.setJob(in.readString());
    s.setCommunicator(in.readString());
    s.setCollective(in.readString());
    s.setBackend(in.readString());
    s.setWorldSize(in.readInt());
    s.setRank(in.readInt());
    s.setHost(in.readString());
    s.setDevice(in.readString());
    s.setBootId(in.readString());
    s.setSeq(in.readLong());
    s.setEventTime(Instant.ofEpochMilli(in.readLong()));
    s.setCyclesPerSecond(in.readLong());
    s.setClockNs(in.readLong());
    s.setClockCycles(in.readLong());
    s.setCalls(in.readLong());
    s.setBytes(in.readLong());
    s.setTimeouts(in.readLong());
    s.setGuardCycles(in.readLong());
    s.setCopyCycles(in.readLong());
    s.setPublishCycles(in.readLong());
    s.setWaitCycles(in.readLong());
    s.setReduceCycles(in.readLong());
    s.setPeerWaitCycles(longs(in));
    s.setPeerArrivedLast(longs(in));
    s.setPeerLateCycles(longs(in));
    s.setPeerLateHistogram(longs(in));
    s.setLatencyHistogram(longs(in));
    s.setReadRetries(in.readLong());
    s.setCtaLeadMaxMilliRounds(in.readLong());
    s.setCtaLeadHistogram(longs(in));
    s.setThrottleStalls(in.readLong());
    s.setTiles(in.readLong());
    s.setTileSpread(in.readLong());
    s.setPeerIndex(ints(in));
    s.setOthersWaitCycles(in.readLong());
    s.setOthersArrivedLast(in.readLong());
    s.setOthersLateCycles(in.readLong());
    s.setOthersLateHistogram(longs(in));
    s.setSampleEvery(in.readInt());
    s.setSampledCalls(nullableLong(in));
    s.setTimedKeys(longs(in));
    s.setTimedKernelNs(longs(in));
    s.setNetPeers(ints(in));
    s.setNetSendWaitNs(longs(in));
    s.setNetSendSteps(longs(in));
    s.setNetRecvWaitNs(longs(in));
    s.setNetRecvSteps(longs(in));
    return s;
  }

  /**
   * The first capacity of an array: the count the block claims, but never more than its bytes could
   * hold (at least one byte an element), so a corrupt count cannot allocate ahead of the bytes that
   * are there.
   */
  private static int capacity(long count, BinaryDecoder in) throws IOException {
    return (int) Math.min(count, Math.min(in.inputStream().available(), 1 << 16));
  }

  private static LongList longs(BinaryDecoder in) throws IOException {
    long n = in.readArrayStart();
    LongList out = new LongList(capacity(n, in));
    while (n > 0) {
      for (long i = 0; i < n; i++) out.addLong(in.readLong());
      n = in.arrayNext();
    }
    return out;
  }

  private static IntList ints(BinaryDecoder in) throws IOException {
    long n = in.readArrayStart();
    IntList out = new IntList(capacity(n, in));
    while (n > 0) {
      for (long i = 0; i < n; i++) out.addInt(in.readInt());
      n = in.arrayNext();
    }
    return out;
  }

  private static Long nullableLong(BinaryDecoder in) throws IOException {
    int branch = in.readIndex();
    return switch (branch) {
      case 0 -> null;
      case 1 -> in.readLong();
      default -> throw new IOException("sampled_calls: union branch " + branch + " of 2");
    };
  }
}
