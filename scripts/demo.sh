#!/usr/bin/env bash
# Installs what is missing, builds, and runs the live view on the simulated receiver.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product gnss-hat
exec .build/release/gnss-hat "$@"
