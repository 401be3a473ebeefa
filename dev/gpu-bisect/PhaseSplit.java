import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.SnapshotRecording;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a recorded run's time per collective went, by rank: the phases' cycles between each
 * rank's first and last snapshot, divided by the collectives between them, in ns at the clock
 * rate the kernel sampled over the same interval (clock_ns / clock_cycles). Usage, from the
 * checkout's root: java -cp "launcher/target/lib/*" dev/gpu-bisect/PhaseSplit.java FILE...
 */
public class PhaseSplit {
  public static void main(String[] a) throws Exception {
    for (String f : a) {
      // by the rank's instance (boot_id: a file may hold several runs) and rank
      Map<String, List<CounterSnapshot>> byRank = new TreeMap<>();
      for (CounterSnapshot s : SnapshotRecording.read(Path.of(f))) {
        String key = s.getBootId() + " " + s.getRank();
        byRank.computeIfAbsent(key, r -> new ArrayList<>()).add(s);
      }
      System.out.println(Path.of(f).getFileName());
      System.out.println("  boot/rank  calls  ns/call: guard copy publish wait reduce | sum  clock");
      for (var e : byRank.entrySet()) {
        List<CounterSnapshot> l = e.getValue();
        if (l.size() < 2) continue;
        l.sort(Comparator.comparingLong(CounterSnapshot::getSeq));
        CounterSnapshot x = l.get(0), y = l.get(l.size() - 1);
        long calls = y.getCalls() - x.getCalls();
        double nsPerCycle =
            (double) (y.getClockNs() - x.getClockNs()) / (y.getClockCycles() - x.getClockCycles());
        long[] d = {
          y.getGuardCycles() - x.getGuardCycles(),
          y.getCopyCycles() - x.getCopyCycles(),
          y.getPublishCycles() - x.getPublishCycles(),
          y.getWaitCycles() - x.getWaitCycles(),
          y.getReduceCycles() - x.getReduceCycles()
        };
        StringBuilder b = new StringBuilder();
        double sum = 0;
        for (long c : d) {
          double ns = c * nsPerCycle / calls;
          sum += ns;
          b.append(String.format(Locale.ROOT, " %8.0f", ns));
        }
        double clock = (y.getClockNs() - x.getClockNs()) / (double) calls;
        System.out.printf(
            Locale.ROOT, "  %s %7d %s | %8.0f %8.0f%n", e.getKey(), calls, b, sum, clock);
      }
    }
  }
}
