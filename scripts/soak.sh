#!/usr/bin/env bash
# A day of churn: scripts/soak.sh HOURS [--seed N] [--speed N] runs `gnss-hat serve --mqtt` on the simulator
# for HOURS simulated hours with gpsd clients, MQTT consumers and demand changes at random (seeded), and
# prints the service's memory, descriptors and threads over time (a PNG plot beside the samples, in
# .build/soak/), its power-ons, an energy estimate and the fixes delivered; it exits non-zero when memory
# grows, a descriptor or a thread is left behind, or the receiver is not off after the last client.
# The driver is scripts/soak.py (Debian's python3 and python3-paho-mqtt; Mosquitto and its clients).
#
#   scripts/soak.sh 1                    # one simulated hour (what scripts/test.sh runs)
#   scripts/soak.sh 24 --seed 37         # a day
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in mosquitto mosquitto_sub gnuplot /usr/bin/python3; do
    command -v "$tool" >/dev/null || { echo "soak: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
/usr/bin/python3 -c 'import paho.mqtt.client' 2>/dev/null ||
    { echo "soak: python3-paho-mqtt is missing (scripts/setup.sh installs it)" >&2; exit 1; }
[ -x .build/debug/gnss-hat ] || [[ " $* " == *" --binary "* ]] ||
    { echo "soak: no .build/debug/gnss-hat (swift build first, or --binary PATH)" >&2; exit 1; }
exec /usr/bin/python3 -u scripts/soak.py "$@"
