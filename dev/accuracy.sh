#!/usr/bin/env bash
# Reproduces docs/ACCURACY.md's tables on this machine (about an hour and a half on 2 cores): the
# CPU fault matrix at its stated floors, ten minutes of clean runs, an hour of simulated clean
# windows, the simulator's large worlds (fewer families there: a 1024-rank snapshot is 30 KB),
# every GPU fault set recorded under recordings/gpu, and the live time to verdict. Each table is
# written to docs/accuracy/. COLLSCOPE overrides the command (e.g. a copy of the built launcher,
# so that editing sources meanwhile cannot rebuild it under the runs). dev/accuracy.sh STEP runs
# one step: cpu, clean, sim, gpu or live.
set -u
cd "$(dirname "$0")/.."
o=docs/accuracy
mkdir -p "$o"
run() { # NAME ARGS...
  local name=$1; shift
  echo "== $name: collscope eval $*" >&2
  { echo "# $(date -u +%FT%TZ) $(nproc) cores: bin/collscope eval $*"; ${COLLSCOPE:-bin/collscope} eval "$@"; } \
    >"$o/$name.txt" 2>"$o/$name.log"
  echo "rc=$?" >&2; tail -4 "$o/$name.txt" >&2
}
case "${1:-all}" in
  all|cpu)
    run eval-cpu-w2-8 --worlds 2,4,8 --floor 200us
    run eval-cpu-w16 --worlds 16 --floor 500us ;;&
  all|clean)
    run eval-cpu-clean-10min --faults clean --worlds 2,4,8,16 --seconds 150 ;;&
  all|sim)
    run eval-sim-clean-hour --backend sim --faults clean --worlds 8 --seconds 3600 --interval 1s
    run eval-sim-w64-256 --backend sim --worlds 64,256 --floor 100us --severities floor,10x \
      --interval 1s --faults clean,slow-rank,slow-link,dead-rank,intermittent,2-unequal,3-equal,uniform
    COLLSCOPE_JAVA_OPTS=-Xmx12g run eval-sim-w1024 --backend sim --worlds 1024 --floor 100us --severities 2x --interval 1s \
      --seconds 10 --onset 5s --faults clean,slow-rank,slow-link,2-unequal ;;&
  all|gpu)
    for d in recordings/gpu/*/fault-set.txt; do
      d=$(dirname "$d")
      run "eval-gpu-${d##*-run}" --recorded "$d" --interval 1s
    done ;;&
  all|live)
    run time-to-verdict-live --live slow-rank=2:300us@10s --worlds 8 --seconds 25 ;;
esac
