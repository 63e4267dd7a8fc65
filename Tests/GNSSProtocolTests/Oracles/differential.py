#!/usr/bin/env python3
"""Differential oracle for GNSSProtocol, using pyubx2 1.4.0 and pynmeagps 1.1.8.

generate --seed S --count N --out FILE
    The oracles encode N seeded random valid messages of every type; for each, one JSON line with the
    bytes (hex) and the fields the oracle reads back from those bytes, normalised (see `normalise_*`).
check --in FILE
    Reads JSON lines written by the Swift test (bytes GNSSProtocol encoded, and the fields it meant),
    decodes the bytes with the oracle and compares every field. Prints a summary per type; exits 1 on
    any difference or any message the oracle cannot decode.

Normalised fields: UBX integers unscaled (raw wire values), bit fields as integers, strings without
NUL padding; configuration items as "cfg_<key hex>". NMEA: times "HH:MM:SS.ffffff", dates
"YYYY-MM-DD", empty fields null, hexadecimal fields as integers, latitude and longitude signed degrees.
"""

import argparse
import collections
import datetime
import json
import multiprocessing
import os
import random
import sys

from pyubx2 import GET, POLL, SET, UBXMessage, UBXReader
from pyubx2 import ubxtypes_get, ubxtypes_poll, ubxtypes_set
from pyubx2.ubxhelpers import cfgname2key
from pyubx2.ubxtypes_configdb import UBX_CONFIG_DATABASE
from pynmeagps import NMEAMessage, NMEAReader
from pynmeagps import GET as NMEA_GET

# name, class name, mode
UBX_TYPES = [
    ("NAV-PVT", "NAV", GET), ("NAV-SAT", "NAV", GET), ("NAV-STATUS", "NAV", GET), ("NAV-DOP", "NAV", GET),
    ("NAV-TIMEUTC", "NAV", GET), ("NAV-SOL", "NAV", GET), ("NAV-POSLLH", "NAV", GET), ("NAV-VELNED", "NAV", GET),
    ("NAV-TIMEGPS", "NAV", GET), ("NAV-HPPOSLLH", "NAV", GET), ("HNR-PVT", "HNR", GET), ("MON-VER", "MON", GET),
    ("ACK-ACK", "ACK", GET), ("ACK-NAK", "ACK", GET), ("INF-NOTICE", "INF", GET), ("INF-ERROR", "INF", GET),
    ("CFG-VALGET", "CFG", GET), ("CFG-VALGET", "CFG", POLL), ("CFG-VALSET", "CFG", SET), ("CFG-MSG", "CFG", SET),
    ("CFG-PRT", "CFG", SET), ("CFG-RATE", "CFG", SET), ("CFG-RST", "CFG", SET), ("RXM-PMREQ", "RXM", SET),
    ("RXM-PMREQ-S", "RXM", SET), ("MON-VER", "MON", POLL), ("NAV-PVT", "NAV", POLL), ("NAV-SVINFO", "NAV", GET),
    # Aiding and power save (issue 16).
    ("MGA-DBD", "MGA", GET), ("MGA-DBD", "MGA", POLL), ("MGA-ACK-DATA0", "MGA", GET), ("MGA-NAK-DATA0", "MGA", GET),
    ("MGA-INI-TIME-UTC", "MGA", SET), ("MGA-INI-POS-LLH", "MGA", SET), ("SEC-UNIQID", "SEC", GET),
    ("SEC-UNIQID", "SEC", POLL), ("CFG-PM2", "CFG", SET), ("CFG-RXM", "CFG", SET), ("CFG-PMS", "CFG", SET),
    ("CFG-NAVX5", "CFG", SET),
]
# MGA messages are told apart by their first payload byte, `type`: it is fixed, not random.
MGA_TYPES = {"MGA-ACK-DATA0": 1, "MGA-NAK-DATA0": 0, "MGA-INI-TIME-UTC": 0x10, "MGA-INI-POS-LLH": 0x01}
NMEA_TYPES = ["GGA", "RMC", "GSA", "GSV", "VTG", "GLL", "GNS", "GST", "ZDA", "TXT"]
TALKERS = ["GP", "GL", "GA", "GB", "BD", "GQ", "QZ", "GI", "GN"]
MODE_NAMES = {GET: "GET", SET: "SET", POLL: "POLL"}
DEFINITIONS = {GET: ubxtypes_get.UBX_PAYLOADS_GET, SET: ubxtypes_set.UBX_PAYLOADS_SET,
               POLL: ubxtypes_poll.UBX_PAYLOADS_POLL}
# Configuration keys of fixed-size integer types (bool and 1/2/4/8-byte integers), for VALSET/VALGET.
CONFIG_KEYS = sorted((key, kind) for (key, kind) in UBX_CONFIG_DATABASE.values()
                     if kind[0] in "ULIXE" and int(kind[1:]) <= 4)


def type_key(name, mode):
    return f"{name}/{MODE_NAMES[mode]}"


# ---------------------------------------------------------------- UBX


def find_definition(definition, attribute):
    """The type (and scale) of an attribute in a pyubx2 payload definition, searching groups."""
    base = attribute
    while len(base) > 3 and base[-3] == "_" and base[-2:].isdigit():
        base = base[:-3]
    for key, value in definition.items():
        if key == base or (key.endswith("_bit") and key[:-4] == base):
            return value
        if isinstance(value, tuple) and isinstance(value[1], dict):
            found = find_definition(value[1], base)
            if found is not None:
                return found
    return None


def scale_of(name, mode, attribute):
    definition = DEFINITIONS[mode].get(name)
    if definition is None:
        return 1
    found = find_definition(definition, attribute)
    if isinstance(found, tuple) and isinstance(found[1], float):
        return found[1]
    return 1


def normalise_ubx(message, name, mode):
    if name == "NAV-HPPOSLLH":
        # pyubx2 folds the high-precision parts into lat/lon (1e-9 degree) and heights (0.1 mm).
        fields = {k: v for k, v in normalise_ubx(message, "NAV-HPPOSLLH-RAW", mode).items()
                  if k not in ("lat", "lon", "height", "hMSL")}
        fields.update({"lat": round(message.lat * 1e9), "lon": round(message.lon * 1e9),
                       "height": round(message.height * 10), "hMSL": round(message.hMSL * 10)})
        return fields
    if name == "NAV-HPPOSLLH-RAW":
        name = "NAV-HPPOSLLH"
    fields = {}
    for key, value in message.__dict__.items():
        if key.startswith("_") and not key.startswith("_HP"):
            continue
        if key.startswith("reserved"):
            continue
        if key.startswith("CFG_"):
            keyid, kind = cfgname2key(key)
            raw = int.from_bytes(value, "little") if isinstance(value, bytes) else int(value)
            if raw < 0:
                raw += 1 << (8 * int(kind[1:]))
            fields[f"cfg_{keyid:08x}"] = raw
            continue
        if isinstance(value, bytes):
            definition = find_definition(DEFINITIONS[mode].get(name, {}), key)
            kind = definition[0] if isinstance(definition, tuple) else definition
            if isinstance(kind, str) and kind.startswith("C"):
                fields[key] = value.split(b"\x00")[0].decode("ascii")
            else:
                fields[key] = int.from_bytes(value, "little")
        elif isinstance(value, float):
            fields[key] = round(value / scale_of(name, mode, key))
        elif isinstance(value, bool):
            fields[key] = int(value)
        else:
            fields[key] = value
    return fields


def random_int(rng, kind):
    size = int(kind[1:]) * (8 if kind[0] in "UIXE" else 1)
    if kind[0] == "I":
        return rng.randrange(-(1 << (size - 1)), 1 << (size - 1))
    return rng.randrange(0, 1 << size)


def random_fields(rng, definition, suffix="", depth=0):
    """Random raw values for a pyubx2 payload definition (no nested repeating groups beyond one)."""
    kwargs = {}
    for key, value in definition.items():
        if key.startswith("reserved"):
            continue
        scale = 1
        kind = value
        if isinstance(value, tuple) and isinstance(value[1], float):
            kind, scale = value
        if isinstance(kind, tuple):
            if key.endswith("_bit"):
                size = int(kind[0][1:])
                kwargs[key[:-4] + suffix] = rng.randrange(0, 1 << (8 * size)).to_bytes(size, "little")
            continue
        raw = random_int(rng, kind)
        if scale != 1:
            # pyubx2 stores int(value / scale): pick raw values that survive the float round trip.
            while int((raw * scale) / scale) != raw:
                raw = random_int(rng, kind)
            kwargs[key + suffix] = raw * scale
        else:
            kwargs[key + suffix] = raw
    return kwargs


def printable(rng, low, high):
    # Never empty: a UBX message with an empty payload is a poll.
    text = "".join(chr(rng.randrange(0x20, 0x7F)) for _ in range(rng.randrange(low, high + 1))).rstrip()
    return text or "X"


def generate_ubx(rng, name, cls, mode):
    if mode == POLL and name != "CFG-VALGET":
        return UBXMessage(cls, name, POLL)
    if name == "CFG-VALSET":
        items = [(key, config_argument(random_config_value(rng, kind), kind))
                 for key, kind in rng.sample(CONFIG_KEYS, rng.randrange(1, 9))]
        return UBXMessage.config_set(rng.randrange(1, 8), 0, items)
    if name == "CFG-VALGET" and mode == POLL:
        keys = [key for key, _ in rng.sample(CONFIG_KEYS, rng.randrange(1, 9))]
        return UBXMessage.config_poll(rng.randrange(0, 3), rng.randrange(0, 100), keys)
    if name == "CFG-VALGET":
        payload = bytes([1, rng.randrange(0, 3)]) + rng.randrange(0, 100).to_bytes(2, "little")
        for key, kind in rng.sample(CONFIG_KEYS, rng.randrange(1, 9)):
            size = max(1, int(kind[1:]))
            payload += key.to_bytes(4, "little") + random_config_value(rng, kind).to_bytes(size, "little")
        return UBXMessage(cls, name, GET, payload=payload)
    if name == "MON-VER":
        kwargs = {"swVersion": printable(rng, 1, 29).encode().ljust(30, b"\x00"),
                  "hwVersion": printable(rng, 1, 9).encode().ljust(10, b"\x00")}
        for index in range(rng.randrange(0, 5)):
            kwargs[f"extension_{index + 1:02d}"] = printable(rng, 1, 29).encode().ljust(30, b"\x00")
        return UBXMessage(cls, name, GET, **kwargs)
    if name.startswith("INF-"):
        return UBXMessage(cls, name, GET, message=printable(rng, 1, 80).encode())
    if name == "MGA-DBD":
        # A database entry: 12 reserved bytes and firmware-specific data (up to 164 bytes in all, by
        # u-blox's interface description); pyubx2 decodes the data bytes one by one.
        size = rng.randrange(12, 165)
        return UBXMessage(cls, name, mode, payload=bytes(rng.randrange(256) for _ in range(size)))
    if name == "RXM-PMREQ-S":
        return UBXMessage(cls, "RXM-PMREQ", SET, payload=rng.randrange(0, 1 << 32).to_bytes(4, "little")
                          + rng.randrange(0, 1 << 32).to_bytes(4, "little"))
    definition = DEFINITIONS[mode][name]
    kwargs = random_fields(rng, {k: v for k, v in definition.items()
                                 if not (isinstance(v, tuple) and not isinstance(v[1], float)
                                         and not k.endswith("_bit"))})
    for key, value in definition.items():
        if isinstance(value, tuple) and not isinstance(value[1], float) and not key.endswith("_bit"):
            # A repeating group: its count field must match.
            count = rng.randrange(0, 17)
            kwargs[value[0]] = count
            for index in range(count):
                kwargs.update(random_fields(rng, value[1], f"_{index + 1:02d}"))
    if name == "RXM-PMREQ":
        kwargs["version"] = 0
    if name in MGA_TYPES:
        kwargs["type"] = MGA_TYPES[name]
    if name == "CFG-MSG":
        pass
    return UBXMessage(cls, name, mode, parsebitfield=False, **kwargs)


def config_argument(raw, kind):
    """pyubx2 wants bit fields as bytes and signed values as negative integers."""
    size = max(1, int(kind[1:]))
    if kind[0] == "X":
        return raw.to_bytes(size, "little")
    if kind[0] == "I" and raw >= 1 << (8 * size - 1):
        return raw - (1 << (8 * size))
    return raw


def random_config_value(rng, kind):
    if kind == "L001":
        return rng.randrange(0, 2)
    size = int(kind[1:])
    return rng.randrange(0, 1 << (8 * size))


def parse_ubx(raw, mode):
    return UBXReader.parse(raw, msgmode=mode, parsebitfield=False)


# ---------------------------------------------------------------- NMEA


def normalise_nmea(message):
    fields = {}
    for key, value in message.__dict__.items():
        if key.startswith("_"):
            continue
        if value == "":
            fields[key] = None
        elif isinstance(value, datetime.time):
            fields[key] = value.strftime("%H:%M:%S.%f")
        elif isinstance(value, datetime.date):
            fields[key] = value.strftime("%Y-%m-%d")
        elif key in ("systemId", "signalID"):
            fields[key] = int(value, 16)
        else:
            fields[key] = value
    return fields


def maybe(rng, value, empty=0.15):
    return "" if rng.random() < empty else value


def rtime(rng):
    return datetime.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(100) * 10000)


def rcoord(rng, limit):
    return round(rng.uniform(-limit, limit), 7)


def rdec(rng, low, high, decimals):
    return round(rng.uniform(low, high), decimals)


def generate_nmea(rng, kind):
    talker = rng.choice(TALKERS)
    lat, lon = rcoord(rng, 89.9), rcoord(rng, 179.9)
    ns, ew = ("N" if lat >= 0 else "S"), ("E" if lon >= 0 else "W")
    if kind == "GGA":
        alt = maybe(rng, rdec(rng, -400, 9000, 1))
        sep = maybe(rng, rdec(rng, -100, 100, 1))
        age = maybe(rng, rdec(rng, 0, 99, 1), 0.6)
        return NMEAMessage(talker, kind, NMEA_GET, time=maybe(rng, rtime(rng)), lat=lat, NS=ns, lon=lon, EW=ew,
                           quality=rng.randrange(0, 9), numSV=rng.randrange(0, 40), HDOP=maybe(rng, rdec(rng, 0, 99, 2)),
                           alt=alt, altUnit="M" if alt != "" else "", sep=sep, sepUnit="M" if sep != "" else "",
                           diffAge=age, diffStation=rng.randrange(0, 1024) if age != "" else "")
    if kind == "RMC":
        mv = maybe(rng, rdec(rng, 0.1, 30, 1), 0.5)
        return NMEAMessage(talker, kind, NMEA_GET, time=rtime(rng), status=rng.choice("AV"), lat=lat, NS=ns, lon=lon,
                           EW=ew, spd=maybe(rng, rdec(rng, 0, 500, 3)), cog=maybe(rng, rdec(rng, 0, 359.99, 2)),
                           date=datetime.date(rng.randrange(1980, 2069), rng.randrange(1, 13), rng.randrange(1, 29)),
                           mv=mv, mvEW=rng.choice("EW") if mv != "" else "", posMode=rng.choice("ADEFMNPRS"),
                           navStatus=rng.choice("SCUV"))
    if kind == "GSA":
        count = rng.randrange(0, 13)
        kwargs = {f"svid_{i + 1:02d}": (rng.randrange(1, 100) if i < count else "") for i in range(12)}
        return NMEAMessage(talker, kind, NMEA_GET, opMode=rng.choice("AM"), navMode=rng.randrange(1, 4),
                           PDOP=rdec(rng, 0.5, 99, 2), HDOP=rdec(rng, 0.5, 99, 2), VDOP=rdec(rng, 0.5, 99, 2),
                           systemId=rng.randrange(1, 7), **kwargs)
    if kind == "GSV":
        count = rng.randrange(0, 5)
        kwargs = {}
        for i in range(count):
            n = f"{i + 1:02d}"
            kwargs.update({f"svid_{n}": rng.randrange(1, 300), f"elv_{n}": maybe(rng, rng.randrange(0, 91)),
                           f"az_{n}": maybe(rng, rng.randrange(0, 360)), f"cno_{n}": maybe(rng, rng.randrange(0, 99))})
        return NMEAMessage(talker, kind, NMEA_GET, numMsg=rng.randrange(1, 10), msgNum=rng.randrange(1, 10),
                           numSV=rng.randrange(0, 40), signalID=rng.randrange(0, 12), **kwargs)
    if kind == "VTG":
        cogm = maybe(rng, rdec(rng, 0, 359.99, 2))
        return NMEAMessage(talker, kind, NMEA_GET, cogt=maybe(rng, rdec(rng, 0, 359.99, 2)), cogtUnit="T", cogm=cogm,
                           cogmUnit="M", sogn=rdec(rng, 0, 500, 3), sognUnit="N", sogk=rdec(rng, 0, 900, 3),
                           sogkUnit="K", posMode=rng.choice("ADEN"))
    if kind == "GLL":
        return NMEAMessage(talker, kind, NMEA_GET, lat=lat, NS=ns, lon=lon, EW=ew, time=rtime(rng),
                           status=rng.choice("AV"), posMode=rng.choice("ADEN"))
    if kind == "GNS":
        age = maybe(rng, rdec(rng, 0, 99, 1), 0.6)
        return NMEAMessage(talker, kind, NMEA_GET, time=rtime(rng), lat=lat, NS=ns, lon=lon, EW=ew,
                           posMode="".join(rng.choice("ADEFMNPRS") for _ in range(rng.randrange(1, 7))),
                           numSV=rng.randrange(0, 60), HDOP=rdec(rng, 0.3, 99, 2), alt=rdec(rng, -400, 9000, 1),
                           sep=rdec(rng, -100, 100, 1), diffAge=age,
                           diffStation=rng.randrange(0, 1024) if age != "" else "", navStatus=rng.choice("SCUV"))
    if kind == "GST":
        return NMEAMessage(talker, kind, NMEA_GET, time=rtime(rng),
                           **{k: maybe(rng, rdec(rng, 0, 999, 1)) for k in
                              ["rangeRms", "stdMajor", "stdMinor", "orient", "stdLat", "stdLong", "stdAlt"]})
    if kind == "ZDA":
        return NMEAMessage(talker, kind, NMEA_GET, time=rtime(rng), day=rng.randrange(1, 29), month=rng.randrange(1, 13),
                           year=rng.randrange(1980, 2080), ltzh=f"{rng.randrange(0, 13):02d}", ltzn=f"{rng.randrange(0, 60):02d}")
    if kind == "TXT":
        text = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .=-_:/") for _ in range(rng.randrange(1, 50))).strip()
        return NMEAMessage(talker, kind, NMEA_GET, numMsg=rng.randrange(1, 10), msgNum=rng.randrange(1, 10),
                           msgType=rng.randrange(0, 8), text=text or "X")
    raise ValueError(kind)


# ---------------------------------------------------------------- commands


def generate_type(task):
    """All messages of one type, from a seed of their own (so the work can be split across processes)."""
    seed, count, index = task
    rng = random.Random(seed * 1000 + index)
    lines = []
    if index < len(UBX_TYPES):
        name, cls, mode = UBX_TYPES[index]
        key = type_key(name, mode)
        for _ in range(count):
            raw = generate_ubx(rng, name, cls, mode).serialize()
            fields = normalise_ubx(parse_ubx(raw, mode), name.removesuffix("-S"), mode)
            lines.append(json.dumps({"proto": "ubx", "type": key, "hex": raw.hex(), "fields": fields}))
    else:
        kind = NMEA_TYPES[index - len(UBX_TYPES)]
        for _ in range(count):
            raw = generate_nmea(rng, kind).serialize()
            fields = normalise_nmea(NMEAReader.parse(raw))
            lines.append(json.dumps({"proto": "nmea", "type": kind, "hex": raw.hex(), "fields": fields}))
    return lines


def workers():
    """Processes to use: GNSSHAT_ORACLE_WORKERS, default 1 (a pool gains little on a busy 2-core machine)."""
    return max(1, int(os.environ.get("GNSSHAT_ORACLE_WORKERS", "1")))


def mapped(function, tasks):
    if workers() == 1:
        return map(function, tasks), None
    pool = multiprocessing.Pool(workers())
    return pool.imap(function, tasks), pool


def generate(seed, count, out):
    tasks = [(seed, count, index) for index in range(len(UBX_TYPES) + len(NMEA_TYPES))]
    results, pool = mapped(generate_type, tasks)
    with open(out, "w") as stream:
        for lines in results:
            stream.write("\n".join(lines) + "\n")
    if pool:
        pool.close()


def same(ours, theirs):
    if isinstance(ours, float) or isinstance(theirs, float):
        if ours is None or theirs is None:
            return False
        return abs(float(ours) - float(theirs)) <= 1e-9 * max(1.0, abs(float(theirs)))
    return ours == theirs


def check_lines(lines):
    counts = collections.Counter()
    failures = collections.Counter()
    examples = []
    for line in lines:
        if True:
            item = json.loads(line)
            key = item["type"]
            counts[key] += 1
            raw = bytes.fromhex(item["hex"])
            try:
                if item["proto"] == "ubx":
                    name, mode_name = key.split("/")
                    mode = {"GET": GET, "SET": SET, "POLL": POLL}[mode_name]
                    theirs = normalise_ubx(parse_ubx(raw, mode), name, mode)
                else:
                    theirs = normalise_nmea(NMEAReader.parse(raw))
            except Exception as error:  # the oracle could not decode our bytes
                failures[key] += 1
                if len(examples) < 20:
                    examples.append(f"{key}: oracle cannot decode {raw!r}: {error}")
                continue
            bad = [f for f, v in item["fields"].items() if not same(v, theirs.get(f))]
            if bad:
                failures[key] += 1
                if len(examples) < 20:
                    examples.append(f"{key}: {raw!r} differs in " + ", ".join(
                        f"{f} ours={item['fields'][f]!r} oracle={theirs.get(f)!r}" for f in bad[:4]))
    return counts, failures, examples


def check(path):
    with open(path) as stream:
        lines = stream.read().splitlines()
    chunk = max(1, len(lines) // (4 * workers()))
    counts, failures, examples = collections.Counter(), collections.Counter(), []
    results, pool = mapped(check_lines, [lines[i:i + chunk] for i in range(0, len(lines), chunk)])
    for c, f, e in results:
        counts.update(c)
        failures.update(f)
        examples += e[:20 - len(examples)]
    if pool:
        pool.close()
    for key in sorted(counts):
        print(f"check {key}: {counts[key]} messages, {failures[key]} differ")
    for example in examples:
        print("  " + example)
    total = sum(counts.values())
    print(f"check total: {total} messages, {sum(failures.values())} differ")
    return 1 if failures or total == 0 else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--count", type=int, required=True)
    g.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--in", dest="path", required=True)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.seed, args.count, args.out)
        return 0
    return check(args.path)


if __name__ == "__main__":
    sys.exit(main())
