package io.collscope.collective;

/** A backend that cannot run on this machine, e.g. cuda where no GPU is usable. */
public final class BackendUnavailableException extends IllegalStateException {

  private final String backend;
  private final String reason;

  public BackendUnavailableException(String backend, String reason) {
    super("the " + backend + " backend cannot run here: " + reason);
    this.backend = backend;
    this.reason = reason;
  }

  /** The backend's name, e.g. {@code cuda}. */
  public String backend() {
    return backend;
  }

  public String reason() {
    return reason;
  }
}
