#!/usr/bin/env bash
# JMH microbenchmarks of the job's stages (benchmarks/): builds the module offline if needed and
# runs them with the GC profiler (allocation per operation). Arguments go to JMH, e.g.
#   dev/jmh.sh -p world=1024 StageBenchmarks.attribution
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f benchmarks/target/classpath.txt || -n "$(find benchmarks/src -newer benchmarks/target/classpath.txt)" ]]; then
  mvn -B -o -q package -pl benchmarks -am -DskipTests
fi
exec java -cp "benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)" \
  org.openjdk.jmh.Main -prof gc "$@"
