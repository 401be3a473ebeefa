package io.collscope.eval;

import io.collscope.collective.FaultPlan;
import io.collscope.collective.FaultPlan.Fault;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a window of a run with a known {@link FaultPlan} must say: the findings of the faults active
 * through the whole window, as the demo's tokens ({@code SLOW_RANK(2,ARRIVED_LATE)}, {@code
 * SLOW_LINK(3->6)}, {@code SILENT_RANK(3,TIMED_OUT)}, {@code UNIFORM_SLOWDOWN(LINK)}).
 *
 * <p>A window is judged only when no fault starts or ends within it or within the window before it
 * — "from the second full window after onset": the first window after a change still holds deltas
 * that began before it. Equivalent answers are accepted where the counters cannot tell them apart,
 * and each is written down here:
 *
 * <ul>
 *   <li>with 2 ranks a slow link p→r is the communicator's only path: it makes p late for r, or
 *       each late for the other in turn, and reads as SLOW_RANK(p) (any cause), SLOW_LINK(p->r) or
 *       a UNIFORM_SLOWDOWN(LINK) of the whole collective;
 *   <li>a rank that reboots restarts its counters: the window it restarted in may lack it; that is
 *       missing data, not a finding;
 *   <li>the same fault on every rank singles none out: a slower copy, publish or ack everywhere is
 *       a UNIFORM_SLOWDOWN of that phase's cause, and every rank arriving equally late is NONE.
 * </ul>
 */
public final class Expectation {

  private final Set<String> required;
  private final List<Set<String>> alternatives;

  private Expectation(Set<String> required, List<Set<String>> alternatives) {
    this.required = required;
    this.alternatives = alternatives;
  }

  /**
   * The expectation for the window [{@code fromNs}, {@code toNs}) of run time, or empty when a
   * fault changes within it or within {@code settleNs} before it.
   */
  public static Optional<Expectation> of(
      FaultPlan plan, int world, long fromNs, long toNs, long settleNs) {
    Set<String> tokens = new TreeSet<>();
    List<Set<String>> alternatives = new ArrayList<>();
    for (Fault f : plan.faults()) {
      for (long edge : new long[] {f.startNanos(), f.endNanos()}) {
        if (edge > fromNs - settleNs && edge < toNs) return Optional.empty();
      }
      if (f.kind() == FaultPlan.Kind.DEAD_RANK) {
        // A dead rank stays dead: active from its start on, whatever its end says.
        if (f.startNanos() <= fromNs - settleNs) {
          tokens.add("SILENT_RANK(" + f.rank() + ",TIMED_OUT)");
        }
        continue;
      }
      if (!(f.startNanos() <= fromNs && toNs <= f.endNanos())) continue;
      if (onEveryRank(plan, f, world)) {
        // The same fault on every rank singles none out: the collective itself is slower, in
        // the phase the fault slows (arriving late all together slows nothing).
        switch (f.kind()) {
          case SLOW_PUBLISH -> tokens.add("UNIFORM_SLOWDOWN(SLOW_PUBLISH)");
          case SLOW_ACK -> tokens.add("UNIFORM_SLOWDOWN(RING_FULL)");
          case SLOW_COPY -> tokens.add("UNIFORM_SLOWDOWN(SLOW_COPY_REDUCE)");
          default -> {}
        }
        continue;
      }
      switch (f.kind()) {
        case SLOW_RANK -> tokens.add("SLOW_RANK(" + f.rank() + ",ARRIVED_LATE)");
        case SLOW_PUBLISH -> tokens.add("SLOW_RANK(" + f.rank() + ",SLOW_PUBLISH)");
        case SLOW_ACK -> tokens.add("SLOW_RANK(" + f.rank() + ",RING_FULL)");
        case SLOW_COPY -> tokens.add("SLOW_RANK(" + f.rank() + ",SLOW_COPY_REDUCE)");
        case SLOW_ALL -> tokens.add("UNIFORM_SLOWDOWN(LINK)");
        case SLOW_LINK -> {
          String link = "SLOW_LINK(" + f.from() + "->" + f.rank() + ")";
          if (world == 2) {
            alternatives.add(
                Set.of(link, "SLOW_RANK(" + f.from() + ",*)", "UNIFORM_SLOWDOWN(LINK)"));
          } else tokens.add(link);
        }
        case REBOOT_RANK, DEAD_RANK -> {}
      }
    }
    return Optional.of(new Expectation(tokens, alternatives));
  }

  /** Whether a per-rank fault is in the plan for every rank, with the same delay and timing. */
  private static boolean onEveryRank(FaultPlan plan, Fault f, int world) {
    if (f.kind() == FaultPlan.Kind.SLOW_LINK || f.kind() == FaultPlan.Kind.SLOW_ALL) return false;
    java.util.Set<Integer> ranks = new java.util.HashSet<>();
    for (Fault g : plan.faults()) {
      if (g.kind() == f.kind()
          && g.nanos() == f.nanos()
          && g.startNanos() == f.startNanos()
          && g.endNanos() == f.endNanos()
          && g.percent() == f.percent()) {
        ranks.add(g.rank());
      }
    }
    return world > 1 && ranks.size() == world;
  }

  /** Whether the findings are exactly what the faults make. */
  public boolean matches(Set<String> findings) {
    return missed(findings).isEmpty() && wrong(findings).isEmpty();
  }

  /** Expected findings the window lacks. */
  public Set<String> missed(Set<String> findings) {
    Set<String> out = new TreeSet<>();
    for (String r : required) if (!findings.contains(r)) out.add(r);
    for (Set<String> alt : alternatives) {
      if (findings.stream().noneMatch(f -> alt.stream().anyMatch(a -> like(f, a)))) {
        out.add(String.join("|", new TreeSet<>(alt)));
      }
    }
    return out;
  }

  /** Findings the faults do not make. */
  public Set<String> wrong(Set<String> findings) {
    Set<String> out = new TreeSet<>();
    for (String f : findings) {
      boolean expected =
          required.contains(f)
              || alternatives.stream().anyMatch(alt -> alt.stream().anyMatch(a -> like(f, a)));
      if (!expected) out.add(f);
    }
    return out;
  }

  public boolean isClean() {
    return required.isEmpty() && alternatives.isEmpty();
  }

  /** {@code a} may end in {@code ,*)}: any cause. */
  private static boolean like(String finding, String a) {
    if (a.endsWith(",*)")) return finding.startsWith(a.substring(0, a.length() - 2));
    return finding.equals(a);
  }

  @Override
  public String toString() {
    List<String> all = new ArrayList<>(required);
    for (Set<String> alt : alternatives) all.add(String.join("|", new TreeSet<>(alt)));
    return all.isEmpty() ? "NONE" : String.join(" + ", all);
  }
}
