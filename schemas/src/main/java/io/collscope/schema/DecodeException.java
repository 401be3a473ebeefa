package io.collscope.schema;

import io.collscope.avro.DeadLetterReason;

/**
 * A record that could not be decoded. Carries its machine-readable reason — the contract's own
 * {@link DeadLetterReason}, so a caller routes the record to the dead-letter topic without mapping
 * names — instead of crashing or returning null. Decoding produces {@code EMPTY} (no bytes), {@code
 * BAD_HEADER} (no single-object marker or a header under 10 bytes), {@code UNKNOWN_FINGERPRINT}
 * (not a published version of the expected type), {@code CORRUPT_BODY} (the body does not decode
 * with the writer's schema) and {@code INVALID} (decoded, but breaks the contract).
 */
public final class DecodeException extends Exception {

  private final DeadLetterReason reason;

  public DecodeException(DeadLetterReason reason, String message, Throwable cause) {
    super(reason + ": " + message, cause);
    this.reason = reason;
  }

  public DecodeException(DeadLetterReason reason, String message) {
    this(reason, message, null);
  }

  public DeadLetterReason reason() {
    return reason;
  }
}
