package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.config.Config;
import io.collscope.config.ConfigFile;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * conf/collscope.properties under the real command tree: flag &gt; environment &gt; file &gt;
 * default, the check at start (unknown key, bad value: one line naming the key, exit 2), and {@code
 * config show}.
 */
class ConfigCommandTest {

  @TempDir Path dir;

  /** The command line with this file and environment, and what it printed. */
  private record Run(CommandLine cl, int rc, String out, String err) {}

  private Run run(Map<String, String> file, Map<String, String> env, String... args)
      throws Exception {
    Path path = dir.resolve("collscope.properties");
    StringBuilder sb = new StringBuilder();
    file.forEach((k, v) -> sb.append(k).append(" = ").append(v).append('\n'));
    Files.writeString(path, sb);
    CommandLine cl = Collscope.commandLine();
    Config.install(cl, ConfigFile.load(path), env);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int rc = Collscope.checkConfig(cl, true);
    if (rc == 0 && args.length > 0) rc = cl.execute(args);
    return new Run(cl, rc, out.toString(), err.toString());
  }

  private static Object valueAfterParse(
      CommandLine cl, String command, String option, String... args) {
    cl.parseArgs(args);
    return cl.getSubcommands().get(command).getCommandSpec().findOption(option).getValue();
  }

  @Test
  void flagBeatsEnvironmentBeatsFileBeatsDefault() throws Exception {
    Run r =
        run(
            Map.of(
                "ranks", "6", "bootstrap", "file-host:1", "emit.interval", "3s", "backend", "cpu"),
            Map.of("COLLSCOPE_BOOTSTRAP", "env-host:2", "COLLSCOPE_BACKEND", "cuda"));
    assertThat(r.rc()).as(r.err()).isZero();
    // file over default
    assertThat(valueAfterParse(r.cl(), "emit", "--ranks", "emit")).isEqualTo(6);
    // environment over file
    assertThat(valueAfterParse(r.cl(), "emit", "--bootstrap", "emit")).isEqualTo("env-host:2");
    assertThat(valueAfterParse(r.cl(), "emit", "--backend", "emit")).isEqualTo("cuda");
    // flag over everything
    assertThat(valueAfterParse(r.cl(), "emit", "--ranks", "emit", "--ranks", "8")).isEqualTo(8);
    assertThat(valueAfterParse(r.cl(), "emit", "--bootstrap", "emit", "--bootstrap", "flag-host:3"))
        .isEqualTo("flag-host:3");
    // a command's own key applies to that command only
    assertThat(valueAfterParse(r.cl(), "emit", "--interval", "emit").toString()).isEqualTo("PT3S");
    assertThat(valueAfterParse(r.cl(), "demo", "--interval", "demo").toString()).isEqualTo("PT1S");
  }

  @Test
  void configShowPrintsEachValueWithItsSource() throws Exception {
    Run r =
        run(
            Map.of("ranks", "6", "attribution.window", "3s"),
            Map.of("COLLSCOPE_BOOTSTRAP", "env-host:2"),
            "config",
            "show",
            "emit",
            "--interval",
            "2s");
    assertThat(r.rc()).as(r.err()).isZero();
    assertThat(r.out())
        .containsPattern("emit\\.ranks +6 +file ranks")
        .containsPattern("emit\\.bootstrap +env-host:2 +environment COLLSCOPE_BOOTSTRAP")
        .containsPattern("emit\\.interval +2s +flag --interval")
        .containsPattern("emit\\.communicator +comm0 +default")
        .containsPattern("emit\\.inject +default")
        .doesNotContain("__no_default_value__")
        .doesNotContain("demo.");
    Run job = run(Map.of("attribution.window", "3s"), Map.of(), "config", "show", "attribution");
    assertThat(job.out())
        .containsPattern("attribution\\.window +3s +file attribution.window")
        .containsPattern("attribution\\.state-ttl +60s +default");
  }

  @Test
  void anUnknownKeyStopsEveryCommandWithOneLineNamingIt() throws Exception {
    Run r = run(Map.of("rnaks", "4"), Map.of(), "config", "show");
    assertThat(r.rc()).isEqualTo(2);
    assertThat(r.err().strip()).doesNotContain("\n").contains("unknown key 'rnaks'");
    assertThat(r.out()).isEmpty();
    assertThat(run(Map.of("emit.windw", "4s"), Map.of()).err()).contains("'emit.windw'");
    assertThat(run(Map.of("attribution.windw", "4s"), Map.of()).rc()).isEqualTo(2);
  }

  @Test
  void aBadValueStopsEveryCommandWithOneLineNamingTheKey() throws Exception {
    Run r = run(Map.of("emit.ranks", "many"), Map.of(), "config", "show");
    assertThat(r.rc()).isEqualTo(2);
    assertThat(r.err().strip())
        .doesNotContain("\n")
        .contains("key 'emit.ranks'")
        .contains("'many' is not an int");
    Run d = run(Map.of("interval", "soon"), Map.of());
    assertThat(d.rc()).isEqualTo(2);
    assertThat(d.err()).contains("key 'interval'");
    Run j = run(Map.of("attribution.window", "soon"), Map.of());
    assertThat(j.rc()).isEqualTo(2);
    assertThat(j.err()).contains("key 'attribution.window'").contains("not a duration");
  }

  @Test
  void theShippedFileIsValidAndChangesNothing() throws Exception {
    Path shipped = Path.of("../conf/collscope.properties");
    CommandLine cl = Collscope.commandLine();
    Config.install(cl, ConfigFile.load(shipped), Map.of());
    StringWriter err = new StringWriter();
    cl.setErr(new PrintWriter(err, true));
    assertThat(Collscope.checkConfig(cl, true)).as(err.toString()).isZero();
    // Every example in it is commented out: an installation starts from the defaults.
    assertThat(ConfigFile.load(shipped).entries()).isEmpty();
    // ... and every commented example is a key the check accepts.
    for (String line : Files.readAllLines(shipped)) {
      if (!line.matches("#[a-z][a-z.-]* = .*")) continue;
      String[] kv = line.substring(1).split(" = ", 2);
      Run r = run(Map.of(kv[0], kv.length > 1 && !kv[1].isEmpty() ? kv[1] : "x"), Map.of());
      assertThat(r.err()).as(line).doesNotContain("unknown key");
    }
  }

  @Test
  void secretsAreMasked() {
    assertThat(Config.display("kafka-sasl-password", "hunter2")).isEqualTo("********");
    assertThat(Config.display("alertmanager-token", "t")).isEqualTo("********");
    assertThat(Config.display("bootstrap", "kafka:9092")).isEqualTo("kafka:9092");
  }
}
