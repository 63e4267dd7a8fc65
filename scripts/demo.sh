#!/usr/bin/env bash
# Installs what is missing, builds, and shows the receiver's power following its clients on the
# built-in simulated receiver (no hardware needed): client A joins (power on, cold start, fixes),
# B joins and shares the session, both leave (linger, then power off), C joins (power on again,
# hot start), C leaves (off again). About 105 s of receiver time, shown 5 times faster.
# Arguments go to `gnss-hat watch`: --speed 1 for real time, --json for JSON lines, --board NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product gnss-hat >&2
exec .build/release/gnss-hat watch --board simulator --demo "$@"
