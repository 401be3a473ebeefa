package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PublishPolicyTest {

  private static final long MS = 1_000_000L;

  /** How many collectives of {@code rank}, {@code stepNanos} apart, until the policy says due. */
  private static int collectivesUntilDue(PublishPolicy p, int rank, long[] clock, long stepNanos) {
    for (int n = 1; n <= 1_000_000; n++) {
      clock[0] += stepNanos;
      if (p.countAndCheck(rank, clock[0])) {
        p.published(rank, clock[0]);
        return n;
      }
    }
    throw new AssertionError("never due");
  }

  @Test
  void theAutomaticCountShrinksWithTheSizeFrom1024ToEveryCollective() {
    assertThat(CudaCollective.Options.publishEveryFor(4 << 10)).isEqualTo(1024);
    assertThat(CudaCollective.Options.publishEveryFor(256 << 10)).isEqualTo(1024);
    assertThat(CudaCollective.Options.publishEveryFor(1 << 20)).isEqualTo(1024);
    assertThat(CudaCollective.Options.publishEveryFor(4 << 20)).isEqualTo(1024);
    assertThat(CudaCollective.Options.publishEveryFor(8 << 20)).isEqualTo(512);
    assertThat(CudaCollective.Options.publishEveryFor(16 << 20)).isEqualTo(256);
    assertThat(CudaCollective.Options.publishEveryFor(1L << 30)).isEqualTo(4);
    assertThat(CudaCollective.Options.publishEveryFor(4L << 30)).isEqualTo(1);
    assertThat(CudaCollective.Options.publishEveryFor(16L << 30)).isEqualTo(1);
  }

  @Test
  void noCountIsLongerThanTheKernelsRingOfSampleRecords() {
    long[] clock = {0};
    PublishPolicy asked = new PublishPolicy(1, 5000, 0, clock[0]);
    assertThat(asked.every()).isEqualTo(OsarLayout.RECORDS);
    assertThat(collectivesUntilDue(asked, 0, clock, 1)).isEqualTo(OsarLayout.RECORDS);
    asked.countOnly(1 << 20);
    assertThat(collectivesUntilDue(asked, 0, clock, 1)).isEqualTo(OsarLayout.RECORDS);
    asked.countOnly(1000);
    assertThat(collectivesUntilDue(asked, 0, clock, 1)).isEqualTo(1000);
  }

  @Test
  void aRankIsUnpublishedFromItsFirstCollectiveUntilItsNextPublication() {
    PublishPolicy p = new PublishPolicy(2, 16, 0, 0);
    assertThat(p.unpublished(0)).isFalse();
    p.countAndCheck(0, 0);
    assertThat(p.unpublished(0)).isTrue();
    assertThat(p.unpublished(1)).isFalse();
    p.published(0, 0);
    assertThat(p.unpublished(0)).isFalse();
    p.countAndCheck(1, 0);
    p.countOnly(8);
    assertThat(p.unpublished(1)).as("a new interval starts the count again").isFalse();
  }

  @Test
  void fastCollectivesPublishEveryKthAndTheCountStartsAgainAfterEach() {
    long[] clock = {0};
    PublishPolicy p = new PublishPolicy(2, 1024, 10 * MS, clock[0]);
    // 8 µs collectives: 1,024 take 8.2 ms, inside the 10 ms bound, so the count decides
    for (int i = 0; i < 3; i++) assertThat(collectivesUntilDue(p, 0, clock, 8_000)).isEqualTo(1024);
  }

  @Test
  void slowCollectivesPublishOnceTheIntervalHasPassed() {
    long[] clock = {0};
    PublishPolicy p = new PublishPolicy(1, 1024, 10 * MS, clock[0]);
    // 300 µs each (an injected slow rank): 34 collectives reach 10.2 ms, not 1,024 (0.3 s)
    for (int i = 0; i < 3; i++) assertThat(collectivesUntilDue(p, 0, clock, 300_000)).isEqualTo(34);
    // one collective longer than the interval: due right after it
    assertThat(collectivesUntilDue(p, 0, clock, 50 * MS)).isEqualTo(1);
  }

  @Test
  void eachRankKeepsItsOwnCountAndClock() {
    long[] clock = {0};
    PublishPolicy p = new PublishPolicy(2, 4, 0, clock[0]);
    assertThat(p.countAndCheck(0, 0)).isFalse();
    assertThat(p.countAndCheck(0, 0)).isFalse();
    assertThat(p.countAndCheck(0, 0)).isFalse();
    assertThat(p.countAndCheck(1, 0)).isFalse(); // rank 1's first, rank 0's fourth comes next
    assertThat(p.countAndCheck(0, 0)).isTrue();
    p.published(0, 0);
    assertThat(p.countAndCheck(1, 0)).isFalse();
    assertThat(p.countAndCheck(1, 0)).isFalse();
    assertThat(p.countAndCheck(1, 0)).isTrue();
  }

  @Test
  void anExplicitCountHasNoTimeBoundSoAGraphCaptureHoldsWholeIntervals() {
    long[] clock = {0};
    PublishPolicy p = new PublishPolicy(1, 1024, 10 * MS, clock[0]);
    assertThat(p.timed()).isTrue();
    p.countOnly(16);
    assertThat(p.timed()).isFalse();
    // a whole second per collective: still every 16th, as the captured graph has them
    assertThat(collectivesUntilDue(p, 0, clock, 1_000 * MS)).isEqualTo(16);
    assertThat(collectivesUntilDue(p, 0, clock, 1_000 * MS)).isEqualTo(16);
  }

  @Test
  void countOnlyStartsEveryRankAfresh() {
    long[] clock = {0};
    PublishPolicy p = new PublishPolicy(1, 8, 0, clock[0]);
    for (int i = 0; i < 5; i++) p.countAndCheck(0, 0);
    p.countOnly(8);
    assertThat(collectivesUntilDue(p, 0, clock, 1)).isEqualTo(8);
  }
}
