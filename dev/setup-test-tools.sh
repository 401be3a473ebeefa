#!/usr/bin/env bash
# Installs the external programs the test suite runs for real, when they are missing:
#   prometheus-alertmanager (Debian's package, 0.25): AlertForwarderITCase delivers alerts to it.
# Does nothing when they are there (on PATH, in /usr/bin, or $COLLSCOPE_ALERTMANAGER_BIN is set),
# so it is cheap to run before every `mvn -B verify` (the README's test command and .ci/run do).
# Installing needs apt-get and root (or sudo). Elsewhere install Alertmanager 0.25 by hand and
# point COLLSCOPE_ALERTMANAGER_BIN at it.
set -euo pipefail

have_alertmanager() {
  [ -n "${COLLSCOPE_ALERTMANAGER_BIN:-}" ] && [ -x "${COLLSCOPE_ALERTMANAGER_BIN}" ] && return 0
  command -v prometheus-alertmanager >/dev/null 2>&1 && return 0
  [ -x /usr/bin/prometheus-alertmanager ]
}

have_alertmanager && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-test-tools: prometheus-alertmanager is missing and there is no apt-get here;" \
    "install Alertmanager 0.25 and set COLLSCOPE_ALERTMANAGER_BIN to its binary" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup-test-tools: installing prometheus-alertmanager needs root:" \
      "apt-get install -y prometheus-alertmanager" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "setup-test-tools: installing prometheus-alertmanager (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -q --no-install-recommends prometheus-alertmanager >&2
# The package enables a system service on :9093; the tests start their own instances on free
# ports and need none of it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus-alertmanager 2>/dev/null; then
  "${sudo[@]}" systemctl disable --now prometheus-alertmanager >&2 || true
fi
have_alertmanager
