#!/usr/bin/env bash
# Records the CPU runs that RecordedRunsITCase replays: one per fault, 4 ranks, 1 s snapshots,
# 25 s, written to recordings/cpu/. Two jobs with the same communicator name run at the same
# time (job-a with a slow rank, job-b clean) to check that their state never mixes.
# Usage: dev/record-cpu-runs.sh   (replaces the recordings; commit them with the test's table)
set -euo pipefail
cd "$(dirname "$0")/.."
out=recordings/cpu
mkdir -p "$out"
rec() { # name, then emit flags
  local name=$1; shift
  rm -f "$out/$name.snapshots"
  bin/collscope emit --backend cpu --ranks 4 --interval 1s --seconds 25 --cluster lab \
    --record "$out/$name.snapshots" "$@" >"$out/$name.log" 2>&1
  echo "recorded $out/$name.snapshots" >&2
}
rec cpu-clean --job clean --communicator tp0
rec cpu-slow-rank-2 --job slow-rank --communicator tp0 --inject slow-rank=2:300us
rec cpu-slow-link-1-3 --job slow-link --communicator tp0 --inject slow-link=1-\>3:300us
rec cpu-slow-publish-2 --job slow-publish --communicator tp0 --inject slow-publish=2:300us
rec cpu-slow-ack-1 --job slow-ack --communicator tp0 --inject slow-ack=1:300us
rec cpu-two-culprits --job two-culprits --communicator tp0 --inject slow-rank=1:300us,slow-link=2-\>3:300us
rec cpu-dead-rank-3 --job dead-rank --communicator tp0 --inject dead-rank=3
rec cpu-job-a-slow-rank-0 --job job-a --communicator comm0 --inject slow-rank=0:300us &
rec cpu-job-b-clean --job job-b --communicator comm0
wait
