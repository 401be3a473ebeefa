#!/usr/bin/env bash
# Builds libnccl-profiler-collscope.so (x86-64 Linux, glibc) when its sources changed. The library
# and the hash of the sources it was built from are committed under
# src/main/resources/collscope/nccl/, so nodes without a compiler use the prebuilt one;
# NcclProfilerPluginTest fails when the committed library is stale.
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
"$CC" -std=gnu11 -O2 -g0 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
  -ffile-prefix-map="$here"=. -Wl,--build-id=none -Wl,-soname,libnccl-profiler-collscope.so \
  -o "$out/libnccl-profiler-collscope.so" "$here/collscope_profiler.c" -lpthread
echo "$hash" > "$out/libnccl-profiler-collscope.so.sha256"
echo "build: rebuilt libnccl-profiler-collscope.so ($hash)" >&2
