package io.collscope.flink.source;

/**
 * A Kafka record exactly as it arrived: decoding happens in the job, so an undecodable record
 * reaches the dead-letter topic with its bytes and coordinates instead of failing the source.
 */
public class RawRecord {
  public String topic;
  public int partition;
  public long offset;
  public long timestamp;
  public byte[] key;
  public byte[] value;

  public RawRecord() {}

  public RawRecord(
      String topic, int partition, long offset, long timestamp, byte[] key, byte[] value) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.timestamp = timestamp;
    this.key = key;
    this.value = value;
  }
}
