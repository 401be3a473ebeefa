#!/usr/bin/env bash
# Packs a prepared carry folder (dev/gpu-carry-worktree.sh, plus any kernel images put under it)
# into DEST.tgz beside it, for the device tool's 64 MiB: the jlink runtime's libjvm.so and the
# class files shrink by a third (a 49.7 MB carry packs into 34.5 MB), which leaves room for the
# GPU tests and a dozen more kernel images in one call. Carry DEST.tgz instead of DEST and unpack
# it first on the device, from the checkout's root (run-x2-perf.sh and run-samplings.sh do that
# themselves when CARRY is missing and CARRY.tgz is there):
#   tar xzf .carry/main.tgz -C .carry && CARRY=.carry/main bash dev/gpu-whatever.sh $OUT
# Usage: dev/gpu-carry-pack.sh [DEST]   (default .carry/main of this checkout)
# First used on a device in runs 154-157 (2026-12-01).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$(realpath -m "${1:-$root/.carry/main}")"
[[ -d "$dest" ]] || { echo "gpu-carry-pack: no folder $dest (run dev/gpu-carry-worktree.sh first)" >&2; exit 2; }
tar czf "$dest.tgz" -C "$(dirname "$dest")" "$(basename "$dest")"
echo "gpu-carry-pack: $dest.tgz $(du -k --apparent-size "$dest.tgz" | cut -f1) KiB (folder $(du -sk --apparent-size "$dest" | cut -f1) KiB); carry it instead of the folder" >&2
