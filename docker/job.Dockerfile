# The attribution job on the official Flink image: the shaded job jar in usrlib/ (application mode,
# the Flink Kubernetes Operator's local:///opt/flink/usrlib/collscope-job.jar) and collscope's
# configuration file, which the job reads with --config.
# Build from the repository root after `mvn -B package -DskipTests` (docker/README.md):
#   docker build -f docker/job.Dockerfile -t collscope-job:0.1.0-SNAPSHOT .
FROM flink:2.2-java17
ARG VERSION=0.1.0-SNAPSHOT
COPY flink-jobs/target/collscope-flink-jobs-${VERSION}-job.jar /opt/flink/usrlib/collscope-job.jar
COPY conf/collscope.properties /opt/collscope/conf/collscope.properties
