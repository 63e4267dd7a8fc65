#!/usr/bin/env bash
# Runs all or the named benchmarks (signal, decode, energy, service), each side by side with
# its peer in one run. Prints one line per comparison:
#   bench NAME: ours=VALUE UNIT PEER=VALUE UNIT ratio=R target=T
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
swift build -c release --product GNSSHatBench >&2
swift build -c release --product gnss-hat >&2
export GNSSHAT_VENV_PYTHON=$PWD/.build/venv/bin/python
exec .build/release/GNSSHatBench "$@"
