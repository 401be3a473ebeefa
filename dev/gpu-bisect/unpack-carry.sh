# Sourced by the device scripts (run-x2-perf.sh, run-samplings.sh) with C set to the carry folder:
# a carry packed by dev/gpu-carry-pack.sh (C.tgz, carried instead of the folder) is unpacked here,
# afresh whenever the archive is newer than the last unpacking (a warm device machine keeps the
# ignored folder of an earlier call, which would otherwise run the earlier call's images).
if [[ -f "$C.tgz" && "$C.tgz" -nt "$C/.unpacked" ]]; then
  rm -rf "$C" && tar xzf "$C.tgz" -C "$(dirname "$C")" && touch "$C/.unpacked"
fi
