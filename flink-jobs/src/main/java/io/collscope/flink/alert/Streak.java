package io.collscope.flink.alert;

/**
 * One alert's run of windows: how many bad windows in a row (present) and good ones in a row
 * (absent), and, once it fired, what it fired with — so its RESOLVED transition carries the same
 * labels, and so the same fingerprint. A POJO for keyed state.
 */
public class Streak {
  public int present;
  public int absent;

  /** End of the first window of the current bad run, ms. */
  public long runStartedAt;

  public boolean open;
  public long startsAt;
  public String severity = "";
  public String sizeBucket = "";
  public String collective = "";

  /**
   * The hardware cause of the finding in the window that fired it (Finding.hardware_cause), empty
   * for NONE: a label, kept for the RESOLVED transition like the others.
   */
  public String hardwareCause = "";

  public Streak() {}
}
