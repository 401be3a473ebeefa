package io.collscope.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** One command-line invocation's exit code and output, captured in-process. */
record CliRun(int exitCode, String out, String err) {

  static CliRun of(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int rc = Collscope.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
    return new CliRun(rc, out.toString(), err.toString());
  }
}
