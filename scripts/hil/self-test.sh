#!/usr/bin/env bash
# The rig's self-test: with --self-test-failure the rig must fail a check that must fail and the
# Receiver's DDC scenario with a driver that never sets the enable line (both libgpiod builds), and
# say so (exit 1 and the three FAIL lines). scripts/test.sh runs it on both machines.
#
# usage: scripts/hil/self-test.sh [--arch x86_64|aarch64]
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=x86_64
[ "${1:-}" = --arch ] && arch=${2:?--arch takes x86_64 or aarch64}
log=.build/hil/selftest-$arch.log
mkdir -p .build/hil
status=0
scripts/hil/run.sh --arch "$arch" --self-test-failure --only selftest.broken-driver \
    --only 'v*.receiver.ddc-power-cycle' >"$log" 2>&1 || status=$?
for expected in 'selftest.broken-driver FAIL' 'v1.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high' \
    'v2.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high'; do
    if [ "$status" -ne 1 ] || ! grep -q "^  HIL-CHECK $expected" "$log"; then
        cat "$log"
        echo "hil self-test ($arch): the rig did not report the deliberate failure '$expected' (exit $status)" >&2
        exit 1
    fi
done
echo "hil self-test ($arch): the deliberate failures failed the run, as they must (log: $log)"
