package io.collscope.broker;

/**
 * Entry point of the broker's child JVM: formats the KRaft storage if needed, watches the parent
 * process so the broker never outlives it, then runs {@code kafka.Kafka}.
 *
 * <p>Arguments: {@code PROPERTIES_FILE CLUSTER_ID [PARENT_PID]}.
 */
public final class BrokerMain {

  private BrokerMain() {}

  public static void main(String[] args) throws Exception {
    String props = args[0];
    String clusterId = args[1];
    if (args.length > 2) {
      long parent = Long.parseLong(args[2]);
      ProcessHandle.of(parent)
          .ifPresentOrElse(
              p ->
                  p.onExit()
                      .thenRun(
                          () -> {
                            System.err.println("collscope broker: parent " + parent + " exited");
                            Runtime.getRuntime().halt(0);
                          }),
              () -> Runtime.getRuntime().halt(0));
    }
    java.nio.file.Path meta =
        java.nio.file.Path.of(loadProperty(props, "log.dirs"), "meta.properties");
    if (!java.nio.file.Files.exists(meta)) {
      int rc =
          kafka.tools.StorageTool.execute(
              new String[] {"format", "-t", clusterId, "-c", props, "--ignore-formatted"},
              System.out);
      if (rc != 0) {
        System.err.println("collscope broker: storage format failed with " + rc);
        System.exit(rc);
      }
    }
    kafka.Kafka.main(new String[] {props});
  }

  private static String loadProperty(String file, String key) throws java.io.IOException {
    java.util.Properties p = new java.util.Properties();
    try (var in = java.nio.file.Files.newInputStream(java.nio.file.Path.of(file))) {
      p.load(in);
    }
    return p.getProperty(key);
  }
}
