package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.Sampling;
import io.collscope.counters.CounterBlock;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.counters.TornSnapshotException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads every reporting rank's counter block and turns each consistent read into a {@link
 * CounterSnapshot}. Runs on its own thread, never on a rank's launch or poll path: the ranks only
 * ever publish into their blocks.
 */
public final class Reporter {

  private static final Logger LOG = LoggerFactory.getLogger(Reporter.class);

  private final CollectiveBackend backend;
  private final Identity identity;
  private final SnapshotSink sink;
  private final SnapshotReader[] readers;
  private final long[] seq;
  private final Sampling.Counter[] sampled;
  private long tornSkips;
  private long published;

  public Reporter(CollectiveBackend backend, Identity identity, SnapshotSink sink) {
    this.backend = backend;
    this.identity = identity;
    this.sink = sink;
    int n = backend.worldSize();
    this.readers = new SnapshotReader[n];
    this.seq = new long[n];
    this.sampled = new Sampling.Counter[n];
    for (int r = 0; r < n; r++) {
      // ranks that do not report here (dead, or run by another process) have no block to read
      readers[r] = backend.reports(r) ? new SnapshotReader(backend.block(r)) : null;
      sampled[r] = new Sampling.Counter(backend.sampling());
    }
  }

  /** Takes one snapshot of every reporting rank and hands it to the sink. */
  public List<CounterSnapshot> reportOnce() {
    Instant now = Instant.now();
    List<CounterSnapshot> out = new ArrayList<>();
    for (int r = 0; r < readers.length; r++) {
      if (!backend.reports(r)) {
        continue;
      }
      // The incarnation before and after the read: a read across an emitter restart (injected
      // reboot-rank) could pair the new counters with the old boot, or the old with the new.
      long incarnation = backend.incarnation(r);
      Counters c;
      try {
        c = readers[r].read();
      } catch (TornSnapshotException e) {
        tornSkips++;
        LOG.warn("rank {}: skipped this interval: {}", r, e.getMessage());
        continue;
      }
      if (incarnation < 0 || backend.incarnation(r) != incarnation) {
        LOG.info("rank {}: skipped this interval: its emitter restarted during the read", r);
        continue;
      }
      if (c.version() == 0) {
        continue; // nothing published yet: no cycles_per_second to report against
      }
      CounterSnapshot s = toRecord(r, c, ++seq[r], now, incarnation);
      sink.send(s);
      out.add(s);
      published++;
    }
    return out;
  }

  /**
   * The boot_id of a rank's emitter incarnation: the identity's, with {@code .N} appended from the
   * first restart on.
   */
  static String bootId(Identity identity, long incarnation) {
    return incarnation > 0 ? identity.bootId() + "." + incarnation : identity.bootId();
  }

  CounterSnapshot toRecord(int r, Counters c, long seqNo, Instant now, long incarnation) {
    CounterSnapshot s = c.totals().writeTo(new CounterSnapshot());
    s.setCluster(identity.cluster());
    s.setJob(identity.job());
    s.setCommunicator(identity.communicator());
    s.setCollective(backend.collective());
    s.setBackend(backend.name());
    s.setWorldSize(backend.worldSize());
    s.setRank(r);
    s.setHost(identity.host());
    s.setDevice(backend.device(r));
    s.setBootId(bootId(identity, incarnation));
    s.setSeq(seqNo);
    s.setEventTime(now);
    s.setCyclesPerSecond(c.cyclesPerSecond());
    s.setReadRetries(readers[r].retries());
    Sampling sampling = backend.sampling();
    if (sampling.every() > 1) {
      // The collectives the block's accounted fields come from: the completed ones the ranks
      // chose (an aborted collective is not counted, as it completed nothing).
      s.setSampleEvery(sampling.every());
      s.setSampledCalls(sampled[r].accountedUpTo(c.calls() - c.timeouts()));
    }
    if (c.ext(CounterBlock.EXT_TILES) > 0) { // a persistent-CTA kernel: its grid's drift
      s.setCtaLeadMaxMilliRounds(c.ext(CounterBlock.EXT_LEAD_MAX));
      List<Long> lead = new ArrayList<>();
      for (long v : c.leadHistogram()) lead.add(v);
      s.setCtaLeadHistogram(lead);
      s.setThrottleStalls(c.ext(CounterBlock.EXT_THROTTLE_STALLS));
      s.setTiles(c.ext(CounterBlock.EXT_TILES));
      s.setTileSpread(c.ext(CounterBlock.EXT_TILE_SPREAD));
    }
    return s;
  }

  public long tornSkips() {
    return tornSkips;
  }

  public long published() {
    return published;
  }
}
