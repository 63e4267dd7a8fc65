#!/usr/bin/python3
"""Crash safety of the MQTT journal: `gnss-hat serve --mqtt --keep-on` on the simulator (run --speed times
faster) with the broker away, killed (SIGKILL) at N seeded random moments while it journals and started again
each time; then Debian's Mosquitto on a free loopback port (its own configuration), a durable QoS 1
subscriber (clean session off), the service once more, and the checks.

Run by scripts/journal-crash.sh (which checks the tools first); Debian's /usr/bin/python3 and python3-paho-mqtt.

After each kill the driver reads the journal file itself (the record format of Sources/MQTT/Journal.swift:
"GJ", kind, flags, sequence, body length, body, CRC-32). A SIGKILL cannot tear a record (the journal writes
each in one write(2), which a signal does not cut on a regular file), so after a seeded third of the kills
the driver tears the last record at a random byte, as a power cut in the middle of the write would.

Checks, each printed; the exit status is 1 when one fails:
  - every complete record survives each restart: the next snapshot holds every complete message record of
    the one before (the broker is away, so nothing leaves but by the journal's bounds);
  - a torn record is skipped: the service's next start reports exactly the torn bytes as damaged and keeps
    exactly the complete records, and no snapshot after holds the torn record;
  - the bounds hold: at most 100,000 pending records and 16 MiB (Journal.Limits' defaults), none dropped;
  - at the end every complete record is delivered to the subscriber (at least once; duplicates counted), no
    torn record is, nothing else arrives on the journaled topics, and the journal is empty once the service
    has stopped. The last start uses another device name, so its own fixes go to other topics: what arrives
    on the journaled ones came from the journal (two runs of the simulator may give equal fixes).
"""
import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from peers import free_port, start_mosquitto  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE = "crash"
FINAL_DEVICE = "crash-final"
MAX_RECORDS = 100_000
MAX_BYTES = 16 << 20
HEADER = 16
OVERHEAD = HEADER + 4


def say(text):
    print(f"journal-crash: {text}", flush=True)


# MARK: - The journal's file


def decode(data, offset):
    """The record at `offset` as (sequence, kind, topic, payload, length), or None (Journal.swift's decode)."""
    if len(data) - offset < OVERHEAD or data[offset:offset + 2] != b"GJ":
        return None
    code, flags = data[offset + 2], data[offset + 3]
    sequence, body = struct.unpack_from("<QI", data, offset + 4)
    if body > 1 << 20 or len(data) - offset < OVERHEAD + body:
        return None
    end = offset + HEADER + body
    if zlib.crc32(data[offset:end]) != struct.unpack_from("<I", data, end)[0]:
        return None
    if code == 1:
        if body < 2:
            return None
        topic_length = struct.unpack_from("<H", data, offset + HEADER)[0]
        if 2 + topic_length > body or (flags >> 1 & 3) > 2:
            return None
        start = offset + HEADER + 2
        topic = data[start:start + topic_length].decode("utf-8", "replace")
        return sequence, "message", topic, bytes(data[start + topic_length:end]), OVERHEAD + body
    if code == 2 and body == 0:
        return sequence, "removal", None, None, OVERHEAD
    return None


def scan(data):
    """Every valid record, with its offset, and the damaged stretches (offset, length), as JournalScan walks."""
    records, damaged, offset = [], [], 0
    while offset < len(data):
        record = decode(data, offset)
        if record:
            records.append((offset,) + record)
            offset += record[4]
            continue
        candidate = offset + 1
        while candidate < len(data) and not (data[candidate] == 0x47 and decode(data, candidate)):
            candidate += 1
        damaged.append((offset, candidate - offset))
        offset = candidate
    return records, damaged


def pending_messages(records):
    """The message records no removal record names: (sequence, topic, payload) in order."""
    removed = {record[1] for record in records if record[2] == "removal"}
    return [(sequence, topic, payload) for _, sequence, kind, topic, payload, _ in records
            if kind == "message" and sequence not in removed]


# MARK: - The peers


class Service:
    """gnss-hat serve with the broker at `broker_port`, its standard error kept (and logged) line by line."""

    def __init__(self, options, broker_port, state, log, device=DEVICE):
        self.lines = []
        self.condition = threading.Condition()
        log.write(f"--- start at {time.monotonic():.3f}\n")
        self.process = subprocess.Popen(
            [options.binary, "serve", "--speed", str(options.speed), "--keep-on", "--listen", "127.0.0.1:0",
             "--mqtt", f"mqtt://127.0.0.1:{broker_port}", "--mqtt-device", device, "--state-dir", state,
             "--verbose"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = log
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.log.write(line)
            with self.condition:
                self.lines.append(line.rstrip("\n"))
                self.condition.notify_all()
        with self.condition:
            self.lines.append(None)
            self.condition.notify_all()

    def wait_for(self, text, limit):
        deadline = time.monotonic() + limit
        with self.condition:
            while not any(line is not None and text in line for line in self.lines):
                if None in self.lines:
                    raise SystemExit(f"journal-crash: gnss-hat serve ended before printing '{text}'")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SystemExit(f"journal-crash: gnss-hat serve printed no '{text}' within {limit} s")
                self.condition.wait(remaining)

    def matching(self, text):
        with self.condition:
            return [line for line in self.lines if line is not None and text in line]

    def kill(self, sig):
        self.process.send_signal(sig)
        self.process.wait(timeout=60)
        self.reader.join(timeout=10)


class Subscriber:
    """A durable QoS 1 subscriber (clean session off) of everything the service publishes."""

    def __init__(self, port):
        import paho.mqtt.client as mqtt

        self.received = []
        self.lock = threading.Lock()
        self.subscribed = threading.Event()
        self.client = mqtt.Client(client_id="journal-crash-subscriber", clean_session=False,
                                  protocol=mqtt.MQTTv311)
        self.client.on_connect = lambda client, _, flags, rc: client.subscribe(
            [(f"gnss-hat/{DEVICE}/#", 1), (f"owntracks/+/{DEVICE}", 1)])
        self.client.on_subscribe = lambda *_: self.subscribed.set()
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            raise SystemExit("journal-crash: the subscriber did not subscribe")

    def _message(self, client, userdata, message):
        with self.lock:
            self.received.append((message.topic, bytes(message.payload)))

    def messages(self):
        with self.lock:
            return list(self.received)

    def stop(self):
        self.client.disconnect()
        self.client.loop_stop()


# MARK: - The run


class CrashRun:
    def __init__(self, options):
        self.options = options
        self.random = random.Random(options.seed)
        self.work = tempfile.mkdtemp(prefix="gnsshat-journal-crash.")
        self.state = os.path.join(self.work, "state")
        self.journal = os.path.join(self.state, "mqtt", "journal")
        os.makedirs(options.out, exist_ok=True)
        self.log = open(os.path.join(options.out, "serve.log"), "w", buffering=1)
        self.broker_port = free_port()
        self.broker = None
        self.service = None
        self.failures = []
        # Every complete message record seen in a snapshot: (sequence, topic, payload).
        self.complete = set()
        # Records the driver tore: (topic, payload) of the whole record, and how many bytes stayed.
        self.torn = []
        self.natural_tears = 0
        self.largest = (0, 0)

    def check(self, condition, text):
        if not condition:
            self.failures.append(text)
            say(f"FAILED: {text}")

    def read_journal(self):
        try:
            with open(self.journal, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return b""

    def journal_size(self):
        try:
            return os.path.getsize(self.journal)
        except FileNotFoundError:
            return 0

    def start_service(self, device=DEVICE):
        self.service = Service(self.options, self.broker_port, self.state, self.log, device)
        self.service.wait_for("mqtt: publishing to ", 30)

    def wait_until_journaling(self):
        """Until the journal has grown since the service opened it (a fix went in), at most 30 s."""
        opened = self.journal_size()
        deadline = time.monotonic() + 30
        while self.journal_size() <= opened:
            if time.monotonic() > deadline:
                raise SystemExit("journal-crash: the service journaled nothing in 30 s")
            time.sleep(0.005)

    def kill_once(self, index, previous):
        self.start_service()
        if previous is not None:
            self.check_restart(index, previous)
        self.wait_until_journaling()
        time.sleep(self.random.uniform(0, self.options.window))
        self.service.kill(signal.SIGKILL)
        data = self.read_journal()
        records, damaged = scan(data)
        if damaged:
            self.natural_tears += 1
        pending = pending_messages(records)
        self.check(len(pending) <= MAX_RECORDS and sum(OVERHEAD + 2 + len(t.encode()) + len(p)
                                                       for _, t, p in pending) <= MAX_BYTES,
                   f"kill {index}: the journal holds {len(pending)} records, past its bounds")
        if previous is not None:
            missing = previous["pending"] - set(pending)
            self.check(not missing, f"kill {index}: {len(missing)} complete records of the snapshot before are gone")
        self.complete.update(pending)
        self.largest = max(self.largest, (len(pending), len(data)))
        snapshot = {"pending": set(pending), "torn": None, "damaged": sum(length for _, length in damaged)}
        if self.random.random() < 1 / 3 and records and records[-1][2] == "message":
            # A power cut in the middle of the last record's write: it keeps 1 to length-1 of its bytes.
            offset, sequence, _, topic, payload, length = records[-1]
            kept = self.random.randrange(1, length)
            with open(self.journal, "r+b") as handle:
                handle.truncate(offset + kept)
            self.torn.append((sequence, topic, payload, kept))
            snapshot["pending"].discard((sequence, topic, payload))
            self.complete.discard((sequence, topic, payload))
            snapshot["torn"] = (sequence, topic, payload)
            snapshot["damaged"] += kept
        return snapshot

    def check_restart(self, index, previous):
        """What the service's open said of the snapshot before: the damaged bytes, the records kept."""
        notices = self.service.matching("damaged bytes")
        if previous["damaged"] == 0:
            self.check(not notices, f"start {index}: damage reported in an undamaged journal: {notices}")
            return
        expected = (f"had {previous['damaged']} damaged bytes (a write torn by a power loss?), skipped; "
                    f"{len(previous['pending'])} records are kept")
        self.check(any(expected in line for line in notices),
                   f"start {index}: expected '{expected}', the service said {notices or 'nothing'}")

    def start_broker(self):
        self.broker = start_mosquitto(os.path.join(self.work, "mosquitto.conf"), self.broker_port, [
            "max_queued_messages 1000000", "max_inflight_messages 0", f"log_dest file {self.options.out}/broker.log"])

    def run(self):
        started = time.monotonic()
        previous = None
        for index in range(1, self.options.kills + 1):
            previous = self.kill_once(index, previous)
            if index % 25 == 0:
                say(f"{index} kills in {time.monotonic() - started:.0f} s; {len(self.complete)} complete records, "
                    f"{len(self.torn)} torn")
        self.start_broker()
        subscriber = Subscriber(self.broker_port)
        # Under another device name, so that the journaled records are the only messages on the topics of
        # DEVICE: what arrives there came from the journal (the simulator may give two runs equal fixes).
        self.start_service(FINAL_DEVICE)
        self.check_restart(self.options.kills + 1, previous)
        self.service.wait_for("mqtt: connected to ", 30)
        wanted = {(topic, payload) for _, topic, payload in self.complete}
        deadline = time.monotonic() + self.options.drain
        while wanted - set(subscriber.messages()) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.service.kill(signal.SIGTERM)
        subscriber.stop()
        self.broker.terminate()
        self.broker.wait()
        self.report(subscriber.messages(), time.monotonic() - started)

    def report(self, messages, elapsed):
        expected = {}
        for _, topic, payload in self.complete:
            expected[(topic, payload)] = expected.get((topic, payload), 0) + 1
        counts = {}
        for message in messages:
            counts[message] = counts.get(message, 0) + 1
        delivered = sum(1 for key in expected if counts.get(key, 0) > 0)
        duplicates = sum(max(0, counts.get(key, 0) - wanted) for key, wanted in expected.items())
        torn_delivered = [t for t in self.torn if (t[1], t[2]) in counts and (t[1], t[2]) not in expected]
        unexpected = sum(count for key, count in counts.items() if key not in expected)
        ambiguous = sum(1 for t in self.torn if (t[1], t[2]) in expected)
        left = self.service.matching("left in the journal")
        leftover = pending_messages(scan(self.read_journal())[0])
        say(f"kills: {self.options.kills} (seed {self.options.seed}, --speed {self.options.speed}, "
            f"killed 0-{self.options.window * 1000:.0f} ms after the journal first grew)")
        say(f"records completely written: {len(self.complete)} (largest journal {self.largest[0]} records, "
            f"{self.largest[1]} bytes)")
        say(f"delivered: {delivered} of {len(expected)} distinct, {duplicates} duplicates, "
            f"{len(messages)} messages in all, {unexpected} matching no complete record")
        say(f"torn rejected: {len(self.torn) - len(torn_delivered)} of {len(self.torn)} records the driver tore "
            f"({ambiguous} identical to a complete record), {self.natural_tears} torn by a kill itself")
        say(f"journal at the stop: {left[-1] if left else 'no summary'}; {len(leftover)} pending in the file")
        self.check(delivered == len(expected), f"{len(expected) - delivered} complete records never delivered")
        self.check(not torn_delivered, f"{len(torn_delivered)} torn records delivered")
        self.check(unexpected == 0, f"{unexpected} messages on the journaled topics match no complete record")
        self.check(not leftover and left and " 0 left in the journal" in left[-1],
                   "the journal is not empty after the drain")
        self.check(not self.service.matching("dropped by its limits") or
                   " 0 dropped by its limits" in self.service.matching("dropped by its limits")[-1],
                   "records dropped by the journal's limits")
        say(f"took {elapsed:.0f} s")

    def cleanup(self):
        for process in [getattr(self.service, "process", None), self.broker]:
            if process and process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(prog="scripts/journal-crash.sh", description=__doc__.split("\n")[0])
    parser.add_argument("kills", type=int, nargs="?", default=100, help="SIGKILLs (default 100)")
    parser.add_argument("--seed", type=int, default=37, help="the moments' and tears' seed (default 37)")
    parser.add_argument("--speed", type=float, default=100, help="gnss-hat serve --speed (default 100)")
    parser.add_argument("--window", type=float, default=0.3,
                        help="the latest kill after the journal first grows, seconds (default 0.3)")
    parser.add_argument("--drain", type=float, default=60, help="the longest wait for delivery, seconds")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/gnss-hat"))
    parser.add_argument("--out", default=os.path.join(ROOT, ".build/journal-crash"), help="the logs")
    options = parser.parse_args()
    run = CrashRun(options)
    try:
        run.run()
    finally:
        run.cleanup()
    if run.failures:
        sys.exit(1)
    say("passed")


if __name__ == "__main__":
    main()
