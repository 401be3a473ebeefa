package io.collscope.health;

/** NVML cannot be used on this node: no driver library, or its init failed. */
public final class NvmlUnavailableException extends RuntimeException {
  public NvmlUnavailableException(String message) {
    super(message);
  }
}
