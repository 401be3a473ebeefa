package io.collscope.counters;

/**
 * A consistent snapshot of one counter block: every field comes from the same publication.
 *
 * @param version the (even) sequence-lock value the snapshot was taken at; it advances by 2 per
 *     publication, so version/2 publications had happened
 */
public record Counters(
    long version,
    long cyclesPerSecond,
    long calls,
    long bytes,
    long guardCycles,
    long copyCycles,
    long publishCycles,
    long waitCycles,
    long reduceCycles,
    long timeouts,
    long[] peerWaitCycles,
    long[] peerArrivedLast,
    long[] histogram) {}
