#!/usr/bin/python3
"""A day of churn: `gnss-hat serve --mqtt` on the simulator, run N times faster, for HOURS simulated hours,
with gpsd clients and MQTT consumers coming, changing their demand and going at random (seeded), gaps with
nobody at all in between; the service's memory, descriptors and threads sampled all along.

Run by scripts/soak.sh (which checks the tools first); Debian's /usr/bin/python3, the standard library, and
Debian's Mosquitto and its clients: each MQTT consumer is a mosquitto_sub whose will clears its demand (as the
README shows), the demands are published by one control client.

Checks, each printed with its rule; the exit status is 1 when one fails:
  - memory flat: the final window's largest RSS within 5 % (and at least 1 MiB) of the reference window's,
    where the reference is the second simulated hour and the final the last (runs under 3 hours: the middle
    and the last third, the first third being the warm-up);
  - nothing leaked: at every gap with nobody, once the receiver is off, the service's descriptors (each one's
    number and kind, from /proc/PID/fd) are exactly the idle set taken before the first client;
  - threads back to the idle count at the end (polled for up to 30 s of real time: the runtime's idle workers
    take a few seconds to leave);
  - the receiver off after the last subscriber: the bridge's retained power topic off because the linger
    ended (a duty cycle's sleep between fixes says off too, while a subscriber still holds the receiver),
    no consumer's demand left on the broker, and none present in the service's summary at its stop;
  - power-ons: at most a quarter failed (or 3), a few being the accelerated clock's acknowledgement waits.
"""
import argparse
import collections
import heapq
import json
import os
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from peers import free_port, start_mosquitto  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE = "soak"
POWER_TOPIC = f"gnss-hat/{DEVICE}/power"
TPV_TOPIC = f"gnss-hat/{DEVICE}/tpv"
DEMAND_PREFIX = f"gnss-hat/{DEVICE}/demand/"
INTERVALS = [2, 10, 60, 300]
MIB = 1024 * 1024


def say(text):
    print(f"soak: {text}", flush=True)


# MARK: - The schedule: deterministic given the seed, in simulated seconds


def schedule(rng, total):
    """Events (time, order, kind, client, detail): busy periods with clients arriving, changing their demand
    and leaving, and gaps with nobody. Every client has left by the end of its busy period."""
    events = []
    order = 0
    t = 0.0
    number = 0
    while True:
        gap = rng.uniform(30, 600)
        busy = rng.uniform(60, 1200)
        if t + gap + busy > total - 60:
            break
        events.append((t, order, "gap", None, None))
        order += 1
        t += gap
        end = t + busy
        arrival = t
        while arrival < end - 10:
            number += 1
            name = f"c{number}"
            kind = rng.choices(["gpsd", "gpsd-interval", "gpsd-nmea", "gpsd-idle", "mqtt", "mqtt-interval"],
                               weights=[30, 15, 8, 5, 25, 17])[0]
            demand = rng.choice(INTERVALS) if kind.endswith("interval") else None
            leave = min(arrival + rng.uniform(10, 600), end)
            how = rng.choice(["clean", "clean", "abrupt"])
            events.append((arrival, order, "join", name, {"kind": kind, "demand": demand}))
            order += 1
            for _ in range(rng.choice([0, 0, 1, 2, 3]) if kind != "gpsd-idle" else 0):
                change = rng.uniform(arrival, leave)
                events.append((change, order, "change", name, {"demand": rng.choice([None] + INTERVALS)}))
                order += 1
            events.append((leave, order, "leave", name, {"how": how}))
            order += 1
            arrival += rng.expovariate(1 / 30)
        t = end
    events.append((t, order, "gap", None, None))
    events.append((total, order + 1, "end", None, None))
    events.sort()
    return events, number


# MARK: - The service's resources, from /proc


def fd_kind(target):
    """What a descriptor is, without the numbers that change from one run to the next."""
    target = re.sub(r"\[\d+\]$", "", target)
    return re.sub(r"/dev/pts/\d+", "/dev/pts/N", target)


def descriptors(pid):
    result = {}
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            result[int(name)] = fd_kind(os.readlink(f"{base}/{name}"))
        except OSError:
            continue
    return result


def thread_names(pid):
    """The service's threads by name (/proc/PID/task/*/comm), sorted."""
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as handle:
                names.append(handle.read().strip())
        except OSError:
            continue
    return sorted(names)


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["Threads"])


def slope(samples):
    """The least-squares slope of RSS (bytes) over simulated seconds."""
    if len(samples) < 2:
        return 0.0
    xs = [sample[0] for sample in samples]
    ys = [sample[1] for sample in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread if spread else 0.0


# MARK: - The peers


class Service:
    """gnss-hat serve, its standard error read on a thread, each line with the real time it came."""

    def __init__(self, binary, speed, gpsd_port, broker_port, state, log_path):
        self.lines = []
        self.lock = threading.Condition()
        self.log = open(log_path, "w", buffering=1)
        self.process = subprocess.Popen(
            [binary, "serve", "--speed", str(speed), "--listen", f"127.0.0.1:{gpsd_port}",
             "--mqtt", f"mqtt://127.0.0.1:{broker_port}", "--mqtt-device", DEVICE, "--state-dir", state, "--verbose"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.pid = self.process.pid
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            now = time.monotonic()
            self.log.write(f"{now:.3f} {line}")
            with self.lock:
                self.lines.append((now, line.rstrip("\n")))
                self.lock.notify_all()
        with self.lock:
            self.lines.append((time.monotonic(), None))
            self.lock.notify_all()

    def wait_for(self, text, limit):
        deadline = time.monotonic() + limit
        with self.lock:
            while True:
                if any(line is not None and text in line for _, line in self.lines):
                    return
                if any(line is None for _, line in self.lines):
                    raise SystemExit(f"soak: gnss-hat serve ended before printing '{text}'")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SystemExit(f"soak: gnss-hat serve printed no '{text}' within {limit} s")
                self.lock.wait(remaining)

    def matching(self, text):
        with self.lock:
            return [line for _, line in self.lines if line is not None and text in line]


class Monitor:
    """One MQTT client of the driver's own: watches the retained power topic, publishes the consumers'
    demands (retained, QoS 1) and keeps the demands the broker holds (the consumers' own, and their wills'
    empty messages clearing them)."""

    def __init__(self, port):
        import paho.mqtt.client as mqtt

        self.states = []  # (real time, state, reason)
        self.demands = {}  # consumer: its demand as the broker holds it now (empty ones removed)
        self.lock = threading.Condition()
        self.client = mqtt.Client(client_id="soak-monitor", clean_session=True)
        self.client.on_connect = lambda c, u, f, rc: c.subscribe([(POWER_TOPIC, 1), (DEMAND_PREFIX + "+", 1)])
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    def _message(self, client, userdata, message):
        if message.topic.startswith(DEMAND_PREFIX):
            with self.lock:
                name = message.topic[len(DEMAND_PREFIX):]
                if message.payload:
                    self.demands[name] = message.payload.decode(errors="replace")
                else:
                    self.demands.pop(name, None)
            return
        try:
            power = json.loads(message.payload)
        except ValueError:
            return
        with self.lock:
            self.states.append((time.monotonic(), power.get("state"), power.get("reason")))
            self.lock.notify_all()

    @property
    def state(self):
        """The power topic's state and reason: "off (linger ended)"."""
        with self.lock:
            return f"{self.states[-1][1]} ({self.states[-1][2]})" if self.states else None

    def power_ons(self):
        with self.lock:
            return sum(1 for _, state, _ in self.states if state == "powering on")

    # Off with nobody holding the receiver: not a duty cycle's sleep between fixes (which says "off"
    # too, while a subscriber still holds it) nor a failure's (the holders claim it again).
    RELEASED = {("off", "initial"), ("off", "linger ended")}

    @property
    def released(self):
        with self.lock:
            return bool(self.states) and self.states[-1][1:] in self.RELEASED

    def wait_released(self, limit):
        deadline = time.monotonic() + limit
        with self.lock:
            while not self.states or self.states[-1][1:] not in self.RELEASED:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.lock.wait(remaining)
            return True

    def demands_left(self):
        """The demands the broker still holds: {consumer: payload}."""
        with self.lock:
            return dict(self.demands)

    def demand(self, name, payload):
        info = self.client.publish(DEMAND_PREFIX + name, payload, qos=1, retain=True)
        info.wait_for_publish(5)

    def stop(self):
        self.client.disconnect()
        self.client.loop_stop()


class GpsdClient:
    """A gpsd client over TCP: watches (json, NMEA or with an interval), counts the TPVs it gets."""

    def __init__(self, name, port, kind, demand):
        self.name = name
        self.kind = kind
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.tpvs = 0
        self.tail = b""
        self.closed_by_service = False
        if kind == "gpsd-idle":
            self.send(b"?VERSION;?DEVICES;\n")
        else:
            self.watch(demand)

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (BlockingIOError, OSError):
            pass

    def watch(self, interval):
        if self.kind == "gpsd-nmea":
            request = {"enable": True, "nmea": True}
        else:
            request = {"enable": True, "json": True}
            if interval is not None:
                request["interval"] = interval
        self.send(b"?WATCH=" + json.dumps(request, separators=(",", ":")).encode() + b"\n")

    def readable(self):
        try:
            data = self.sock.recv(262144)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            self.closed_by_service = True
            return False
        joined = self.tail + data
        # The last bytes wait for the next read: a report cut in two is counted once, whole.
        self.tpvs += joined.count(b'"class":"TPV"')
        self.tail = joined[-16:]
        self.tpvs -= self.tail.count(b'"class":"TPV"')
        return True

    def close(self, how):
        if how == "clean" and self.kind != "gpsd-idle":
            self.send(b'?WATCH={"enable":false};\n')
        if how == "abrupt":
            # A reset rather than a FIN: the client vanished.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.sock.close()


class MqttConsumer:
    """A consumer as the README shows it: a mosquitto_sub on the TPV topic whose will (empty, retained) ends
    its demand, and a retained demand message, published once the broker has accepted the subscriber's
    connection (and so holds its will). It leaves by clearing its demand, or dies (SIGKILL).

    Publishing the demand before then was this driver's bug: a consumer killed within its first few
    milliseconds had no will at the broker, so its demand stayed retained and the service, rightly,
    kept the receiver on for it (a retained demand is presence until it is cleared)."""

    CONNECT_LIMIT = 10  # real seconds

    def __init__(self, name, port, monitor, demand, work):
        self.name = name
        self.monitor = monitor
        self.output = os.path.join(work, f"consumer-{name}.txt")
        with open(self.output, "w") as out:
            # -d: the client's protocol log (its CONNACK) on standard output, line-buffered by stdbuf; the
            # TPVs are counted in the same file, and no debug line holds a TPV's class.
            self.process = subprocess.Popen(
                ["stdbuf", "-oL", "mosquitto_sub", "-d", "-h", "127.0.0.1", "-p", str(port), "-i", f"soak-{name}",
                 "-t", TPV_TOPIC, "--will-topic", DEMAND_PREFIX + name, "--will-retain", "--will-qos", "1"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL)
        self.connected = self.wait_connected()
        if self.connected:
            self.change(demand)

    def wait_connected(self):
        """Whether the broker accepted the subscriber (its CONNACK) within CONNECT_LIMIT real seconds."""
        deadline = time.monotonic() + self.CONNECT_LIMIT
        while time.monotonic() < deadline and self.process.poll() is None:
            with open(self.output, "rb") as handle:
                if b" received CONNACK (0)" in handle.read():
                    return True
            time.sleep(0.002)
        return False

    def change(self, interval):
        if self.connected:
            self.monitor.demand(self.name, "{}" if interval is None else json.dumps({"interval": interval}))

    def close(self, how):
        if how == "abrupt" or not self.connected:
            self.process.kill()
        else:
            self.monitor.demand(self.name, None)
            # mosquitto_sub (2.0.11) disconnects from its SIGTERM handler, which can deadlock on the
            # library's lock (seen before the CONNACK): then it dies as a killed one would, its demand
            # already cleared.
            self.process.terminate()
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()
        with open(self.output, "rb") as handle:
            count = handle.read().count(b'"class":"TPV"')
        os.unlink(self.output)
        return count


class IdleGap:
    """One gap with nobody, once the receiver is off: the service's descriptors and threads are looked at
    until they match the idle sets or the gap ends (a thread that is ending may still be listed at first)."""

    def __init__(self, at, sessions_before):
        self.at = at
        self.sessions_before = sessions_before
        self.fds_matched = False
        self.threads_matched = False
        self.last_fds = {}
        self.last_threads = []
        self.looked = 0

    def look(self, pid, idle_fds, idle_threads):
        self.looked += 1
        self.last_fds = descriptors(pid)
        self.last_threads = thread_names(pid)
        self.fds_matched = self.fds_matched or self.last_fds == idle_fds
        self.threads_matched = self.threads_matched or (idle_threads is not None and self.last_threads == idle_threads)

    def fd_differences(self, idle_fds):
        return sorted(f"{number}: {idle_fds.get(number, '-')} -> {self.last_fds.get(number, '-')}"
                      for number in set(idle_fds) | set(self.last_fds)
                      if idle_fds.get(number) != self.last_fds.get(number))


# MARK: - The run


class Soak:
    def __init__(self, options):
        self.options = options
        self.speed = options.speed
        self.total = options.hours * 3600
        self.work = tempfile.mkdtemp(prefix="gnsshat-soak.")
        self.out = options.out
        os.makedirs(self.out, exist_ok=True)
        self.samples = []  # (sim s, rss bytes, fds, threads, clients)
        self.gaps = []  # IdleGap, the gaps looked at
        # The threads when idle: those of the first gap after a session (a session starts threads the
        # receiver's hardware keeps for the next); None until then.
        self.idle_threads_after = None
        self.failures = []
        self.delivered_gpsd = 0
        self.delivered_mqtt = 0
        self.dropped_by_service = 0
        self.sessions = 0
        self.changes = 0
        self.broker = None
        self.service = None
        self.monitor = None

    def sim_now(self):
        return (time.monotonic() - self.origin) * self.speed

    def start_peers(self):
        self.broker_port = free_port()
        self.gpsd_port = free_port()
        # The broker's log (who connected, whose will went out) beside the service's: written by this
        # process, since Mosquitto started as root runs as its own user and cannot open a file here.
        self.broker_log = os.path.join(self.out, "broker.log")
        with open(self.broker_log, "w") as log:
            self.broker = start_mosquitto(os.path.join(self.work, "mosquitto.conf"), self.broker_port,
                                          ["max_queued_messages 100000", "log_dest stdout"], log)
        self.service = Service(self.options.binary, self.speed, self.gpsd_port, self.broker_port,
                               os.path.join(self.work, "state"), os.path.join(self.out, "serve.log"))
        self.service.wait_for("mqtt: connected to ", 20)
        self.service.wait_for("listening on ", 20)
        self.origin = time.monotonic()
        self.monitor = Monitor(self.broker_port)
        if not self.monitor.wait_released(10):
            raise SystemExit("soak: no retained power state 'off' from the bridge at the start")

    def sample(self, clients):
        rss, threads = status(self.service.pid)
        fds = len(os.listdir(f"/proc/{self.service.pid}/fd"))
        self.samples.append((self.sim_now(), rss, fds, threads, clients))

    def run(self):
        rng = random.Random(self.options.seed)
        events, clients_total = schedule(rng, self.total)
        say(f"seed {self.options.seed}, {self.options.hours:g} simulated hours at {self.speed:g} times real time: "
            f"{clients_total} client sessions scheduled, {sum(1 for e in events if e[2] == 'change')} demand "
            f"changes, {sum(1 for e in events if e[2] == 'gap')} gaps with nobody")
        self.start_peers()
        # The idle set: before the first client, the receiver off, the bridge connected.
        time.sleep(0.5)
        self.idle_fds = descriptors(self.service.pid)
        self.idle_rss, _ = status(self.service.pid)
        self.idle_threads = thread_names(self.service.pid)
        say(f"idle before the first client: RSS {self.idle_rss / MIB:.1f} MiB, {len(self.idle_fds)} descriptors "
            f"({', '.join(sorted(set(self.idle_fds.values())))}), {len(self.idle_threads)} threads")
        self.origin = time.monotonic()
        selector = selectors.DefaultSelector()
        gpsd, mqtt = {}, {}
        gap = None  # the IdleGap being looked at
        next_sample = 0.0
        next_report = 0.0
        report_every = 3600 if self.options.hours >= 3 else self.total / 6
        queue = list(events)
        heapq.heapify(queue)
        while queue or gpsd or mqtt:
            now = self.sim_now()
            while queue and queue[0][0] <= now:
                at, _, kind, name, detail = heapq.heappop(queue)
                if kind in ("join", "end") and gap is not None:
                    self.close_gap(gap)
                    gap = None
                if kind == "gap":
                    gap = IdleGap(at, self.sessions) if not gpsd and not mqtt else None
                elif kind == "join":
                    self.sessions += 1
                    if detail["kind"].startswith("gpsd"):
                        client = GpsdClient(name, self.gpsd_port, detail["kind"], detail["demand"])
                        gpsd[name] = client
                        selector.register(client.sock, selectors.EVENT_READ, client)
                    else:
                        mqtt[name] = MqttConsumer(name, self.broker_port, self.monitor, detail["demand"], self.work)
                        if not mqtt[name].connected:
                            self.failures.append(f"consumer {name}: its mosquitto_sub did not connect within "
                                                 f"{MqttConsumer.CONNECT_LIMIT} s")
                elif kind == "change":
                    self.changes += 1
                    if name in gpsd and gpsd[name].kind in ("gpsd", "gpsd-interval"):
                        gpsd[name].watch(detail["demand"])
                    elif name in mqtt:
                        mqtt[name].change(detail["demand"])
                elif kind == "leave":
                    if name in gpsd:
                        client = gpsd.pop(name)
                        selector.unregister(client.sock)
                        client.close(detail["how"])
                        self.delivered_gpsd += client.tpvs
                    elif name in mqtt:
                        self.delivered_mqtt += mqtt.pop(name).close(detail["how"])
            if gap is not None and self.monitor.released and not (gap.fds_matched and gap.threads_matched):
                gap.look(self.service.pid, self.idle_fds, self.idle_threads_after)
            if now >= next_sample:
                self.sample(len(gpsd) + len(mqtt))
                next_sample += self.options.sample
            if now >= next_report:
                if now > 0:
                    self.report_progress(now)
                next_report += report_every
            wait = min([next_sample - now] + ([queue[0][0] - now] if queue else [])) / self.speed
            for key, _ in selector.select(timeout=max(0.0, min(wait, 0.02))):
                client = key.data
                if not client.readable():
                    selector.unregister(client.sock)
                    self.dropped_by_service += 1
                    self.delivered_gpsd += client.tpvs
                    gpsd.pop(client.name, None)
                    client.sock.close()
        self.sample(0)
        self.report_progress(self.sim_now())
        self.finish()

    def close_gap(self, gap):
        if gap.looked == 0:
            return  # the receiver was not off yet when the gap ended
        if self.idle_threads_after is None and gap.sessions_before > 0:
            self.idle_threads_after = gap.last_threads
            gap.threads_matched = True
        self.gaps.append(gap)

    def report_progress(self, now):
        recent = [s for s in self.samples if s[0] > now - (3600 if self.options.hours >= 3 else self.total / 6)]
        if not recent:
            return
        last = self.samples[-1]
        say(f"{now / 3600:5.2f} h: RSS {last[1] / MIB:.1f} MiB (max {max(s[1] for s in recent) / MIB:.1f}), "
            f"descriptors {last[2]} (max {max(s[2] for s in recent)}), threads {last[3]} "
            f"(max {max(s[3] for s in recent)}), clients {last[4]}, power-ons {self.monitor.power_ons()}, "
            f"TPVs delivered {self.delivered_gpsd} gpsd + {self.delivered_mqtt} MQTT")

    # MARK: the checks

    def windows(self):
        hours = self.options.hours
        if hours >= 3:
            return (3600, 7200), (self.total - 3600, self.total), "the second simulated hour", "the last"
        third = self.total / 3
        return (third, 2 * third), (2 * third, self.total), "the middle third", "the last third"

    def finish(self):
        # The receiver off after the last subscriber: the bridge's retained power state, then the log.
        linger_limit = 30
        off = self.monitor.wait_released(linger_limit)
        say(f"after the last client: the bridge's power state is '{self.monitor.state}'")
        if not off:
            self.failures.append(f"the receiver was not off {linger_limit} s after the last client")
        self.demands_left()
        # Threads and descriptors back to the idle sets.
        idle_threads = self.idle_threads_after or self.idle_threads
        if idle_threads != self.idle_threads:
            say(f"threads: the first gap after a session had {len(idle_threads)} "
                f"(+{sorted(set(idle_threads) - set(self.idle_threads))}) against {len(self.idle_threads)} before "
                "the first client: that is the idle set from then on")
        deadline = time.monotonic() + 30
        started = time.monotonic()
        while True:
            threads = thread_names(self.service.pid)
            fds = descriptors(self.service.pid)
            if (threads == idle_threads and fds == self.idle_fds) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        waited = time.monotonic() - started
        rss, _ = status(self.service.pid)
        say(f"at the end: RSS {rss / MIB:.1f} MiB, {len(fds)} descriptors, {len(threads)} threads (idle: "
            f"{self.idle_rss / MIB:.1f} MiB before the first client, {len(self.idle_fds)}, {len(idle_threads)}); "
            f"waited {waited:.1f} s of real time for them")
        if threads != idle_threads:
            self.failures.append(f"threads at the end {threads}, idle {idle_threads}")
        if fds != self.idle_fds:
            extra = sorted(set(fds.items()) - set(self.idle_fds.items()))
            missing = sorted(set(self.idle_fds.items()) - set(fds.items()))
            self.failures.append(f"descriptors at the end differ from the idle set: +{extra} -{missing}")

        # The service's own counts, at its stop.
        self.service.process.send_signal(signal.SIGTERM)
        status_code = self.service.process.wait(30)
        self.service.wait_for("stopped; receiver off", 5)
        if status_code != 0:
            self.failures.append(f"gnss-hat serve exited with status {status_code}")
        receiver = self.service.matching("gnss-hat serve: receiver: ")
        bridge = self.service.matching("fixes journaled") + self.service.matching("present at the stop")
        held = [line for line in bridge if "present at the stop" in line and not line.endswith(": none")]
        if held:
            self.failures.append("the service still counted consumers present at its stop: "
                                 + held[0].split("present at the stop: ", 1)[1])
        failed = self.service.matching("receiver failed")
        self.monitor.stop()

        reference, final, reference_name, final_name = self.windows()
        in_window = lambda window: [s for s in self.samples if window[0] <= s[0] < window[1] or
                                    (window[1] == self.total and s[0] >= window[0])]
        ref_rss = max(s[1] for s in in_window(reference))
        fin_rss = max(s[1] for s in in_window(final))
        margin = max(0.05 * ref_rss, MIB)
        say(f"memory: largest RSS {ref_rss / MIB:.2f} MiB in {reference_name}, {fin_rss / MIB:.2f} MiB in "
            f"{final_name} {'window' if final_name == 'the last third' else 'hour'}; flat means the latter is at most "
            f"the former + {margin / MIB:.2f} MiB (5 %, at least 1 MiB)")
        after_warmup = [sample for sample in self.samples if sample[0] >= reference[0]]
        say(f"memory trend after the warm-up: {slope(after_warmup) * 3600 / MIB:+.3f} "
            "MiB per simulated hour (least squares over the samples; a figure, not a check)")
        if fin_rss > ref_rss + margin:
            self.failures.append(f"RSS grew: {ref_rss / MIB:.2f} -> {fin_rss / MIB:.2f} MiB")
        ref_fds = max(s[2] for s in in_window(reference))
        fin_fds = max(s[2] for s in in_window(final))
        say(f"descriptors: at most {ref_fds} in {reference_name}, {fin_fds} in {final_name} (they follow the gpsd "
            f"clients connected); {len(self.idle_fds)} when idle")
        leaky = [gap for gap in self.gaps if not gap.fds_matched]
        after = [gap for gap in self.gaps if gap.sessions_before > 0]
        odd = [gap for gap in after if not gap.threads_matched]
        say(f"gaps with nobody, the receiver off: {len(self.gaps)}; the descriptors back to the idle set in "
            f"{len(self.gaps) - len(leaky)}, the threads in {len(after) - len(odd)} of the {len(after)} after a "
            "session (each gap looked at until they were, or it ended)")
        for gap in leaky[:5]:
            say(f"  at {gap.at / 3600:.2f} h: {'; '.join(gap.fd_differences(self.idle_fds)[:6])}")
        for gap in odd[:5]:
            say(f"  at {gap.at / 3600:.2f} h: threads {gap.last_threads}")
        if leaky:
            self.failures.append(f"{len(leaky)} gaps found descriptors outside the idle set")
        if odd:
            self.failures.append(f"{len(odd)} gaps found threads outside the idle set")
        if len(after) < 1:
            self.failures.append("no gap after a session was looked at (was the receiver ever off with nobody there?)")
        say(f"clients: {self.sessions} sessions, {self.changes} demand changes; {self.dropped_by_service} gpsd "
            "clients closed by the service")
        say(f"fixes delivered: {self.delivered_gpsd} TPVs to gpsd clients, {self.delivered_mqtt} to MQTT consumers")
        say(f"power-ons on the power topic ('powering on', a duty cycle's wakes included): "
            f"{self.monitor.power_ons()} (the service's own count is below)")
        for line in receiver + bridge:
            say("the service said: " + line.removeprefix("gnss-hat serve: "))
        say(f"receiver failures in the log: {len(failed)}" + (f" (first: {failed[0]})" if failed else ""))
        self.power_on_failures(receiver)
        self.energy(receiver)
        self.plot()
        for failure in self.failures:
            say("FAILED: " + failure)

    def demands_left(self):
        """Every consumer has left, so the broker must hold no demand: one left is a consumer the service
        must still count as present (a retained demand is one until it is cleared), and says whether its
        mosquitto_sub ever connected (without a connection the broker holds no will to clear it)."""
        left = self.monitor.demands_left()
        if not left:
            say("demands left on the broker after the last client: none")
            return
        with open(self.broker_log, errors="replace") as handle:
            log = handle.read()
        described = [f"{name} {payload} (its mosquitto_sub "
                     + ("connected" if f" as soak-{name} " in log else "never connected: no will") + ")"
                     for name, payload in sorted(left.items())]
        say(f"demands left on the broker after the last client: {', '.join(described)}")
        self.failures.append(f"{len(left)} consumers' demands outlived them on the broker (see {self.broker_log})")

    def power_on_failures(self, receiver):
        """The power-ons that failed, by reason. The receiver's waits (an acknowledgement's second per
        attempt, three attempts) run on the accelerated clock: at --speed 200 an attempt has 5 ms of
        real time, which a loaded machine misses now and then. More than a quarter failing is the
        product's: the MQTT bridge's journal once made an fdatasync per fix on the thread that posted
        the fix, which held up the receiver's own work so that half the power-ons of a day failed."""
        reasons = collections.Counter()
        for line in self.service.matching("receiver powering off (failure: "):
            reason = line.split("(failure: ", 1)[1]
            reasons[re.sub(r" after \d+ attempts.*| on /dev/\S+.*", "", reason).rstrip(")")] += 1
        counts = re.search(r"(\d+) power-ons \((\d+) failed\)", receiver[0]) if receiver else None
        power_ons, failed = (int(counts[1]), int(counts[2])) if counts else (0, sum(reasons.values()))
        if not failed:
            say("power-ons that failed: none")
            return
        say(f"power-ons that failed: {failed} of {power_ons} ("
            + ", ".join(f"{count} {reason}" for reason, count in reasons.most_common())
            + f"); at --speed {self.speed:g} an acknowledgement's second per attempt is {1000 / self.speed:g} ms "
            f"of real time (load average now {os.getloadavg()[0]:.1f}), so a few are the acceleration's; "
            "more than a quarter fails the soak")
        if failed >= 4 and failed * 4 > power_ons:
            self.failures.append(f"{failed} of {power_ons} power-ons failed")

    def energy(self, receiver):
        """Energy from the service's counts at the board's currents (boards/simulator.json)."""
        match = receiver and re.search(r"(\d+) power-ons .* powered for ([\d.]+) s, .* median time to first fix "
                                       r"([\d.]+) s", receiver[-1])
        if not match:
            say("energy: the service gave no power-ons and time powered")
            return
        with open(os.path.join(ROOT, "boards/simulator.json")) as handle:
            current = json.load(handle)["currentMilliamps"]
        power_ons, powered, first_fix = int(match.group(1)), float(match.group(2)), float(match.group(3))
        acquiring = min(power_ons * first_fix, powered)
        milliamp_hours = (acquiring * current["acquisition"] + (powered - acquiring) * current["tracking"]
                          + max(self.total - powered, 0) * current["backup"]) / 3600
        always_on = (self.total * current["tracking"]) / 3600
        say(f"energy: about {milliamp_hours * current['volts']:.1f} mWh over {self.options.hours:g} h "
            f"({power_ons} power-ons x {first_fix:g} s acquiring at {current['acquisition']} mA, the rest of "
            f"{powered / 3600:.2f} h powered at the tracking {current['tracking']} mA: an upper bound where it was "
            f"in power save; off at the backup {current['backup']} mA); always on: "
            f"{always_on * current['volts']:.0f} mWh")

    def plot(self):
        base = os.path.join(self.out, f"soak-{self.options.hours:g}h-seed{self.options.seed}")
        with open(base + ".dat", "w") as handle:
            handle.write("# simulated hours, RSS MiB, descriptors, threads, clients\n")
            for at, rss, fds, threads, clients in self.samples:
                handle.write(f"{at / 3600:.4f} {rss / MIB:.3f} {fds} {threads} {clients}\n")
        if not shutil.which("gnuplot"):
            say(f"samples in {base}.dat (no gnuplot for the plot)")
            return
        script = f"""
set terminal pngcairo size 1200,900 font ",10"
set output "{base}.png"
set multiplot layout 3,1 title "gnss-hat serve --speed {self.speed:g}: {self.options.hours:g} h simulated, seed {self.options.seed}"
set xlabel "simulated hours"
set xrange [0:{self.options.hours:g}]
set grid
set key top left
set ylabel "MiB"
plot "{base}.dat" using 1:2 with lines title "RSS"
set ylabel "count"
set yrange [0:*]
plot "{base}.dat" using 1:3 with lines title "descriptors", "" using 1:5 with steps title "clients"
plot "{base}.dat" using 1:4 with lines title "threads"
unset multiplot
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=False)
        say(f"samples in {base}.dat, plot in {base}.png")

    def cleanup(self):
        for process in [getattr(self.service, "process", None), self.broker]:
            if process and process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(prog="scripts/soak.sh", description=__doc__.split("\n")[0])
    parser.add_argument("hours", type=float, help="simulated hours")
    parser.add_argument("--seed", type=int, default=37, help="the schedule's seed (default 37)")
    parser.add_argument("--speed", type=float, default=200,
                        help="gnss-hat serve --speed: simulated seconds per real second (default 200)")
    parser.add_argument("--sample", type=float, default=20, help="simulated seconds between samples (default 20)")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/gnss-hat"))
    parser.add_argument("--out", default=os.path.join(ROOT, ".build/soak"), help="logs, samples and the plot")
    options = parser.parse_args()
    started = time.monotonic()
    soak = Soak(options)
    try:
        soak.run()
    finally:
        soak.cleanup()
    say(f"took {time.monotonic() - started:.0f} s of real time")
    if soak.failures:
        sys.exit(1)
    say("passed")


if __name__ == "__main__":
    main()
