package io.collscope.counters;

/** No consistent snapshot could be taken within the retry bound; nothing is returned. */
public final class TornSnapshotException extends Exception {
  public TornSnapshotException(String message) {
    super(message);
  }
}
