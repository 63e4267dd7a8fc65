// Consumers and subscribers as Python's paho-mqtt makes them (Debian's python3-paho-mqtt, seen only
// by /usr/bin/python3), run as child processes of the tests.
import Foundation
import TestSupport

/// Debian's Python, which sees Debian's paho-mqtt.
func debianPython() throws -> URL {
    try TestPaths.tool("/usr/bin/python3", package: "python3-paho-mqtt")
}

enum Paho {
    /// A consumer: connects with an empty retained will on its demand topic, announces its demand
    /// retained, prints `announced`, and stays until killed.
    /// Arguments: port, user, password, topic, demand.
    static let consumer = """
        import sys, threading
        import paho.mqtt.client as mqtt
        port, user, password, topic, demand = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
        client = mqtt.Client(client_id="paho-consumer-" + topic.rsplit("/", 1)[-1])
        client.username_pw_set(user, password)
        client.will_set(topic, payload=None, qos=1, retain=True)
        client.connect("127.0.0.1", int(port), keepalive=30)
        client.loop_start()
        client.publish(topic, demand, qos=1, retain=True).wait_for_publish()
        print("announced", flush=True)
        threading.Event().wait()
        """

    /// A recorder, as a fleet's store of positions would be: a persistent session (clean session off,
    /// QoS 1) on the given topic filters, so the broker keeps what it is owed while it is away;
    /// reconnects by itself; prints `subscribed`, then `TOPIC PAYLOAD` per message, or `dup TOPIC PAYLOAD`
    /// for one the broker delivers again (QoS 1: it had not seen this recorder's acknowledgement).
    /// Arguments: port, user, password, client id, filters...
    static let recorder = """
        import sys
        import paho.mqtt.client as mqtt
        port, user, password, client_id, filters = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
        client = mqtt.Client(client_id=client_id, clean_session=False)
        client.username_pw_set(user, password)
        client.reconnect_delay_set(min_delay=1, max_delay=1)
        def on_connect(client, userdata, flags, rc):
            # A session the broker kept has its subscription: subscribing again would resend retained messages.
            if not flags.get("session present"):
                client.subscribe([(f, 1) for f in filters])
        def on_subscribe(client, userdata, mid, granted):
            print("subscribed", flush=True)
        def on_message(client, userdata, message):
            print(("dup " if message.dup else "") + message.topic, message.payload.decode(), flush=True)
        client.on_connect = on_connect
        client.on_subscribe = on_subscribe
        client.on_message = on_message
        client.connect("127.0.0.1", int(port), keepalive=30)
        client.loop_forever(retry_first_connection=True)
        """

    /// A crowd of 100 consumers joining and leaving at random (seeded): in each round, `ops` random
    /// steps — join (connect with an empty retained will, announce `{}` or an interval), change the
    /// demand, leave (an empty retained message, then a clean disconnect) or die (the socket closed
    /// with no DISCONNECT: the broker publishes the will) — then it prints
    /// `round R present: NAME,NAME,...` and waits for a line on its input. After the last round
    /// everyone left leaves or dies, it prints `round final present: ` and ends on its next input.
    /// Clients run no network thread (keep-alive 0, the loop driven by hand), so a death is at once.
    /// Arguments: port, user, password, demand prefix, seed, rounds, ops.
    static let crowd = """
        import random, sys, time
        import paho.mqtt.client as mqtt
        port, user, password, prefix = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
        rng = random.Random(int(sys.argv[5]))
        rounds, ops = int(sys.argv[6]), int(sys.argv[7])
        names = ["c%03d" % i for i in range(100)]
        clients = {}

        def pump(client, done, what):
            end = time.monotonic() + 10
            while not done():
                if time.monotonic() > end:
                    sys.exit("timed out waiting for " + what)
                client.loop(timeout=0.01)

        def publish(client, name, payload):
            info = client.publish(prefix + name, payload, qos=1, retain=True)
            pump(client, info.is_published, "the PUBACK of " + name)

        def join(name):
            client = mqtt.Client(client_id="crowd-" + name)
            client.username_pw_set(user, password)
            client.will_set(prefix + name, payload=None, qos=1, retain=True)
            client.connect("127.0.0.1", port, keepalive=0)
            pump(client, client.is_connected, "the CONNACK of " + name)
            publish(client, name, demand())
            clients[name] = client

        def demand():
            return "{}" if rng.random() < 0.5 else '{"interval":%d}' % rng.choice([10, 60, 600])

        def leave(name):
            client = clients.pop(name)
            publish(client, name, None)
            client.disconnect()
            client.loop(timeout=0.01)

        def die(name):
            clients.pop(name).socket().close()

        def step():
            name = rng.choice(names)
            if name not in clients:
                join(name)
            else:
                rng.choice([lambda: publish(clients[name], name, demand()), lambda: leave(name), lambda: die(name)])()

        def report(label):
            print("round %s present: %s" % (label, ",".join(sorted(clients))), flush=True)
            if not sys.stdin.readline():
                sys.exit(0)

        for r in range(rounds):
            for _ in range(ops):
                step()
            report(r)
        for name in sorted(clients):
            leave(name) if rng.random() < 0.5 else die(name)
        report("final")
        """
}
