#!/usr/bin/env bash
# Builds dist/gpu-node/: a self-contained collscope runtime for GPU nodes without Java.
#   dist/gpu-node/jre/   a jlink image of the local JDK (the modules Kafka, Avro and JCuda use)
#   dist/gpu-node/lib/   the emitter's jars only (no Flink, no broker): emit, tail, bench
#   dist/gpu-node/bin/collscope
# Copy the folder to the node and run:  dist/gpu-node/bin/collscope emit --backend cuda ...
# Usage: dev/gpu-node-runtime.sh [OUT_DIR]   (default dist/gpu-node)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/dist/gpu-node}")"
lib="$root/launcher/target/lib"
[[ -d "$lib" ]] || (cd "$root" && mvn -B -q -DskipTests -Dspotless.check.skip=true install)
rm -rf "$out" && mkdir -p "$out/lib" "$out/bin"

jlink --add-modules java.base,java.logging,java.management,java.naming,java.security.sasl,java.security.jgss,java.xml,jdk.unsupported,jdk.crypto.ec \
  --strip-debug --no-header-files --no-man-pages --compress=2 --output "$out/jre"
# libjvm.so keeps ~4 MB of symbols jlink does not strip: without them the runtime, a checkout and
# a few kernel images fit the 64 MiB the device tool sends
command -v strip > /dev/null && strip --strip-unneeded "$out/jre/lib/server/libjvm.so"

keep='^(collscope-(schemas|gpu-emitter|broker)|avro|jackson-(core|databind|annotations)|commons-compress|commons-io|commons-lang3|kafka-clients|lz4-java|snappy-java|zstd-jni|jcuda|jna|picocli|slf4j-api)-[0-9]'
for j in "$lib"/*.jar; do
  n=$(basename "$j")
  if [[ "$n" =~ $keep ]]; then cp "$j" "$out/lib/"; fi
done
cp "$root"/launcher/target/collscope-launcher-*.jar "$out/lib/"
# slf4j-simple instead of log4j-core: log4j needs java.desktop, 12 MB more of runtime.
(cd "$root" && mvn -B -q dependency:copy -Dartifact=org.slf4j:slf4j-simple:2.0.17 -DoutputDirectory="$out/lib")
# JCuda needs only its driver-API library from jcuda-natives (1 MB of its 9 MB).
tmp=$(mktemp -d)
(cd "$tmp" && unzip -q "$lib"/jcuda-natives-*-linux-x86_64.jar 'lib/libJCudaDriver-*' && zip -q -r "$out/lib/jcuda-natives-driver.jar" lib)
rm -rf "$tmp"

cat > "$out/bin/collscope" <<'SH'
#!/usr/bin/env bash
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Emulated ranks put one stream each on a GPU; give every stream its own hardware queue.
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"
exec "$here/jre/bin/java" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -Dorg.slf4j.simpleLogger.log.io.collscope=info -Dorg.slf4j.simpleLogger.logFile=System.err \
  ${COLLSCOPE_JAVA_OPTS:-} -cp "$here/lib/*" io.collscope.cli.NodeCli "$@"
SH
chmod +x "$out/bin/collscope"
du -sh "$out" "$out/jre" "$out/lib" >&2
