package io.collscope.collective;

/**
 * A setting the library cannot work with, named as the library names it (e.g. {@code worldSize}),
 * so that a front end can name it its own way (the command line names its flag).
 */
public final class ConfigException extends IllegalArgumentException {

  private final String parameter;
  private final String problem;

  /**
   * @param parameter the offending setting, e.g. {@code worldSize}
   * @param problem what is wrong with it, worded to follow its name, e.g. {@code must be >= 1, got
   *     0}
   */
  public ConfigException(String parameter, String problem) {
    super(parameter + " " + problem);
    this.parameter = parameter;
    this.problem = problem;
  }

  public String parameter() {
    return parameter;
  }

  public String problem() {
    return problem;
  }
}
