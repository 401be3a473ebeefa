package io.collscope.flink.decode;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.flink.source.RawRecord;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Decodes snapshot records (any published schema version). Anything that does not decode or breaks
 * the contract goes to {@link DeadLetters#TAG} with its reason, bytes and coordinates; the job
 * never fails on input.
 */
public final class DecodeFunction extends ProcessFunction<RawRecord, SourcedSnapshot> {

  private transient Counter deadLettered;

  @Override
  public void open(OpenContext ctx) {
    deadLettered = getRuntimeContext().getMetricGroup().counter("undecodable");
  }

  @Override
  public void processElement(RawRecord r, Context ctx, Collector<SourcedSnapshot> out) {
    try {
      CounterSnapshot s = Snapshots.decode(r.value);
      if (!Snapshots.plausibleEventTime(r.timestamp, System.currentTimeMillis())) {
        // Its timestamp did not move the watermark (see the job's timestamp assigner); counted
        // here rather than lost as late.
        throw new DecodeException(
            DeadLetterReason.INVALID,
            "record timestamp " + r.timestamp + " is before 2000 or more than a day ahead");
      }
      out.collect(new SourcedSnapshot(s, r.topic, r.partition, r.offset));
    } catch (DecodeException e) {
      if (deadLettered != null) deadLettered.inc();
      ctx.output(
          DeadLetters.TAG,
          DeadLetters.of(
              e.reason(),
              e.getMessage(),
              Stage.DECODE,
              r.topic,
              r.partition,
              r.offset,
              r.key,
              r.value));
    }
  }
}
