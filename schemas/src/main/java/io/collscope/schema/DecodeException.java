package io.collscope.schema;

/**
 * A record that could not be decoded. Carries a machine-readable {@link Reason} so callers can
 * route the record to a dead-letter topic with an explanation instead of crashing or returning
 * null.
 */
public final class DecodeException extends Exception {

  /** Why a record could not be decoded. */
  public enum Reason {
    /** Zero bytes or null. */
    EMPTY,
    /** Missing the Avro single-object marker 0xC3 0x01 or shorter than the 10-byte header. */
    BAD_HEADER,
    /** The schema fingerprint is not one of the published versions this reader knows. */
    UNKNOWN_FINGERPRINT,
    /** The header was fine but the body did not decode with the writer's schema. */
    CORRUPT_BODY,
    /** Decoded, but violates the contract (e.g. array lengths differ from world_size). */
    INVALID
  }

  private final Reason reason;

  public DecodeException(Reason reason, String message, Throwable cause) {
    super(reason + ": " + message, cause);
    this.reason = reason;
  }

  public DecodeException(Reason reason, String message) {
    this(reason, message, null);
  }

  public Reason reason() {
    return reason;
  }
}
