package io.collscope.cli;

import io.collscope.flink.alert.RegressionRule;
import io.collscope.history.HistoryCompactor;
import io.collscope.history.HistoryDb;
import io.collscope.history.HistoryQueries;
import io.collscope.history.Table;
import io.collscope.history.TimeRange;
import io.collscope.load.HistoryGenerator;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope history ...}: canned questions over the Parquet history, and its generator. */
@Command(
    name = "history",
    mixinStandardHelpOptions = true,
    description =
        "Questions over the job's Parquet history (docs/HISTORY.md); 'collscope query' runs any"
            + " SQL.",
    subcommands = {
      HistoryCommand.Culprits.class,
      HistoryCommand.Latency.class,
      HistoryCommand.Compare.class,
      HistoryCommand.Generate.class,
      HistoryCommand.Compact.class
    })
final class HistoryCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  /**
   * The history folder a command reads, or a usage error (exit code 2): a mistyped --history would
   * otherwise read as a history with nothing in it ("(0 rows)").
   */
  static Path existingHistory(Path history, CommandLine.Model.CommandSpec spec) {
    if (!Files.isDirectory(history)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--history "
              + history
              + " is not a directory (run the demo, or 'collscope history generate')");
    }
    return history;
  }

  /** The options every question takes. */
  static final class Common {
    @Option(
        names = "--history",
        defaultValue = Defaults.HISTORY,
        description = "History base folder. Default: ${DEFAULT-VALUE}")
    Path history;

    @Option(
        names = "--now",
        hidden = true,
        description = "Take this instant as now (reproducible answers for the docs and tests).")
    String now;

    @CommandLine.Mixin TablePrinter.Format format;

    Instant now() {
      Instant wall = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
      return now == null ? wall : TimeRange.instant(now, wall);
    }
  }

  @Command(
      name = "culprits",
      mixinStandardHelpOptions = true,
      description =
          "Which ranks and links the attribution blamed, in how many windows, and what their"
              + " excess wait cost (rank-seconds of waiting), most costly first.")
  static final class Culprits implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(
        names = "--since",
        defaultValue = "7d",
        description = "How far back: 30m, 24h, 7d, 2w. Default: ${DEFAULT-VALUE}")
    String since;

    @Option(
        names = "--limit",
        defaultValue = "20",
        description = "At most this many rows. Default: ${DEFAULT-VALUE}")
    int limit;

    @Override
    public Integer call() throws Exception {
      common.format.check();
      if (limit < 1) throw new IllegalArgumentException("--limit must be >= 1");
      TimeRange range = TimeRange.since(sinceDuration(since), common.now());
      try (HistoryDb db = HistoryDb.open(existingHistory(common.history, spec))) {
        print(HistoryQueries.culprits(db, range, limit), common, spec);
      }
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "latency",
      mixinStandardHelpOptions = true,
      description =
          "Whole-collective latency of one communicator window by window: p50 and p99 (upper"
              + " edges of factor-of-two buckets) per rank, or over its ranks.")
  static final class Latency implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(
        names = "--communicator",
        required = true,
        description = "NAME, or CLUSTER/JOB/NAME where names repeat across jobs.")
    String communicator;

    @Option(
        names = "--by",
        defaultValue = "rank",
        description =
            "rank: a row per window and rank; communicator: a row per window (median p50, largest"
                + " p99 and its rank). Default: ${DEFAULT-VALUE}")
    String by;

    @Option(
        names = "--since",
        defaultValue = "24h",
        description = "How far back. Default: ${DEFAULT-VALUE}")
    String since;

    @Override
    public Integer call() throws Exception {
      common.format.check();
      HistoryQueries.LatencyBy grouping;
      try {
        grouping = HistoryQueries.LatencyBy.valueOf(by.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--by must be rank or communicator, got '" + by + "'");
      }
      TimeRange range = TimeRange.since(sinceDuration(since), common.now());
      try (HistoryDb db = HistoryDb.open(existingHistory(common.history, spec))) {
        print(HistoryQueries.latency(db, communicator, grouping, range), common, spec);
      }
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "compare",
      mixinStandardHelpOptions = true,
      description = {
        "Per communicator and message size: is the collective FASTER, at PARITY, SLOWER or"
            + " INCONCLUSIVE after than before? The alerts' regression rule, with the --before"
            + " windows as the baseline (median, median absolute deviation) and the median of the"
            + " --after windows as the current value.",
        "A period is START/END (e.g. 2026-11-30T00:00Z/2026-11-30T06:00Z, -48h/-24h) or a date."
      })
  static final class Compare implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(names = "--before", required = true, description = "The baseline period.")
    String before;

    @Option(names = "--after", required = true, description = "The period compared with it.")
    String after;

    @Option(names = "--communicator", description = "Only this one (NAME or CLUSTER/JOB/NAME).")
    String communicator;

    @Option(
        names = "--min-effect",
        defaultValue = "0.05",
        description =
            "The smallest change that counts, as a share of the baseline (the job's"
                + " --alert-min-effect). Default: ${DEFAULT-VALUE}")
    double minEffect;

    @Override
    public Integer call() throws Exception {
      common.format.check();
      if (!(minEffect > 0 && minEffect < 1)) {
        throw new IllegalArgumentException("--min-effect must be in (0, 1), got " + minEffect);
      }
      Instant now = common.now();
      TimeRange b = period("--before", before, now);
      TimeRange a = period("--after", after, now);
      RegressionRule d = RegressionRule.DEFAULT;
      RegressionRule rule =
          new RegressionRule(
              d.minWindows(), d.minCalls(), minEffect, d.noiseFactor(), d.maxNoise());
      try (HistoryDb db = HistoryDb.open(existingHistory(common.history, spec))) {
        Table t = HistoryQueries.compare(db, b, a, communicator, rule);
        print(t, common, spec);
        if (common.format.table()) {
          PrintWriter out = spec.commandLine().getOut();
          out.printf(
              Locale.ROOT,
              "before %s, after %s. Rule: fewer than %d windows in a period or %d measured"
                  + " collectives on a rank, or a baseline deviation over %.0f%% of its median: INCONCLUSIVE;"
                  + " |after - before| <= band = max(%.0f x deviation, %.0f%% of before): PARITY;"
                  + " else SLOWER or FASTER.%n",
              b,
              a,
              rule.minWindows(),
              rule.minCalls(),
              100 * rule.maxNoise(),
              rule.noiseFactor(),
              100 * rule.minEffect());
          out.flush();
        }
      }
      return Defaults.EXIT_OK;
    }

    private static TimeRange period(String flag, String s, Instant now) {
      TimeRange r;
      try {
        r = TimeRange.parse(s, now);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(flag + " " + e.getMessage());
      }
      if (r.to() == null) throw new IllegalArgumentException(flag + " needs an end");
      return r;
    }
  }

  @Command(
      name = "generate",
      mixinStandardHelpOptions = true,
      description = {
        "Write synthetic history of a cluster (communicators of consecutive ranks, one window of"
            + " every rank and communicator per --window) straight into the Parquet layout, with"
            + " injected culprits, alerts and a lasting before/after change (docs/HISTORY.md):"
            + " the load for the history benchmark and a history with known answers. Same"
            + " arguments, same files."
      })
  static final class Generate implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Option(
        names = "--ranks",
        defaultValue = "1024",
        description = "Ranks of the generated cluster. Default: ${DEFAULT-VALUE}")
    int ranks;

    @Option(
        names = "--ranks-per-communicator",
        defaultValue = "8",
        description = "Ranks of each communicator (consecutive ranks). Default: ${DEFAULT-VALUE}")
    int ranksPerCommunicator;

    @Option(
        names = "--days",
        defaultValue = "7",
        description = "Days of history, ending at --end. Default: ${DEFAULT-VALUE}")
    int days;

    @Option(
        names = "--hours",
        defaultValue = "0",
        description = "Added to --days. Default: ${DEFAULT-VALUE}")
    int hours;

    @Option(
        names = "--window",
        defaultValue = "10s",
        converter = DurationConverter.class,
        description = "Window length, as the job's. Default: ${DEFAULT-VALUE}")
    Duration window;

    @Option(
        names = "--end",
        description = "End of the last window (rounded down to a window). Default: now.")
    String end;

    @Option(
        names = "--seed",
        defaultValue = "42",
        description = "Seed: same arguments, same files. Default: ${DEFAULT-VALUE}")
    long seed;

    @Option(
        names = "--cluster",
        defaultValue = "gen",
        description = "Cluster name of every record. Default: ${DEFAULT-VALUE}")
    String cluster;

    @Option(
        names = "--job",
        defaultValue = "train",
        description = "Job name of every record. Default: ${DEFAULT-VALUE}")
    String job;

    @Option(names = "--threads", description = "Writer threads. Default: the number of processors.")
    Integer threads;

    @Option(names = "--out", required = true, description = "Base folder to write into.")
    Path out;

    @Option(
        names = "--tables",
        split = ",",
        description =
            "Only these tables (rank_windows, attributions, findings, alerts); e.g."
                + " attributions,findings,alerts for a load that culprits and compare read."
                + " Default: all.")
    List<String> tables;

    @Override
    public Integer call() throws Exception {
      if (days < 0 || hours < 0) throw new IllegalArgumentException("--days and --hours >= 0");
      Instant endAt = end == null ? Instant.now() : TimeRange.instant(end, Instant.now());
      HistoryGenerator.Config config =
          new HistoryGenerator.Config(
              ranks,
              ranksPerCommunicator,
              Duration.ofDays(days).plusHours(hours),
              window,
              endAt,
              seed,
              cluster,
              job,
              threads == null ? Runtime.getRuntime().availableProcessors() : threads,
              java.util.Set.copyOf(
                  tables == null ? io.collscope.flink.history.HistoryLayout.TABLES : tables));
      PrintWriter err = spec.commandLine().getErr();
      long t0 = System.nanoTime();
      HistoryGenerator.Summary s = new HistoryGenerator(config).write(out);
      double secs = (System.nanoTime() - t0) / 1e9;
      err.printf(
          Locale.ROOT,
          "collscope history generate: %d rank windows, %d attributions, %d alerts in %d files,"
              + " %.1f MiB (%.1f KiB per rank-day) under %s in %.1f s%n",
          s.rankWindows(),
          s.attributions(),
          s.alerts(),
          s.files(),
          s.bytes() / 1048576.0,
          s.bytes() / 1024.0 / (ranks * config.span().toMillis() / 86_400_000.0),
          out,
          secs);
      err.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "compact",
      mixinStandardHelpOptions = true,
      description =
          "Rewrite each closed hour of the history into one file per table (the job commits one"
              + " file per table, hour, subtask and checkpoint). Safe beside a running job and"
              + " readers: hours still being written are left alone, and an hour is swapped in"
              + " whole (docs/HISTORY.md). Run it from cron, e.g. hourly.")
  static final class Compact implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(
        names = "--older-than",
        defaultValue = "2h",
        converter = DurationConverter.class,
        description =
            "Only hours that ended at least this long ago: the job no longer writes them."
                + " Default: ${DEFAULT-VALUE}")
    Duration olderThan;

    @Option(
        names = "--dry-run",
        description = "Say which hours would be compacted; change nothing.")
    boolean dryRun;

    @Override
    public Integer call() throws Exception {
      common.format.check();
      if (olderThan.isNegative()) throw new IllegalArgumentException("--older-than must be >= 0");
      HistoryCompactor.Result r =
          new HistoryCompactor(
                  existingHistory(common.history, spec), common.now(), olderThan, dryRun)
              .run();
      List<List<Object>> rows = new ArrayList<>();
      for (var c : r.compacted()) {
        rows.add(
            List.of(
                c.table(),
                c.partition(),
                c.filesBefore(),
                dryRun ? "(dry run)" : Long.toString(c.records()),
                ""));
      }
      for (var k : r.skipped()) {
        if (k.reason().startsWith("younger")) continue; // every recent hour: noise
        rows.add(List.of(k.table(), k.partition(), "", "", "skipped: " + k.reason()));
      }
      print(
          new Table(List.of("table", "partition", "files_before", "records", "note"), rows),
          common,
          spec);
      PrintWriter err = spec.commandLine().getErr();
      err.printf(
          Locale.ROOT,
          "collscope history compact: %d hour(s) %s, %d files into %d%s%n",
          r.compacted().size(),
          dryRun ? "to compact" : "compacted",
          r.filesBefore(),
          r.compacted().size(),
          r.recovered() > 0 ? ", " + r.recovered() + " interrupted compaction(s) mended" : "");
      err.flush();
      return Defaults.EXIT_OK;
    }
  }

  static Duration sinceDuration(String s) {
    try {
      return TimeRange.durationOf(s.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--since " + e.getMessage());
    }
  }

  private static void print(Table t, Common common, CommandLine.Model.CommandSpec spec) {
    TablePrinter.print(t, common.format, spec.commandLine().getOut());
  }
}
