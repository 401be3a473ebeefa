package io.collscope.flink;

import java.util.List;

/**
 * The JVM options a Flink 2.2 distribution gives every JobManager and TaskManager on Java 17 (its
 * {@code config.yaml}, {@code env.java.opts.all}): Flink's serializers reflect into these JDK
 * packages. Whoever starts Flink's processes without Flink's scripts passes them: {@code collscope
 * cluster} (LocalCluster) and the tests' session cluster.
 */
public final class FlinkJvmOptions {

  public static final List<String> JAVA_17 =
      List.of(
          "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
          "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.net=ALL-UNNAMED",
          "--add-opens=java.base/java.io=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
          "--add-opens=java.base/java.text=ALL-UNNAMED",
          "--add-opens=java.base/java.time=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED");

  private FlinkJvmOptions() {}
}
