#!/usr/bin/env bash
# Reproduces the charting library the HTML report inlines (collscope report): Apache ECharts'
# minified browser bundle from npm, with its licence files, into
# history/src/main/resources/io/collscope/report/echarts/. The bundle is committed, so building
# and running the report need no npm and the report needs no network when it is opened; run this
# only to check the committed copy or to move to another version (change VERSION below, run, commit).
# The bundle embeds zrender (BSD 3-Clause), so its LICENSE is copied too.
# Checks npm's integrity hash of each tarball; prints what it wrote.
set -euo pipefail

ECHARTS_VERSION=6.1.0
ZRENDER_VERSION=6.1.0 # the exact version echarts@$ECHARTS_VERSION depends on

root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/history/src/main/resources/io/collscope/report/echarts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v npm >/dev/null || { echo "vendor-charts: npm is needed (Debian: apt-get install npm)" >&2; exit 1; }

pack() { # NAME VERSION -> prints the tarball path; fails unless npm's integrity matches the file
  local name=$1 version=$2
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  local tgz=$work/$name-$version.tgz
  local want got
  want=$(cd "$work" && npm view "$name@$version" dist.integrity)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$want" = "$got" ] || { echo "vendor-charts: $name@$version integrity $got, npm says $want" >&2; exit 1; }
  echo "$tgz"
}

echarts_tgz=$(pack echarts "$ECHARTS_VERSION")
deps=$(tar -xzOf "$echarts_tgz" package/package.json | node -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).dependencies.zrender))')
[ "$deps" = "$ZRENDER_VERSION" ] || { echo "vendor-charts: echarts@$ECHARTS_VERSION wants zrender $deps, not $ZRENDER_VERSION" >&2; exit 1; }
zrender_tgz=$(pack zrender "$ZRENDER_VERSION")

rm -rf "$dest"
mkdir -p "$dest"
tar -xzOf "$echarts_tgz" package/dist/echarts.min.js >"$dest/echarts.min.js"
tar -xzOf "$echarts_tgz" package/LICENSE >"$dest/LICENSE"
tar -xzOf "$echarts_tgz" package/NOTICE >"$dest/NOTICE"
tar -xzOf "$echarts_tgz" package/licenses/LICENSE-d3 >"$dest/LICENSE-d3"
tar -xzOf "$zrender_tgz" package/LICENSE >"$dest/LICENSE-zrender"
{
  echo "echarts $ECHARTS_VERSION $(cd "$work" && npm view "echarts@$ECHARTS_VERSION" dist.integrity)"
  echo "zrender $ZRENDER_VERSION $(cd "$work" && npm view "zrender@$ZRENDER_VERSION" dist.integrity)"
  echo "echarts.min.js sha256 $(sha256sum "$dest/echarts.min.js" | cut -d' ' -f1)"
} >"$dest/VERSION"
cat "$dest/VERSION"
ls -l "$dest"
