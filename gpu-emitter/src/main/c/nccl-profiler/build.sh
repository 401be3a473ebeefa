#!/usr/bin/env bash
# Builds libnccl-profiler-collscope.so when its sources changed: for x86-64 Linux (glibc) with gcc,
# and for aarch64 Linux (Grace-based nodes: GH200, GB200) with the cross compiler
# aarch64-linux-gnu-gcc (Debian's gcc-aarch64-linux-gnu; CC_AARCH64 names another) into aarch64/.
# The libraries and the hash of the sources they were built from are committed under
# src/main/resources/collscope/nccl/, so nodes without a compiler use the prebuilt ones;
# NcclProfilerPluginTest fails when they are stale or not of their architecture.
# Usage: build.sh [--force]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../resources/collscope/nccl"
hash=$(cd "$here" && cat collscope_profiler.c collscope_block.h ../../cuda/counter_block.h nccl/*.h | sha256sum | cut -d' ' -f1)
if [[ "${1:-}" != --force && -f "$out/libnccl-profiler-collscope.so" && "$(cat "$out/libnccl-profiler-collscope.so.sha256" 2>/dev/null)" == "$hash" ]]; then
  exit 0
fi
CC="${CC:-gcc}"
mkdir -p "$out"
# -fvisibility=hidden: only ncclProfiler_v5/_v6 and the two collscope_nccl_* entry points are
# exported. No C++ runtime, only libc and pthreads: the library loads into any training process.
CC_AARCH64="${CC_AARCH64:-aarch64-linux-gnu-gcc}"
if ! command -v "$CC_AARCH64" >/dev/null 2>&1; then
  echo "build: no $CC_AARCH64 for the aarch64 library: apt-get install gcc-aarch64-linux-gnu" \
    "(or set CC_AARCH64); nothing rebuilt" >&2
  exit 1
fi
mkdir -p "$out/aarch64"
for target in "$CC:$out" "$CC_AARCH64:$out/aarch64"; do
  "${target%%:*}" -std=gnu11 -O2 -g0 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
    -ffile-prefix-map="$here"=. -Wl,--build-id=none -Wl,-soname,libnccl-profiler-collscope.so \
    -o "${target#*:}/libnccl-profiler-collscope.so" "$here/collscope_profiler.c" -lpthread
done
echo "$hash" > "$out/libnccl-profiler-collscope.so.sha256"
echo "build: rebuilt libnccl-profiler-collscope.so for x86-64 and aarch64 ($hash)" >&2
