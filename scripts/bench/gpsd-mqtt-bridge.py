#!/usr/bin/python3
# The peer of `scripts/bench.sh mqtt`: a typical gpsd-to-MQTT bridge (the gpsd2mqtt kind), as a user
# would write one today. Debian's gps module watches gpsd; paho-mqtt publishes every TPV and SKY as gpsd
# wrote it (its cheapest form: no re-encoding), QoS 1, and a retained `online` on PREFIX/status once
# connected. A benchmark peer, not product code. Run by Debian's python (/usr/bin/python3), which
# alone sees python3-gps and python3-paho-mqtt.
#
# usage: gpsd-mqtt-bridge.py GPSD_PORT BROKER_PORT PREFIX
import sys

import gps
import paho.mqtt.client as mqtt

gpsd_port, broker_port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

client = mqtt.Client(client_id="gpsd-mqtt-bridge")
client.will_set(prefix + "/status", "offline", qos=1, retain=True)
client.connect("127.0.0.1", broker_port, keepalive=30)
client.loop_start()
client.publish(prefix + "/status", "online", qos=1, retain=True)

session = gps.gps(host="127.0.0.1", port=gpsd_port, mode=gps.WATCH_ENABLE | gps.WATCH_JSON)
topics = {"TPV": prefix + "/tpv", "SKY": prefix + "/sky"}
while True:
    report = session.next()
    topic = topics.get(report["class"])
    if topic:
        client.publish(topic, session.response.strip(), qos=1)
