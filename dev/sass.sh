#!/usr/bin/env bash
# The SASS of a kernel image, on a machine without a CUDA disassembler (nvcc 13 here ships none).
# Fetches nvdisasm and cuobjdump once from Debian trixie's non-free nvidia-cuda-toolkit 12.4 (an
# 87 MB .deb from deb.debian.org, unpacked with dpkg-deb into ~/.cache/collscope/cudatk: no apt
# source, no root), which read the sm_90a images nvcc 13 builds.
#
#   dev/sass.sh IMAGE                 every function's name and instruction count
#   dev/sass.sh IMAGE NAME            the SASS of every function whose label contains NAME: a
#                                     kernel (osar_f32_two) or an out-of-line function, listed once
#                                     per kernel that has a copy of it ($osar_f32_two$..._reduce...)
#   NORM=1 dev/sass.sh IMAGE NAME     the same, registers, predicates, constants and labels
#                                     renamed away: two copies' schedules compared with diff
#   dev/sass.sh IMAGE KERNEL OTHER    KERNEL's loops, each SAME as one of OTHER's (normalized) or
#                                     DIFF (dev/sass_loops.py; run 188: osar_f32_push_plain
#                                     osar_f32_push)
#
# IMAGE: a cubin, or a fatbin such as gpu-emitter/src/main/resources/collscope/cuda/osar.fatbin
# (its sm_90a ELF is extracted first). Example, the plain and the instrumented kernels' copies of
# the two-shot reduce (run 157):
#   NORM=1 dev/sass.sh osar.fatbin osar_f32_two_plain\$_Z15two_shot_reduce > p.txt
#   NORM=1 dev/sass.sh osar.fatbin osar_f32_two\$_Z15two_shot_reduce > i.txt; diff p.txt i.txt
set -euo pipefail
deb_url="http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/nvidia-cuda-toolkit_12.4.131~12.4.1-2_amd64.deb"
tools="${COLLSCOPE_CACHE:-$HOME/.cache/collscope}/cudatk"
image="${1:?usage: dev/sass.sh IMAGE [NAME]}"
[[ -f "$image" ]] || { echo "sass: no file $image" >&2; exit 2; }
if [[ ! -x "$tools/usr/bin/nvdisasm" ]]; then
  mkdir -p "$tools"
  curl -fsS --retry 3 -o "$tools/toolkit.deb" "$deb_url"
  dpkg-deb -x "$tools/toolkit.deb" "$tools"
  rm -f "$tools/toolkit.deb"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cubin="$image"
if [[ "$(head -c 4 "$image" | od -An -tx1 | tr -d ' \n')" == "50ed55ba" ]]; then  # a fatbin
  abs=$(realpath "$image")
  (cd "$tmp" && "$tools/usr/bin/cuobjdump" -xelf all "$abs" > /dev/null)
  cubin=$(ls "$tmp"/*sm_90*.cubin | head -1)
fi
"$tools/usr/bin/nvdisasm" -c "$cubin" > "$tmp/all.sass"
# A function starts at its label in column 0 (a kernel's name, or $kernel$function for a copy)
if [[ -n "${3:-}" ]]; then
  python3 "$(dirname "$0")/sass_loops.py" "$tmp/all.sass" "$2" "$3"
  exit 0
fi
if [[ -z "${2:-}" ]]; then
  awk '/^[$A-Za-z_][^ ]*:$/ && !/^\.L/ { if (n) printf "%6d  %s\n", c, n; n = $0; c = 0; next }
       /^ +\/\*[0-9a-f]+\*\// { c++ } END { if (n) printf "%6d  %s\n", c, n }' "$tmp/all.sass"
  exit 0
fi
awk -v want="$2" '/^[$A-Za-z_][^ ]*:$/ && !/^\.L/ { on = index($0, want) > 0; if (on) print; next }
                  on && /^ +\/\*[0-9a-f]+\*\// { print }' "$tmp/all.sass" |
  if [[ "${NORM:-0}" == 1 ]]; then
    sed -E 's|^ +/\*[0-9a-f]+\*/ +||; s| */\*.*||; s| *; *$||; s/\bU?R[0-9]+\b/R/g; s/\bU?P[0-9]\b/P/g;
            s/0x[0-9a-f]+/X/g; s/\.L_x_[0-9]+/L/g; s/`\([^)]*\)//g'
  else
    cat
  fi
