#!/usr/bin/env bash
# Runs every GNSSHat test: installs what is missing, builds once, runs the unit tests, then the
# Signals tests again under ThreadSanitizer. Later steps (libgpiod v2, fuzzing, static binary,
# emulated hardware-in-loop) are added here as their issues land.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n=== test: %s (%ds)\n' "$*" $((SECONDS - start)); }

step "setup"
scripts/setup.sh

step "build (debug, with tests)"
swift build --build-tests 2>&1 | tee .build/build.log | grep -E 'warning:|error:|Compiling|Build' | grep -v '^\[' || true
if grep -q 'warning:' .build/build.log; then
    echo "test: the build has warnings (see .build/build.log)" >&2
    exit 1
fi

step "unit tests"
swift test --skip-build

step "Signals under ThreadSanitizer"
swift test --sanitize=thread --scratch-path .build/tsan --filter SignalsTests

step "all passed in $((SECONDS - start)) s"
