package io.collscope.sim;

/**
 * What one {@link OneShotSimulator} run did.
 *
 * @param collectives collective sequence numbers simulated (the last ones may end after the run)
 * @param rankCollectives collectives ended and counted in some rank's reported counters
 * @param records snapshot records sent to the sink
 * @param timeouts timeouts counted over all ranks (in their last reported counters)
 * @param deadRanks ranks dead by the end of the run
 * @param simulatedNanos simulated time covered by the snapshots
 */
public record SimSummary(
    long collectives,
    long rankCollectives,
    long records,
    long timeouts,
    int deadRanks,
    long simulatedNanos) {}
