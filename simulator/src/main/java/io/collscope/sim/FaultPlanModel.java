package io.collscope.sim;

import io.collscope.collective.FaultPlan;

/**
 * A {@link FaultPlan} — the {@code --inject} specs the CPU and CUDA backends run — as the
 * simulator's {@link FaultModel}: the same grammar, intervals and per-sequence fractions, with
 * simulated time as the run's elapsed time. Reboots are not simulated (the simulator has no emitter
 * to restart): a plan with {@code reboot-rank} is refused.
 */
public final class FaultPlanModel implements FaultModel {

  private final FaultPlan plan;

  private FaultPlanModel(FaultPlan plan) {
    this.plan = plan;
  }

  public static FaultModel of(FaultPlan plan) {
    if (plan.isEmpty()) return FaultModel.NONE;
    if (plan.hasReboots()) {
      throw new IllegalArgumentException("reboot-rank is not simulated: use the cpu backend");
    }
    return new FaultPlanModel(plan);
  }

  @Override
  public long arrivalDelayNanos(int r, long seq, long tNanos) {
    return plan.arrivalDelayNanos(r, seq, tNanos);
  }

  @Override
  public long copyDelayNanos(int r, long seq, long tNanos) {
    return plan.copyDelayNanos(r, seq, tNanos);
  }

  @Override
  public long publishDelayNanos(int r, long seq, long tNanos) {
    return plan.publishDelayNanos(r, seq, tNanos);
  }

  @Override
  public long ackDelayNanos(int r, long seq, long tNanos) {
    return plan.ackDelayNanos(r, seq, tNanos);
  }

  @Override
  public long linkDelayNanos(int from, int to, long seq, long tNanos) {
    return plan.linkDelayNanos(from, to, seq, tNanos);
  }

  @Override
  public boolean mayDelayLink(int from, int to) {
    return plan.slowsLinksTo(to);
  }

  @Override
  public boolean isDead(int r, long tNanos) {
    return plan.isDeadAt(r, tNanos);
  }

  @Override
  public String toString() {
    return plan.toString();
  }
}
