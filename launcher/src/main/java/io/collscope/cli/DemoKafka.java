package io.collscope.cli;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.flink.JobOptions;
import io.collscope.kafka.KafkaClientConfig;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;

/**
 * Where the demo's topics live.
 *
 * <p>By default a temporary broker of the demo's own (plaintext, on this machine, removed with its
 * data at the end): {@link #embedded()}.
 *
 * <p>With {@code demo --kafka HOST:PORT} an existing cluster, reached with the client properties of
 * {@code --kafka-config} (TLS, SASL): {@link #existing}. The demo then never touches a production
 * pipeline's topics: everything it makes is named after one run, {@code collscope-demo-<UTC
 * time>-<random>} — its five topics ({@code <run>.snapshots}, …), the job's consumer group and
 * transactional ids, and the reader's group — so one set of prefixed ACLs lets a principal run it
 * (docs/RELIABILITY.md lists them), and it deletes its topics when it ends.
 */
abstract class DemoKafka implements AutoCloseable {

  /** The prefix of every name the demo makes on an existing cluster. */
  static final String RUN_PREFIX = "collscope-demo-";

  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  abstract String bootstrapServers();

  /** The client properties of every connection the demo makes (none for its own broker). */
  abstract KafkaClientConfig client();

  /** The job's options, with what this cluster needs: its address, client file, and names. */
  abstract JobOptions configure(JobOptions options);

  abstract void createTopics(int partitions, List<String> names);

  /**
   * Client properties for {@code reader}, one of the demo's readers of the job's outputs: a
   * consumer group of its own (each reader sees every partition) under the run's name, so the ACLs
   * of an existing cluster can allow it.
   */
  abstract Map<String, String> readerProperties(String reader);

  @Override
  public abstract void close();

  /** A temporary broker of the demo's own. */
  static DemoKafka embedded() {
    EmbeddedKafka kafka = EmbeddedKafka.startTemporary();
    return new DemoKafka() {
      @Override
      String bootstrapServers() {
        return kafka.bootstrapServers();
      }

      @Override
      KafkaClientConfig client() {
        return KafkaClientConfig.none();
      }

      @Override
      JobOptions configure(JobOptions options) {
        return options.with(JobOptions.BOOTSTRAP, kafka.bootstrapServers());
      }

      @Override
      void createTopics(int partitions, List<String> names) {
        kafka.createTopics(partitions, names.toArray(String[]::new));
      }

      @Override
      Map<String, String> readerProperties(String reader) {
        return Map.of();
      }

      @Override
      public void close() {
        kafka.close();
      }
    };
  }

  /**
   * An existing cluster at {@code bootstrap}; {@code err} hears about topics that could not be
   * deleted at the end.
   */
  static DemoKafka existing(String bootstrap, KafkaClientConfig client, PrintWriter err) {
    return new Existing(bootstrap, client, err, runName());
  }

  /** {@code collscope-demo-20261130-071502-1a2b3c4d}: sortable, and unique per run. */
  static String runName() {
    return RUN_PREFIX
        + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").format(ZonedDateTime.now(ZoneOffset.UTC))
        + "-"
        + UUID.randomUUID().toString().substring(0, 8);
  }

  private static final class Existing extends DemoKafka {
    private final String bootstrap;
    private final KafkaClientConfig client;
    private final PrintWriter err;
    private final String run;
    private final List<String> created = new ArrayList<>();

    Existing(String bootstrap, KafkaClientConfig client, PrintWriter err, String run) {
      this.bootstrap = bootstrap;
      this.client = client;
      this.err = err;
      this.run = run;
    }

    @Override
    String bootstrapServers() {
      return bootstrap;
    }

    @Override
    KafkaClientConfig client() {
      return client;
    }

    @Override
    JobOptions configure(JobOptions options) {
      return options
          .with(JobOptions.BOOTSTRAP, bootstrap)
          .with(JobOptions.KAFKA_CONFIG, client.file())
          .with(JobOptions.SNAPSHOT_TOPIC, run + ".snapshots")
          .with(JobOptions.RANK_WINDOW_TOPIC, run + ".rank-windows")
          .with(JobOptions.ATTRIBUTION_TOPIC, run + ".attribution")
          .with(JobOptions.DEADLETTER_TOPIC, run + ".deadletter")
          .with(JobOptions.ALERT_TOPIC, run + ".alerts")
          .with(JobOptions.GROUP_ID, run + "-job")
          .with(JobOptions.TRANSACTIONAL_ID_PREFIX, run + "-job");
    }

    @Override
    void createTopics(int partitions, List<String> names) {
      List<NewTopic> topics = new ArrayList<>();
      // the cluster's default replication factor: the demo has no opinion on durability
      for (String n : names) topics.add(new NewTopic(n, Optional.of(partitions), Optional.empty()));
      try (Admin admin = admin()) {
        admin.createTopics(topics).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        created.addAll(names);
      } catch (Exception e) {
        throw new IllegalStateException(
            "cannot create the demo's topics "
                + run
                + ".* at "
                + bootstrap
                + " (the principal needs CREATE on topics prefixed "
                + RUN_PREFIX
                + "): "
                + rootMessage(e),
            e);
      }
    }

    @Override
    Map<String, String> readerProperties(String reader) {
      Map<String, String> p = new java.util.HashMap<>(client.properties());
      p.put(ConsumerConfig.GROUP_ID_CONFIG, run + "-" + reader);
      return p;
    }

    @Override
    public void close() {
      if (created.isEmpty()) return;
      try (Admin admin = admin()) {
        admin.deleteTopics(created).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        err.printf("collscope demo: deleted its topics %s.* at %s%n", run, bootstrap);
      } catch (Exception e) {
        err.printf(
            "collscope demo: could not delete its topics %s.* at %s: %s%n",
            run, bootstrap, rootMessage(e));
      }
      err.flush();
    }

    private Admin admin() {
      return Admin.create(
          client.applyTo(
              Map.of(
                  AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                  bootstrap,
                  AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                  (int) ADMIN_TIMEOUT.toMillis())));
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) t = t.getCause();
    return t.getClass().getSimpleName() + ": " + t.getMessage();
  }
}
