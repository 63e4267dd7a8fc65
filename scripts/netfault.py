#!/usr/bin/python3
"""The helpers of scripts/netfault.sh: a gpsd watcher, a durable MQTT subscriber, a wait for the
subscriber to catch up, and the report.

Debian's /usr/bin/python3 (python3-paho-mqtt 1.6 is Debian's): the standard library otherwise.

  watch PORT OUT          a gpsd client on 127.0.0.1:PORT (?WATCH json) writing each TPV it gets to OUT
  subscribe HOST ID OUT   a durable QoS 1 subscriber (clean session off, client id ID) of the TPV and
                          OwnTracks topics, writing each message as it arrives to OUT
  caught-up WATCH RECEIVED LIMIT [UNTIL]
                          waits until every fix the watcher saw (up to the time UNTIL) has reached the
                          subscriber, at most LIMIT seconds; prints how long it took
  report WORK             the phases, what each counted, the losses and the back-off check; exit 1 on failure

Every line these write starts with the wall-clock time it was written (seconds, as bash's EPOCHREALTIME).
"""
import json
import os
import re
import signal
import socket
import sys
import time

DEVICE = "nf1"
TPV_TOPIC = f"gnss-hat/{DEVICE}/tpv"
OWNTRACKS_TOPIC = f"owntracks/gnss-hat/{DEVICE}"


def stopped_by_signal(handler):
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, handler)


def watch(port, out_path):
    """A gpsd client that keeps the receiver on and writes every TPV it gets, time-stamped."""
    running = True

    def stop(*_):
        nonlocal running
        running = False
        raise KeyboardInterrupt

    stopped_by_signal(stop)
    with open(out_path, "a", buffering=1) as out:
        try:
            sock = None
            for _ in range(200):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    break
                except OSError:
                    time.sleep(0.05)
            if sock is None:
                print("netfault: the gpsd watcher could not connect", file=sys.stderr)
                sys.exit(1)
            sock.settimeout(None)
            sock.sendall(b'?WATCH={"enable":true,"json":true}\n')
            pending = b""
            while running:
                data = sock.recv(65536)
                if not data:
                    break
                pending += data
                *lines, pending = pending.split(b"\n")
                now = time.time()
                for line in lines:
                    if b'"class":"TPV"' in line:
                        out.write(f"{now:.6f} {line.decode()}\n")
        except KeyboardInterrupt:
            pass


def subscribe(host, client_id, out_path):
    """A durable QoS 1 subscriber: clean session off, so the broker keeps its messages while it is away
    and across a restart (persistence on); it subscribes only when the broker has no session for it."""
    import paho.mqtt.client as mqtt

    out = open(out_path, "a", buffering=1)

    def note(event, **fields):
        out.write(f"{time.time():.6f} " + json.dumps({"event": event, **fields}) + "\n")

    client = mqtt.Client(client_id=client_id, clean_session=False, protocol=mqtt.MQTTv311)
    client.reconnect_delay_set(min_delay=1, max_delay=1)

    def on_connect(client, userdata, flags, rc):
        present = bool(flags.get("session present"))
        note("connect", rc=rc, session=present)
        if rc == 0 and not present:
            client.subscribe([(TPV_TOPIC, 1), (OWNTRACKS_TOPIC, 1)])

    def on_subscribe(client, userdata, mid, granted):
        note("subscribed", granted=list(granted))
        print("subscribed", flush=True)

    def on_disconnect(client, userdata, rc):
        note("disconnect", rc=rc)

    def on_message(client, userdata, message):
        # Written (line-buffered) before this returns; paho sends the PUBACK after it returns.
        note("message", topic=message.topic, mid=message.mid, dup=bool(message.dup), retain=bool(message.retain),
             payload=message.payload.decode("utf-8", "replace"))

    client.on_connect = on_connect
    client.on_subscribe = on_subscribe
    client.on_disconnect = on_disconnect
    client.on_message = on_message
    stopped_by_signal(lambda *_: client.disconnect())
    while True:
        try:
            client.connect(host, 1883, keepalive=10)
            break
        except OSError:
            time.sleep(0.1)
    client.loop_forever(retry_first_connection=True)
    out.close()


# MARK: - Reading the files


def stamped(path):
    """(time, text) of each line of a time-stamped file."""
    if not os.path.exists(path):
        return []
    result = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            stamp, _, text = line.rstrip("\n").partition(" ")
            try:
                result.append((float(stamp), text))
            except ValueError:
                continue
    return result


def watched_fixes(path):
    """The TPVs the gpsd watcher got: (time seen, fix time, has a position) in order."""
    fixes = []
    for seen, text in stamped(path):
        try:
            tpv = json.loads(text)
        except ValueError:
            continue
        fixes.append((seen, tpv.get("time"), tpv.get("mode", 0) >= 2 and "lat" in tpv))
    return fixes


def received_messages(path):
    """The subscriber's messages: (time, topic, key, dup, retain); the key is the TPV's time, or the
    OwnTracks message's tst; and its other events (connect, disconnect)."""
    messages, events = [], []
    for seen, text in stamped(path):
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if record.get("event") != "message":
            events.append((seen, record))
            continue
        try:
            payload = json.loads(record["payload"])
        except ValueError:
            payload = {}
        if record["topic"] == TPV_TOPIC:
            key = payload.get("time")
        else:
            key = payload.get("tst")
        messages.append((seen, record["topic"], key, record["dup"], record["retain"]))
    return messages, events


def owntracks_key(fix_time):
    """OwnTracks' tst of a fix: its time in whole Unix seconds."""
    import datetime

    moment = datetime.datetime.strptime(fix_time[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(moment.timestamp())


def caught_up(watch_path, received_path, limit, until=None):
    start = time.time()
    while True:
        wanted = {fix for seen, fix, _ in watched_fixes(watch_path) if fix and (until is None or seen <= until)}
        got = {key for _, topic, key, _, _ in received_messages(received_path)[0] if topic == TPV_TOPIC}
        missing = wanted - got
        if not missing:
            print(f"{time.time() - start:.1f}")
            return 0
        if time.time() - start > limit:
            print(f"netfault: {len(missing)} of {len(wanted)} fixes had not reached the subscriber after {limit} s",
                  file=sys.stderr)
            return 1
        time.sleep(0.2)


# MARK: - The report


def delay_after(failures, initial=1.0, maximum=60.0):
    """ReconnectPolicy.Configuration.delay(afterFailures:): initial x 2^(failures-1), capped; no jitter."""
    delay = initial
    for _ in range(1, max(failures, 1)):
        delay *= 2
        if delay >= maximum:
            return maximum
    return min(delay, maximum)


def seconds_in(text):
    """The bridge's '12 s' / '1.5 s' durations."""
    return float(text)


CONNECTED = re.compile(r"mqtt: connected to ")
CANNOT_REACH = re.compile(r"mqtt: cannot reach \S+ \(attempt (\d+)\): .*next attempt in ([\d.]+) s$")
REFUSED = re.compile(r"mqtt: \S+, attempt (\d+): .*next attempt in ([\d.]+) s$")
LOST = re.compile(r"mqtt: lost the connection to \S+ after ([\d.]+) s.*reconnecting in ([\d.]+) s$")


def check_backoff(serve_log, failures_out):
    """Replays the service's connection lines through a model of ReconnectPolicy (initial 1 s, doubling,
    cap 60 s, reset by a connection that lasted 60 s; no jitter) and checks each reported delay and
    attempt number, and that the next attempt's outcome came no sooner than the delay said."""
    rows = []
    failures = 0
    attempts = 1
    pending = None  # (time of the report, delay): the next attempt begins after the delay
    connect_limit = 135.0  # the kernel's connect timeout with tcp_syn_retries 6 is 127 s
    for stamp, line in serve_log:
        event = None
        if CONNECTED.search(line):
            event = ("connected", None, None)
        elif m := CANNOT_REACH.search(line):
            event = ("cannot reach", int(m.group(1)), seconds_in(m.group(2)))
        elif m := REFUSED.search(line):
            event = ("refused", int(m.group(1)), seconds_in(m.group(2)))
        elif m := LOST.search(line):
            event = ("lost", float(m.group(1)), seconds_in(m.group(2)))
        if event is None:
            continue
        kind, number, delay = event
        gap = None
        if pending is not None and kind != "lost":
            gap = stamp - pending[0]
            if gap < pending[1] - 0.3:
                failures_out.append(f"back-off: an attempt's outcome at +{gap:.2f} s, before the {pending[1]:g} s "
                                    "delay had passed")
            if gap > pending[1] + connect_limit:
                failures_out.append(f"back-off: an attempt's outcome at +{gap:.2f} s, more than the {pending[1]:g} s "
                                    f"delay and a connect timeout ({connect_limit:g} s)")
            pending = None
        expected = None
        if kind == "connected":
            pass
        elif kind == "lost":
            if number >= 60.0:
                failures = 0
                attempts = 0
            failures += 1
            expected = delay_after(failures)
            attempts += 1
        else:
            if number != attempts:
                failures_out.append(f"back-off: attempt {number} reported where the policy counts {attempts}")
            failures += 1
            expected = delay_after(failures)
            attempts += 1
        if expected is not None:
            if abs(expected - delay) > 0.05:
                failures_out.append(f"back-off: '{kind}' said {delay:g} s where the policy says {expected:g} s "
                                    f"after {failures} failures in a row")
            pending = (stamp, delay)
        rows.append((stamp, kind, number, delay, expected, gap))
    return rows


def report(work):
    failures = []
    phases = []
    for stamp, text in stamped(os.path.join(work, "phases.txt")):
        name, _, end = text.partition(" ")
        phases.append((name, stamp, float(end)))
    fixes = watched_fixes(os.path.join(work, "watch.txt"))
    messages, events = received_messages(os.path.join(work, "received.txt"))
    serve_log = stamped(os.path.join(work, "serve.txt"))
    origin = phases[0][1] if phases else (fixes[0][0] if fixes else 0)

    published = [fix for _, fix, _ in fixes if fix]
    untimed = sum(1 for _, fix, _ in fixes if not fix)
    positions = {owntracks_key(fix) for _, fix, has in fixes if fix and has}

    def counts(topic, keys_wanted):
        arrivals = [(seen, key, dup, retain) for seen, t, key, dup, retain in messages if t == topic]
        seen_keys = set()
        duplicates = reorderings = retained = 0
        latest = None
        for _, key, _, retain in arrivals:
            if retain:
                retained += 1
            if key in seen_keys:
                duplicates += 1
                continue
            seen_keys.add(key)
            if latest is not None and key is not None and key < latest:
                reorderings += 1
            if key is not None and (latest is None or key > latest):
                latest = key
        lost = set(keys_wanted) - seen_keys
        return len(arrivals), duplicates, reorderings, retained, lost

    print(f"netfault: {len(fixes)} TPVs at the gpsd watcher ({untimed} without a time: before the first fix)")
    print("netfault: phase             real time   fixes published   TPVs received   (first time)   "
          "duplicates   reorderings")
    for name, start, end in phases:
        in_phase = [fix for seen, fix, _ in fixes if fix and start <= seen < end]
        arrivals = [(key, dup) for seen, t, key, dup, _ in messages if t == TPV_TOPIC and start <= seen < end]
        earlier = {key for seen, t, key, _, _ in messages if t == TPV_TOPIC and seen < start}
        first = set()
        duplicates = 0
        reorder = 0
        latest = None
        for key, _ in arrivals:
            if key in earlier or key in first:
                duplicates += 1
                continue
            first.add(key)
            if latest is not None and key is not None and key < latest:
                reorder += 1
            latest = key if latest is None or (key is not None and key > latest) else latest
        print(f"netfault: {name:<16} {start - origin:6.1f}-{end - origin:6.1f} s  {len(in_phase):8d}          "
              f"{len(arrivals):8d}     {len(first):8d}       {duplicates:8d}     {reorder:8d}")

    tpv_total, tpv_dups, tpv_reorders, tpv_retained, tpv_lost = counts(TPV_TOPIC, published)
    ot_total, ot_dups, ot_reorders, ot_retained, ot_lost = counts(OWNTRACKS_TOPIC, positions)
    print(f"netfault: TPV: {len(published)} fixes published (seen by the gpsd watcher), {tpv_total} messages "
          f"received, {tpv_dups} duplicates ({tpv_retained} of them retained copies), {tpv_reorders} reorderings, "
          f"{len(tpv_lost)} lost")
    print(f"netfault: OwnTracks: {len(positions)} fixes with a position, {ot_total} messages received, {ot_dups} "
          f"duplicates ({ot_retained} retained), {ot_reorders} reorderings, {len(ot_lost)} lost")
    if tpv_lost:
        failures.append(f"{len(tpv_lost)} TPVs never reached the subscriber: {sorted(tpv_lost)[:5]}...")
    if ot_lost:
        failures.append(f"{len(ot_lost)} OwnTracks messages never reached the subscriber: {sorted(ot_lost)[:5]}...")
    if not published:
        failures.append("no fix was published")

    sessions = [record for _, record in events if record.get("event") == "connect"]
    print(f"netfault: the subscriber connected {len(sessions)} times; the broker had its session on "
          f"{sum(1 for s in sessions if s.get('session'))} of the reconnections")

    summary = [line for _, line in serve_log if "fixes journaled" in line]
    receiver = [line for _, line in serve_log if "gnss-hat serve: receiver:" in line]
    for line in receiver + summary:
        print("netfault: the service said: " + line.removeprefix("gnss-hat serve: "))
    if not summary:
        failures.append("the service printed no summary at its stop (did it stop cleanly?)")
    else:
        match = re.search(r"(\d+) fixes journaled, (\d+) records acknowledged, (\d+) left in the journal, (\d+) dropped",
                          summary[-1])
        journaled, acknowledged, left, dropped = (int(g) for g in match.groups())
        print(f"netfault: journal at the end: {left} records ({dropped} dropped by its limits)")
        if left != 0:
            failures.append(f"{left} records left in the journal")
        if dropped != 0:
            failures.append(f"{dropped} records dropped by the journal's limits")
        if journaled != len(fixes):
            failures.append(f"the service journaled {journaled} fixes, the gpsd watcher saw {len(fixes)} TPVs")

    rows = check_backoff(serve_log, failures)
    print("netfault: connection events (time from the start, event, attempt / lasted, delay said, policy's, "
          "gap to the next outcome)")
    for stamp, kind, number, delay, expected, gap in rows:
        detail = "" if number is None else (f"lasted {number:g} s" if kind == "lost" else f"attempt {number}")
        said = "" if delay is None else f"delay {delay:g} s (policy {expected:g} s)"
        after = "" if gap is None else f"came {gap:.2f} s after the previous report"
        print(f"netfault:   {stamp - origin:7.2f} s  {kind:<13} {detail:<16} {said:<26} {after}")
    reconnects = [row for row in rows if row[1] != "connected"]
    if not any(row[1] == "connected" for row in rows):
        failures.append("the service never connected")
    print(f"netfault: {len(reconnects)} connection failures or losses, every delay checked against the policy")

    for failure in failures:
        print("netfault: FAILED: " + failure)
    return 1 if failures else 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[1], argv[2:]
    if command == "watch":
        watch(int(rest[0]), rest[1])
        return 0
    if command == "subscribe":
        subscribe(rest[0], rest[1], rest[2])
        return 0
    if command == "caught-up":
        return caught_up(rest[0], rest[1], float(rest[2]), float(rest[3]) if len(rest) > 3 else None)
    if command == "report":
        return report(rest[0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
