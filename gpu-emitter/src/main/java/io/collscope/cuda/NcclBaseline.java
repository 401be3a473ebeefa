package io.collscope.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The rounds {@code dev/nccl_allreduce_bench.py} measured, read from its output (the whole torchrun
 * log: other lines are skipped) for {@code bench gpu --baseline}. Its rows are lines {@code
 * nccl-rounds,DTYPE,RANKS,BYTES,US,US,...}: one value per round, µs per collective; its header line
 * starts with {@code NCCL } and names the NCCL and torch versions.
 */
public final class NcclBaseline {

  static final String ROW = "nccl-rounds,";

  private final Map<String, double[]> rounds;
  private final String header;

  private NcclBaseline(Map<String, double[]> rounds, String header) {
    this.rounds = rounds;
    this.header = header;
  }

  public static NcclBaseline read(Path file) throws IOException {
    return parse(Files.readAllLines(file, StandardCharsets.UTF_8), file.toString());
  }

  /**
   * @throws IllegalArgumentException naming {@code source} and the line, for a row that does not
   *     parse, a second row of the same (dtype, ranks, bytes), or no row at all
   */
  static NcclBaseline parse(List<String> lines, String source) {
    Map<String, double[]> rounds = new HashMap<>();
    String header = "";
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.startsWith("NCCL ") && header.isEmpty()) header = line;
      if (!line.startsWith(ROW)) continue;
      String where = source + ":" + (i + 1);
      String[] f = line.split(",");
      if (f.length < 5) {
        throw new IllegalArgumentException(
            where + ": expected " + ROW + "DTYPE,RANKS,BYTES,US,... but got: " + line);
      }
      String key;
      double[] us = new double[f.length - 4];
      try {
        key =
            key(
                DType.valueOf(f[1].toUpperCase(Locale.ROOT)),
                Integer.parseInt(f[2]),
                Long.parseLong(f[3]));
        for (int j = 0; j < us.length; j++) us[j] = Double.parseDouble(f[4 + j]);
      } catch (IllegalArgumentException e) { // a bad number or an unknown dtype
        throw new IllegalArgumentException(where + ": " + e.getMessage() + " in: " + line, e);
      }
      if (rounds.put(key, us) != null) {
        throw new IllegalArgumentException(where + ": a second row for " + key);
      }
    }
    if (rounds.isEmpty()) {
      throw new IllegalArgumentException(
          source + ": no " + ROW + " lines (the output of dev/nccl_allreduce_bench.py?)");
    }
    return new NcclBaseline(rounds, header);
  }

  /** The rounds of (dtype, ranks, bytes per rank), µs per collective; null if not measured. */
  public double[] rounds(DType t, int ranks, long bytes) {
    double[] r = rounds.get(key(t, ranks, bytes));
    return r == null ? null : r.clone();
  }

  /** The baseline's header line (NCCL and torch versions), empty if it had none. */
  public String header() {
    return header;
  }

  private static String key(DType t, int ranks, long bytes) {
    return t.suffix + "," + ranks + "," + bytes;
  }
}
