package io.collscope.schema;

import java.io.Serializable;

/**
 * One recorded snapshot as it was written: its bytes exactly (so old recordings go through the
 * decoder's schema history), where it came from and its event time, by which recordings of
 * concurrent emitters are merged.
 *
 * @param origin the recording's file name
 * @param offset the frame's index in its recording
 * @param eventTimeMs the snapshot's event time
 * @param value the Avro single-object encoding of the snapshot
 */
public record RecordedFrame(String origin, long offset, long eventTimeMs, byte[] value)
    implements Serializable {}
