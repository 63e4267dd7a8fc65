#!/usr/bin/env bash
# Crash safety of the MQTT journal: scripts/journal-crash.sh [N] [--seed S] [--speed X] kills (SIGKILL)
# `gnss-hat serve --mqtt` on the simulator N times (default 100) at seeded random moments while it journals
# with the broker away, starting it again each time (a third of the kills also tear the last record, as a
# power cut would); then starts Debian's Mosquitto on a free loopback port and a durable QoS 1 subscriber,
# and checks that every record completely written is delivered, no torn one is, the journal's bounds hold
# and the journal ends empty. Prints the kills, records written, delivered, duplicates and torn rejected;
# logs in .build/journal-crash/. The driver is scripts/journal-crash.py (Debian's python3-paho-mqtt).
#
#   scripts/journal-crash.sh            # 100 kills (about 30 s here)
#   scripts/journal-crash.sh 1000 --seed 5
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in mosquitto /usr/bin/python3; do
    command -v "$tool" >/dev/null ||
        { echo "journal-crash: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
/usr/bin/python3 -c 'import paho.mqtt.client' 2>/dev/null ||
    { echo "journal-crash: python3-paho-mqtt is missing (scripts/setup.sh installs it)" >&2; exit 1; }
[ -x .build/debug/gnss-hat ] || [[ " $* " == *" --binary "* ]] ||
    { echo "journal-crash: no .build/debug/gnss-hat (swift build first, or --binary PATH)" >&2; exit 1; }
exec /usr/bin/python3 -u scripts/journal-crash.py "$@"
