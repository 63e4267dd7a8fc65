#!/usr/bin/env bash
# Runs all or the named benchmarks (signal, decode, energy, service, mqtt, rtk), each side by side with
# its peer in one run. Prints one line per comparison:
#   bench NAME: ours=VALUE UNIT PEER=VALUE UNIT ratio=R target=T
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
swift build -c release --product GNSSHatBench >&2
swift build -c release --product gnss-hat >&2
# The service and mqtt benchmarks measure the static binary, the one users install on a Pi.
static=$([ $# -eq 0 ] && echo yes || echo no)
for name in "$@"; do [ "$name" = service ] || [ "$name" = mqtt ] && static=yes; done
if [ "$static" = yes ]; then
    scripts/build-static.sh >&2
    export GNSSHAT_BENCH_GNSS_HAT=${GNSSHAT_BENCH_GNSS_HAT:-$PWD/.build/static/gnss-hat-$(uname -m)}
fi
export GNSSHAT_VENV_PYTHON=$PWD/.build/venv/bin/python
export GNSSHAT_BENCH_MQTT_PEER=$PWD/scripts/bench/gpsd-mqtt-bridge.py
export GNSSHAT_BENCH_RTK_RELAY=$PWD/scripts/bench/counting-relay.py
exec .build/release/GNSSHatBench "$@"
