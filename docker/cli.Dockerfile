# The collscope command line (emit, tail, exporter, alerts forward, job submit, ...) from the
# distribution archive, on a Java 17 runtime. Build from the repository root after
# `mvn -B package -DskipTests` (docker/README.md):
#   docker build -f docker/cli.Dockerfile -t collscope:0.1.0-SNAPSHOT .
FROM eclipse-temurin:17-jre
ARG VERSION=0.1.0-SNAPSHOT
# ADD unpacks a local tar.gz.
ADD distribution/target/collscope-${VERSION}-bin.tar.gz /opt/
RUN ln -s /opt/collscope-${VERSION} /opt/collscope
ENV COLLSCOPE_HOME=/opt/collscope
WORKDIR /var/lib/collscope
# The exporter's metrics.
EXPOSE 9464
ENTRYPOINT ["/opt/collscope/bin/collscope"]
CMD ["--help"]
