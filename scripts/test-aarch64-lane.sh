#!/usr/bin/env bash
# The aarch64 half of scripts/test.sh, which runs it beside the x86_64 steps (once the x86_64 debug
# build exists: the smoke test compares with it): Debian's Swift 6.2 cross toolchain, the static
# binary and its smoke test under qemu-aarch64, every test target built by Swift 6.2 and run under
# qemu-user, the hardware-in-loop rig on Debian's arm64 kernel with its self-test, and the arm64
# Debian package installed in an arm64 root. Each step prints the time since the lane's start; the
# last lines are each step's own time (scripts/test.sh prints them in its summary).
#
# usage: scripts/test-aarch64-lane.sh
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_BANNER="aarch64 lane" STEP_LABEL="aarch64: "
source scripts/lib/steps.sh

step "Debian's Swift 6.2 cross toolchain (scripts/setup-aarch64.sh)"
scripts/setup-aarch64.sh

step "static binary, then the same smoke test (run through qemu-aarch64)"
scripts/build-static.sh aarch64 | tee .build/static-aarch64.log
scripts/smoke-static.sh aarch64 .build/static/gnss-hat-aarch64

step "every test target built by Swift 6.2 and run under qemu-user (scripts/test-aarch64.sh)"
scripts/test-aarch64.sh

step "hardware-in-loop rig on Debian's arm64 kernel (scripts/hil/run.sh --arch aarch64)"
scripts/hil/run.sh --arch aarch64

step "the arm64 rig's self-test: a failing check and a broken driver must fail the run"
scripts/hil/self-test.sh --arch aarch64

step "the arm64 Debian package: built, lintian, installed and removed in an arm64 root (qemu-user)"
scripts/package-test.sh --arch arm64

step "done"
printf '%s\n' "${timings[@]}"
echo "aarch64 lane: all passed in $((SECONDS - start)) s"
