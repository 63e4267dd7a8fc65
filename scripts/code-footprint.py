#!/usr/bin/env python3
"""The code one epoch runs, from two callgrind profiles of the same service, a short run and a long one.

Each profile must be made with per-instruction counts (valgrind's --dump-instr=yes), as
`scripts/bench.sh service` makes them with VALGRIND_OPTS set:

    VALGRIND_OPTS=--dump-instr=yes GNSSHAT_BENCH_SERVICE_PROFILE=/tmp/profile \\
        GNSSHAT_BENCH_SERVICE_RUNS=ubx scripts/bench.sh service
    scripts/code-footprint.py /tmp/profile/ubx-50/ours.callgrind /tmp/profile/ubx-300/ours.callgrind 250

An instruction whose count grew between the two runs by at least a third of the epochs between them
ran while the epochs streamed; the script counts those instructions, the 64-byte lines and the 4 KiB
pages they lie on (what an epoch brings into the caches and TLBs after its sleep), and lists the
functions by the lines they take. Start-up and shut-down run in both profiles and cancel out.
"""

import collections
import re
import sys


def parse(path):
    """Per-address instruction counts and the function of each address (callgrind's compressed format)."""
    cost = collections.Counter()
    function_of = {}
    names = {}
    function = None
    address = 0
    after_calls = False
    with open(path) as profile:
        for line in profile:
            line = line.rstrip("\n")
            if not line:
                continue
            match = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if match:
                if match.group(3):
                    names[match.group(2)] = match.group(3)
                if match.group(1) == "fn":
                    function = names.get(match.group(2))
                continue
            if line.startswith("calls="):
                # The next cost line is the call's inclusive cost, at the call's address.
                after_calls = True
                continue
            if line[0] not in "0123456789+-*":
                continue
            fields = line.split()
            position = fields[0]
            if position == "*":
                pass
            elif position[0] in "+-":
                step = int(position[1:], 0)
                address = address + step if position[0] == "+" else address - step
            else:
                address = int(position, 0)
            if after_calls:
                after_calls = False
                continue
            if len(fields) >= 3:
                cost[address] += int(fields[2])
                function_of[address] = function
    return cost, function_of


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(f"usage: {sys.argv[0]} SHORT.callgrind LONG.callgrind EPOCHS-BETWEEN [FUNCTIONS-LISTED]")
    short, _ = parse(sys.argv[1])
    long, function_of = parse(sys.argv[2])
    epochs = float(sys.argv[3])
    listed = int(sys.argv[4]) if len(sys.argv) == 5 else 25
    if not long:
        sys.exit(f"{sys.argv[2]}: no per-instruction counts (was it made with --dump-instr=yes?)")
    ran = {a: (long[a] - short.get(a, 0)) / epochs for a in long if long[a] - short.get(a, 0) >= epochs / 3}
    lines = {a >> 6 for a in ran}
    pages = {a >> 12 for a in ran}
    print(f"per epoch: {sum(ran.values()):.0f} instructions at {len(ran)} addresses, "
          f"{len(lines)} lines of 64 bytes ({len(lines) * 64 / 1024:.1f} KiB), {len(pages)} pages of 4 KiB")
    by_function = collections.defaultdict(set)
    instructions = collections.Counter()
    for a, count in ran.items():
        by_function[function_of[a]].add(a >> 6)
        instructions[function_of[a]] += count
    for function, its_lines in sorted(by_function.items(), key=lambda item: -len(item[1]))[:listed]:
        print(f"{len(its_lines):5d} lines {instructions[function]:9.0f} instructions  {function or '?'}")


if __name__ == "__main__":
    main()
