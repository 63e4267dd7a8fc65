#!/usr/bin/env bash
# Makes scripts/static/gnss-hat.order: the functions `gnss-hat serve` runs, for the linker to place
# together at the start of the static binary's text (scripts/build-static.sh). Without that order
# the few thousand functions a service runs lie all over the 6.5 MB of text, and the kernel maps
# every page (or larger page-cache folio) that holds one: most of the text ends up resident.
#
# How: builds the static binary without an order, runs it under valgrind's callgrind (which records
# every function that ran, in every thread) in the service's main situations, and lists what ran:
#   1. the simulator board: a JSON watch, NMEA pass-through, ?VERSION/?DEVICES/?POLL, the last
#      client leaving (linger, power off) and a second watch;
#   2. a UART board on the pseudo-terminal of `gnss-hat simulate`, as the service benchmark runs it
#      (configuration off, --early-position), and again with the receiver configured.
# Partial functions of an async function that ran are listed with it: which of them run depends on
# timing. The list has two blocks, each sorted, so that a new profile shows as a small diff: first
# the functions that run while an epoch streams to a watcher (what the UART runs execute between
# two callgrind dumps, after the start-up and before the shut-down), then everything else that ran.
# The streaming block is what the service runs every epoch, each time on caches gone cold in the
# sleep between reads: kept together it spans tens of pages instead of the whole ordered block.
# usage: scripts/profile-order.sh        (x86_64; a few minutes; valgrind comes from scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C   # byte order for sort and comm: the same list on every machine
say() { printf 'profile-order: %s\n' "$*"; }
die() { printf 'profile-order: %s\n' "$*" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || die "profiles the x86_64 build (the order holds for aarch64 too: the names are the same)"

scripts/setup.sh >/dev/null
scratch=.build/static-profile
GNSSHAT_STATIC_ORDER=none GNSSHAT_STATIC_SCRATCH=$scratch scripts/build-static.sh
bin=$scratch/gnss-hat-x86_64.unstripped
[ -x "$bin" ] || die "no profile build at $bin"
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts `gnss-hat serve ARGS...` under callgrind on a free port; sets serve_pid and port.
start_serve() {
    local name=$1
    shift
    port=$(free_port)
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.callgrind" \
        "$bin" serve --listen "127.0.0.1:$port" --linger 1 "$@" 2>"$work/$name.log" &
    serve_pid=$!
    pids+=("$serve_pid")
    for _ in $(seq 600); do
        grep -q "listening on" "$work/$name.log" && return 0
        kill -0 "$serve_pid" 2>/dev/null || die "serve ($name) exited: $(tail -3 "$work/$name.log")"
        sleep 0.1
    done
    die "serve ($name) did not start listening within 60 s"
}

# Stops the service with SIGTERM, as systemd does, and waits for callgrind to write its profile.
stop_serve() {
    kill -TERM "$serve_pid"
    wait "$serve_pid" || die "serve exited $? (see $work)"
}

# Sends gpsd commands on one connection and reads the answers for a while.
ask() {
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf '%s\n' "$@" >&3
    timeout 5 head -n $(($# + 1)) <&3 >/dev/null || true
    exec 3>&-
}

watch() {  # watch LINES [gpspipe options...]
    local lines=$1
    shift
    timeout 120 gpspipe "$@" -n "$lines" "127.0.0.1:$port" >/dev/null || die "gpspipe $* got fewer than $lines lines"
}

# One watcher for 90 lines; callgrind dumps its profile (and starts afresh) after the 20th line, once
# the receiver streams, and again after the 80th, before the watcher leaves: the second dump,
# NAME.callgrind.2, is the steady state of an epoch streaming to a watcher.
stream_window() {
    local name=$1 lines=$work/$1.lines
    timeout 180 gpspipe -w -n 90 "127.0.0.1:$port" >"$lines" &
    local pipe=$!
    pids+=("$pipe")
    for mark in 20 80; do
        for _ in $(seq 1200); do
            [ "$(wc -l <"$lines")" -ge $mark ] && break
            kill -0 "$pipe" 2>/dev/null || die "gpspipe ($name) ended after $(wc -l <"$lines") lines"
            sleep 0.1
        done
        [ "$(wc -l <"$lines")" -ge $mark ] || die "gpspipe ($name) got fewer than $mark lines in 120 s"
        callgrind_control --dump="after $mark lines" "$serve_pid" >/dev/null 2>&1 ||
            die "callgrind_control could not dump the profile of serve ($name)"
    done
    wait "$pipe" || die "gpspipe ($name) got fewer than 90 lines"
    [ -s "$work/$name.callgrind.2" ] || die "no steady-state profile $work/$name.callgrind.2"
}

say "1/3 the simulator board"
start_serve simulator
watch 40 -w
watch 20 -r
ask '?VERSION;' '?DEVICES;' '?WATCH={"enable":true};' '?POLL;' '?DEVICE;' '?BOGUS;'
sleep 4   # the linger runs out: power off
watch 10 -w
stop_serve

board() {  # board PTY CONFIGURED -> a board file on the simulator's pseudo-terminal
    cat >"$work/uart.json" <<JSON
{"name": "profile", "title": "a u-blox receiver on a pseudo-terminal", "chip": {"family": "ublox-gen8"},
 "link": {"type": "uart", "path": "$1", "baud": 115200, "detectSpeed": false},
 "power": {"strategies": [], "upTimeoutSeconds": 30},
 "configuration": {"enabled": $2, "periodSeconds": 1, "ackTimeoutSeconds": 2, "attempts": 3},
 "notes": [], "sources": []}
JSON
}

for configured in false true; do
    step=$([ $configured = false ] && echo 2 || echo 3)
    say "$step/3 a UART board on gnss-hat simulate's pseudo-terminal (configuration: $configured)"
    "$bin" simulate >"$work/pty" 2>"$work/simulate.log" &
    sim_pid=$!
    pids+=("$sim_pid")
    for _ in $(seq 100); do [ -s "$work/pty" ] && break; sleep 0.1; done
    [ -s "$work/pty" ] || die "gnss-hat simulate printed no pseudo-terminal"
    board "$(head -n 1 "$work/pty")" $configured
    start_serve "uart-$configured" --board "$work/uart.json" --early-position
    stream_window "uart-$configured"
    stop_serve
    kill "$sim_pid"
    wait "$sim_pid" 2>/dev/null || true
    : >"$work/pty"
done

say "listing the functions that ran"
out=scripts/static/gnss-hat.order
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$work/text-symbols"
cat "$work"/*.callgrind* | sed -n 's/^c\{0,1\}fn=([0-9]*) //p' | sort -u >"$work/ran"
# The partial functions of an async function (...TQ0_, ...TY1_) that ran bring their siblings.
sed -n 's/^\(.*\)T[QY][0-9]*_$/\1/p' "$work/ran" | sort -u >"$work/async-bases"
grep -E 'T[QY][0-9]+_$' "$work/text-symbols" | awk 'NR == FNR { base[$0] = 1; next }
    { b = $0; sub(/T[QY][0-9]+_$/, "", b); if (b in base) print }' "$work/async-bases" - >"$work/siblings"
sort -u "$work/ran" "$work/siblings" | comm -12 - "$work/text-symbols" >"$work/all"
cat "$work"/uart-*.callgrind.2 | sed -n 's/^c\{0,1\}fn=([0-9]*) //p' | sort -u |
    comm -12 - "$work/all" >"$work/streaming"
comm -23 "$work/all" "$work/streaming" | cat "$work/streaming" - >"$out"
say "$(wc -l <"$out") functions -> $out (of $(wc -l <"$work/text-symbols") in the binary;" \
    "the first $(wc -l <"$work/streaming") run while streaming)"
