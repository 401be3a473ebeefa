package io.collscope.counters;

import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Reads every field of a counter block with no sequence lock: the negative control of the torn
 * snapshot tests, which shows that their invariants do catch a read that mixes two publications.
 */
public final class UnlockedRead {

  private UnlockedRead() {}

  public static Counters read(CounterBlock block) {
    ByteBuffer raw = block.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int world = block.worldSize();
    RankTotals t = new RankTotals(world, block.buckets());
    for (Counter f : Counter.values()) t.set(f, raw.getLong(CounterBlock.offCounter(f)));
    for (Phase p : Phase.values()) t.setCycles(p, raw.getLong(CounterBlock.offPhase(p)));
    for (int p = 0; p < world; p++) {
      t.peerWaitCycles()[p] = raw.getLong(block.offPeerWait(p));
      t.peerArrivedLast()[p] = raw.getLong(block.offPeerLast(p));
    }
    for (int j = 0; j < block.buckets(); j++) t.histogram()[j] = raw.getLong(block.offHistogram(j));
    return new Counters(0, raw.getLong(CounterBlock.OFF_CYCLES_PER_SECOND), t);
  }
}
