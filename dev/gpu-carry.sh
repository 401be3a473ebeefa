#!/usr/bin/env bash
# Prepares .carry/ (git-ignored) for a run on a GPU machine that has no Java and no Maven:
#   .carry/gpu-node/   the GPU-node runtime (dev/gpu-node-runtime.sh) without Kafka's
#                      compression codecs, which recording to a file does not use (keeps the
#                      carried tree under 64 MiB)
#   .carry/test/       the JUnit console launcher, AssertJ and gpu-emitter's test classes
# Then, on the GPU machine, from the repository root: dev/gpu-device-run.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mvn -B -q -DskipTests -Dspotless.check.skip=true install
mvn -B -q -pl gpu-emitter test-compile
dev/gpu-node-runtime.sh .carry/gpu-node
rm -f .carry/gpu-node/lib/zstd-jni-* .carry/gpu-node/lib/snappy-java-* .carry/gpu-node/lib/lz4-java-*
rm -rf .carry/test && mkdir -p .carry/test
mvn -B -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.4 -DoutputDirectory=.carry/test
mvn -B -q dependency:copy -Dartifact=org.assertj:assertj-core:3.27.7 -DoutputDirectory=.carry/test
(cd gpu-emitter/target/test-classes && zip -q -r "$root/.carry/test/gpu-emitter-tests.jar" io)
du -sh .carry/gpu-node .carry/test >&2
