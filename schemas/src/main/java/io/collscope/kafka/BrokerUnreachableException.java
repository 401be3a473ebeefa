package io.collscope.kafka;

/** The Kafka broker did not answer within the configured timeout. */
public final class BrokerUnreachableException extends Exception {
  public BrokerUnreachableException(String message, Throwable cause) {
    super(message, cause);
  }
}
