# Sourced (no arguments) by the device scripts that read CARRY (default .carry/main) and write
# into OUT_DIR (their first argument, else $OUT, else /tmp/out): sets C (the carry, unpacked by
# unpack-carry.sh when packed), J (its java), OUT_DIR, and O (a fresh folder for the run's logs).
C=${CARRY:-.carry/main}
source "$(dirname "${BASH_SOURCE[0]}")/unpack-carry.sh"
J=$C/gpu-node/jre/bin/java
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
