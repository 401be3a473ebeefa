#!/usr/bin/env bash
# Records the runs of a fault set (FAULT_SET, default dev/fault-set.txt) on one backend, one
# recording per line, and copies the set beside them as OUT_DIR/fault-set.txt:
#   dev/record-fault-set.sh BACKEND OUT_DIR [NAME...]
# BACKEND is cpu or cuda; NAMEs pick lines (default: all). On a GPU machine run it after
# dev/gpu-carry.sh brought .carry/ there (COLLSCOPE=.carry/gpu-node/bin/collscope); here it uses
# bin/collscope. Each run writes OUT_DIR/BACKEND-NAME.snapshots and its log beside it. EMIT_OPTS:
# more `emit` options for every run (e.g. --elements 1048576: 4 MiB f32 per rank, the two-shot
# path at 8 ranks), recorded in the copied set's first line. INTERVAL: the snapshot interval
# (default 1s; the CPU floor set uses 250ms, as the matrix does). PACK=FILE.tgz packs OUT_DIR into it
# after every run: the device tool brings back at most 8 files from $OUT (run 162 lost recordings
# to that), so on the device record into a folder of its own and PACK=$OUT/NAME.tgz.
set -u
cd "$(dirname "$0")/.."
backend=$1 out=$2; shift 2
cs=${COLLSCOPE:-bin/collscope}
set_file=${FAULT_SET:-dev/fault-set.txt}
mkdir -p "$out"
{ [ -z "${EMIT_OPTS:-}" ] || echo "# recorded with EMIT_OPTS=$EMIT_OPTS"; cat "$set_file"; } > "$out/fault-set.txt"
sed 's/#.*//' "$set_file" | while read -r name ranks seconds inject _marks; do
  case "$name" in ''|@*) continue ;; esac
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  f="$out/$backend-$name.snapshots"
  rm -f "$f"
  timeout $((seconds + 60)) $cs emit --backend "$backend" --ranks "$ranks" --seconds "$seconds" \
    --interval "${INTERVAL:-1s}" ${EMIT_OPTS:-} ${inject:+--inject "$inject"} --cluster "${CLUSTER:-lab}" --job "$name" \
    --communicator tp0 --record "$f" >"$out/$backend-$name.log" 2>&1 </dev/null
  echo "recorded $f rc=$?" >&2
  tail -1 "$out/$backend-$name.log" >&2
  [ -z "${PACK:-}" ] || tar czf "$PACK" -C "$out" .
done
