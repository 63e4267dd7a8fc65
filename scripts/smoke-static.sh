#!/usr/bin/env bash
# The smoke test of a static gnss-hat, the same for every architecture (scripts/test.sh runs it on
# x86_64 and, through qemu-aarch64, on aarch64): it decodes a capture byte for byte as the debug
# build does, and `watch` on the simulator shows a power-on and 3D fixes.
#
# usage: scripts/smoke-static.sh ARCH BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/smoke-static.sh ARCH BINARY" >&2; exit 2; }
arch=$1 static=$2 out=.build/static/smoke-$1
[ -x "$static" ] || { echo "smoke-static: no executable at $static" >&2; exit 1; }
[ -x .build/debug/gnss-hat ] || { echo "smoke-static: no .build/debug/gnss-hat to compare with (swift build)" >&2; exit 1; }
mkdir -p "$out"
capture=Tests/Fixtures/corpus/gpsd/ublox-8.log
cmp <("$static" decode "$capture") <(.build/debug/gnss-hat decode "$capture") ||
    { echo "smoke-static: the $arch static binary decodes $capture differently from the debug build" >&2; exit 1; }
# 40 s of simulated time at 20x (2 s): past the simulated cold start (26 s) to 3D fixes.
timeout 60 "$static" watch --json --speed 20 --duration 40 >"$out/watch.jsonl" ||
    { echo "smoke-static: the $arch static watch on the simulator failed" >&2; exit 1; }
grep -q '"class":"POWER","state":"on"' "$out/watch.jsonl" &&
    grep -Eq '"class":"TPV".*"mode":3' "$out/watch.jsonl" ||
    { echo "smoke-static: the $arch static watch showed no power-on or no 3D fix ($out/watch.jsonl)" >&2; exit 1; }
echo "smoke-static: the $arch static binary decodes as the debug build and shows 3D fixes on the simulator"
