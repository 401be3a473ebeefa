package io.collscope.emitter;

import java.net.InetAddress;
import java.util.UUID;

/**
 * Who is reporting: identity fields stamped on every record, plus this incarnation's boot_id (fresh
 * at every emitter start, so consumers restart their baselines).
 */
public record Identity(
    String cluster, String job, String communicator, String host, String bootId) {

  public static Identity of(String cluster, String job, String communicator) {
    return new Identity(cluster, job, communicator, localHost(), UUID.randomUUID().toString());
  }

  static String localHost() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "localhost";
    }
  }
}
