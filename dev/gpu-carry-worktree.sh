#!/usr/bin/env bash
# dev/gpu-carry.sh for a helper's worktree: the device tool sends the session's checkout, not the
# worktree, so this builds the worktree without `mvn install` (no jar in ~/.m2 changes) and puts
# what the device needs into DEST (default: .carry/<branch> of the main checkout, git-ignored):
#   DEST/gpu-node/  the GPU-node runtime built from this worktree's target/ folders
#   DEST/test/      the JUnit console launcher, AssertJ and gpu-emitter's test classes
#   DEST/dev/       this worktree's dev/ scripts (run them from the checkout's root there)
# On the device, from the checkout's root: CARRY=DEST dev-script ... (the scripts read $CARRY).
# Near the 64 MiB the device tool sends, dev/gpu-carry-pack.sh DEST packs it into DEST.tgz (a third
# smaller) to carry instead, unpacked first on the device.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
branch=$(git -C "$root" rev-parse --abbrev-ref HEAD)
main=$(git -C "$root" worktree list --porcelain | awk '/^worktree /{print $2; exit}')
dest="$(realpath -m "${1:-$main/.carry/$branch}")"
cd "$root"
mvn -B -o -q -DskipTests -Dspotless.check.skip=true package
mvn -B -o -q -Dspotless.check.skip=true -pl gpu-emitter test-compile
dev/gpu-node-runtime.sh "$dest/gpu-node"
# Kafka's client and codecs too: bench and the GPU tests never load them, and the checkout, the
# runtime and the kernel variants must fit the 64 MiB the device tool sends.
rm -f "$dest"/gpu-node/lib/zstd-jni-* "$dest"/gpu-node/lib/snappy-java-* "$dest"/gpu-node/lib/lz4-java-*
if [[ "${KEEP_KAFKA:-0}" != 1 ]]; then
  # ... but keep its exception classes: picocli reflects over NodeCli's commands, whose methods
  # name some of them, so `collscope bench gemm-ar` fails to start without them (run 112)
  kc=$(ls "$dest"/gpu-node/lib/kafka-clients-[0-9]*.jar)
  tmpkc=$(mktemp -d); rm -f "$dest/gpu-node/lib/kafka-clients-subset.jar"
  (cd "$tmpkc" && unzip -q "$kc" 'org/apache/kafka/common/errors/*' '*Exception*.class' \
    && zip -q -r "$dest/gpu-node/lib/kafka-clients-subset.jar" org)
  rm -rf "$tmpkc" "$kc"
fi
rm -rf "$dest/test" "$dest/dev" && mkdir -p "$dest/test"
# Not offline: on a fresh machine the console launcher is in no ~/.m2 yet (run 163 carried none, and
# every GPU test class failed to start on the device).
mvn -B -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.4 -DoutputDirectory="$dest/test"
mvn -B -q dependency:copy -Dartifact=org.assertj:assertj-core:3.27.7 -DoutputDirectory="$dest/test"
for jar in junit-platform-console-standalone-1.14.4.jar assertj-core-3.27.7.jar; do
  [[ -f "$dest/test/$jar" ]] || { echo "gpu-carry-worktree: $dest/test/$jar is missing" >&2; exit 1; }
done
(cd gpu-emitter/target/test-classes && zip -q -r "$dest/test/gpu-emitter-tests.jar" io)
cp -r dev "$dest/dev"
[[ -z "${VARIANTS:-}" ]] || dev/gpu-bisect/build-variants.sh "$dest/variants"
du -sh "$dest" >&2
