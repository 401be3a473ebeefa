#!/usr/bin/env bash
# Installs the external programs the test suite runs for real, when they are missing. One line
# per program in TOOLS below: binary, Debian package, the environment variable that can point at
# a binary installed elsewhere, and which tests need it.
# Does nothing when they are all there (on PATH, in /usr/bin, or the variable is set), so it is
# cheap to run before every `mvn -B verify` (the README's test command and .ci/run do).
# Installing needs apt-get and root (or sudo). Elsewhere install the packages by hand and point the
# variables at their binaries; the tests fail (never skip) when a program is missing.
set -euo pipefail

# binary                   package                   variable                    used by
TOOLS=(
  "prometheus-alertmanager prometheus-alertmanager COLLSCOPE_ALERTMANAGER_BIN" # AlertForwarderITCase
  "prometheus              prometheus              COLLSCOPE_PROMETHEUS_BIN"   # ExporterITCase
  "chromium-headless-shell chromium-headless-shell COLLSCOPE_CHROMIUM_BIN"    # ReportChromiumITCase
  "gcc                     gcc                     COLLSCOPE_GCC_BIN"          # NcclProfilerPluginTest, NcclOverheadDirectTest (NCCL stand-ins)
  "python3                 python3                 COLLSCOPE_PYTHON_BIN"       # KernelVariantsTest (dev/gpu-bisect/make-variants.py)
  "unshare                 util-linux              COLLSCOPE_UNSHARE_BIN"      # NcclPluginLifecycleTest (a full tmpfs in a private mount namespace)
)

have() {  # BINARY VARIABLE
  local var=$2
  [ -n "${!var:-}" ] && [ -x "${!var}" ] && return 0
  command -v "$1" >/dev/null 2>&1 && return 0
  [ -x "/usr/bin/$1" ]
}

missing=()
services=()
for line in "${TOOLS[@]}"; do
  read -r bin pkg var <<<"$line"
  have "$bin" "$var" || { missing+=("$pkg"); services+=("$pkg"); }
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-test-tools: missing ${missing[*]} and there is no apt-get here;" \
    "install them and set the COLLSCOPE_*_BIN variables (see dev/setup-test-tools.sh)" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup-test-tools: installing ${missing[*]} needs root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "setup-test-tools: installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
# Some packages enable a system service on a fixed port; the tests start their own instances on
# free ports and need none of it.
if command -v systemctl >/dev/null 2>&1; then
  for svc in "${services[@]}"; do
    systemctl is-active --quiet "$svc" 2>/dev/null && { "${sudo[@]}" systemctl disable --now "$svc" >&2 || true; }
  done
fi
for line in "${TOOLS[@]}"; do
  read -r bin pkg var <<<"$line"
  have "$bin" "$var" || { echo "setup-test-tools: $bin still missing after installing $pkg" >&2; exit 1; }
done
