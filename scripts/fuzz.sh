#!/usr/bin/env bash
# Fuzzes the package's input surfaces with libFuzzer and AddressSanitizer, one target per surface:
#   receiver  GNSSProtocolFuzz   the receiver's bytes (framer, NMEA/UBX/RTCM3 decoders, GNSSDecoder)
#   gpsd      GPSDRequestsFuzz   a gpsd client's requests (GPSDProtocol: RequestScanner, GPSDRequest, WatchPolicy, ClientSession)
#   mqtt      MQTTDemandFuzz     the MQTT bridge's inbound topics and demand payloads (PresenceMachine)
#   journal   MQTTJournalFuzz    the MQTT journal's file (Journal's recovery)
#   board     BoardFileFuzz      board files (Board(json:file:) and Board.json)
#   ntrip     NTRIPResponseFuzz  casters' answers (NTRIPResponseParser) and sourcetables
# Each target checks properties beyond "no crash" (see its Sources/*Fuzz/FuzzTarget.swift).
#   scripts/fuzz.sh [SECONDS]              # the receiver target, SECONDS (default 60)
#   scripts/fuzz.sh NAME SECONDS           # one target (also --target NAME SECONDS)
#   scripts/fuzz.sh --all SECONDS          # every target, SECONDS each, one after another (scripts/test.sh: 30)
#   scripts/fuzz.sh --all SECONDS --parallel N   # the same, N targets at a time (each still SECONDS; one per core)
#   scripts/fuzz.sh --minimise NAME        # the seeds and .build/fuzz-corpus/NAME, minimised, as the new seeds
# Extra arguments after SECONDS go to libFuzzer (e.g. -jobs=2 -workers=2).
#
# Each target's corpus grows in .build/fuzz-corpus/NAME, so each run goes on where the last stopped; it
# starts from the committed, minimised seeds in Tests/Fixtures/fuzz-seeds/NAME and replays the inputs
# that once failed, Tests/Fixtures/fuzz-regressions/NAME. A failing input is written to
# .build/fuzz-artifacts/NAME and printed in base64 (CI keeps only the log). Each run prints
# `bench fuzz.NAME: ours=X exec/s target=>=10000` from libFuzzer's final stats (a benchmark on a shared
# machine: printed, not asserted) and a summary line; only a crash (a violated property) fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# name product max_len module(an object of which must call into ASan)
targets=(
    "receiver GNSSProtocolFuzz 512 GNSSProtocol"
    "gpsd GPSDRequestsFuzz 256 GPSDProtocol"
    "mqtt MQTTDemandFuzz 512 MQTT"
    "journal MQTTJournalFuzz 1024 MQTT"
    "board BoardFileFuzz 2048 GNSSHat"
    "ntrip NTRIPResponseFuzz 1024 NTRIP"
)

mode=one
parallel=1
selected=receiver
seconds=60
case "${1:-}" in
--all) mode=all; seconds=${2:?"--all SECONDS"}; shift 2
    if [ "${1:-}" = --parallel ]; then parallel=${2:?"--parallel N"}; shift 2; fi ;;
--target) selected=${2:?"--target NAME SECONDS"}; seconds=${3:?"--target NAME SECONDS"}; shift 3 ;;
--minimise) mode=minimise; selected=${2:?"--minimise NAME"}; shift 2 ;;
"") ;;
[0-9]*) seconds=$1; shift ;;
*) selected=$1; seconds=${2:?"NAME SECONDS"}; shift 2 ;;
esac
extra=("$@")

entry() {
    local line
    for line in "${targets[@]}"; do
        set -- $line
        if [ "$1" = "$2" ] || [ "$1" = "$selected" ]; then echo "$line"; return 0; fi
    done
    echo "fuzz: no target $selected (known: $(for l in "${targets[@]}"; do printf '%s ' "${l%% *}"; done))" >&2
    return 1
}

export GNSSHAT_FUZZ=1
# swiftc keeps only the last -sanitize= it is given, and SwiftPM's `--sanitize=fuzzer
# --sanitize=address` reaches it in a random order (a Set): one build got coverage without
# AddressSanitizer, another AddressSanitizer without coverage. So SwiftPM is told only of the
# fuzzer (it then builds the target without a main of its own, for libFuzzer's), and both
# sanitizers go last, in one flag. Every target builds in the one scratch path, so the modules
# they share are compiled once.
build=(swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --scratch-path .build/fuzz)
# gold, swiftc's default linker here, warns at every fuzz link that it cannot export AddressSanitizer's
# local symbol __asan_extra_spill_area; lld, when the toolchain ships it, links the same without a word.
if [ -x "$(dirname "$(readlink -f "$(command -v swiftc)")")/ld.lld" ]; then build+=(-Xswiftc -use-ld=lld); fi
binpath=$("${build[@]}" --show-bin-path)

# Without coverage counters libFuzzer runs blind, and without AddressSanitizer it misses what it
# is for: check the binary has the counters and the module's objects call into ASan.
instrumented() {
    local binary=$1 module=$2 object
    readelf -S "$binary" | grep __sancov_cntrs >/dev/null ||
        { echo "fuzz: $binary has no coverage counters" >&2; return 1; }
    object=$(find .build/fuzz -path "*/release/$module.build/*.swift.o" | head -n 1)
    [ -n "$object" ] && nm "$object" | grep __asan_report >/dev/null ||
        { echo "fuzz: the $module objects are not AddressSanitizer-instrumented" >&2; return 1; }
}

buildTarget() {
    local product=$1 module=$2
    "${build[@]}" --product "$product" 2>&1 | grep -E 'error|warning:' || true
    test -x "$binpath/$product" || { echo "fuzz: $product: build failed (see above)" >&2; return 1; }
    if ! instrumented "$binpath/$product" "$module"; then
        echo "fuzz: rebuilding from scratch" >&2
        rm -rf .build/fuzz/release .build/fuzz/x86_64-unknown-linux-gnu/release
        "${build[@]}" --product "$product" 2>&1 | grep -E 'error|warning:' || true
        instrumented "$binpath/$product" "$module" || { echo "fuzz: still not instrumented (see above)" >&2; return 1; }
    fi
}

# The Swift runtime's own crash reporter fights AddressSanitizer; libFuzzer reports crashes itself.
export SWIFT_BACKTRACE=enable=no
# AddressSanitizer records the stack of every allocation, for the report of a bad access to it: a
# quarter of the time of targets that allocate as Swift does. A report still gives the access's stack;
# replaying the input with ASAN_OPTIONS= gives the allocation's.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}
root=$PWD

# Runs one target for $seconds; prints its bench line and summary; returns libFuzzer's status.
run() {
    local name=$1 product=$2 maxlen=$3
    shift 4
    local corpus=$root/.build/fuzz-corpus/$name seeds=$root/Tests/Fixtures/fuzz-seeds/$name
    local regressions=$root/Tests/Fixtures/fuzz-regressions/$name artifacts=$root/.build/fuzz-artifacts/$name
    mkdir -p "$corpus" "$seeds" "$regressions" "$artifacts"
    rm -f "$artifacts"/fuzz-*.log
    local before log=$artifacts/run.log status=0
    before=$(ls "$artifacts")
    echo "fuzz.$name: $seconds s, -max_len=$maxlen, corpus $(ls "$corpus" | wc -l), seeds $(ls "$seeds" | wc -l)," \
        "regressions $(ls "$regressions" | wc -l); load $(cut -d' ' -f1-3 /proc/loadavg)"
    # libFuzzer writes its per-job logs (fuzz-N.log, with -jobs) to the working directory: keep them
    # in .build/fuzz-artifacts, not in the checkout.
    # The CPU time it took (user + system) beside the wall-clock rate: on a shared machine the load
    # takes the wall-clock rate down, executions per CPU-second much less.
    local TIMEFORMAT='%R %U %S'
    { time { (cd "$artifacts" && "$binpath/$product" -max_total_time="$seconds" -max_len="$maxlen" \
        -print_final_stats=1 -timeout=10 -artifact_prefix="$artifacts/" "$@" "$corpus" "$seeds" "$regressions") \
        >"$log" 2>&1 || status=$?; }; } 2>"$artifacts/cpu"
    local executions rate cpu wall
    executions=$(grep -a 'stat::number_of_executed_units' "$log" | tail -n 1 | awk '{print $2}')
    rate=$(grep -a 'stat::average_exec_per_sec' "$log" | tail -n 1 | awk '{print $2}')
    # The run's own wall time: a target that stops at a failure stops before its SECONDS.
    wall=$(awk '{printf "%d", $1}' "$artifacts/cpu")
    cpu=$(awk '{printf "%.1f", $2 + $3}' "$artifacts/cpu")
    echo "bench fuzz.$name: ours=${rate:-0} exec/s target=>=10000"
    echo "fuzz.$name: ${executions:-0} executions in $wall s, $cpu s of CPU" \
        "($(awk -v e="${executions:-0}" -v c="$cpu" 'BEGIN { printf "%d", (c > 0 ? e / c : 0) }') per CPU-second)," \
        "load $(cut -d' ' -f1-3 /proc/loadavg), exit $status"
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log" >&2
        # A CI machine's .build is gone after the run: print each new failing input so the log alone
        # reproduces it (base64 -d > input; then the fuzzer binary with the input's path as argument).
        local file
        for file in $(ls "$artifacts"); do
            case " $(echo $before) " in *" $file "*) continue ;; esac
            case "$file" in crash-* | leak-* | timeout-* | oom-* | slow-unit-*)
                echo "fuzz.$name: failing input $file ($(wc -c < "$artifacts/$file") bytes), base64:" >&2
                base64 -w 0 "$artifacts/$file" >&2
                echo >&2 ;;
            esac
        done
        for file in "$artifacts"/fuzz-*.log; do
            [ -f "$file" ] && grep -q -E 'ERROR|deadly|Timeout' "$file" &&
                { echo "fuzz: $file:" >&2; tail -n 40 "$file" >&2; }
        done
        echo "fuzz.$name: failed (exit $status)" >&2
    fi
    return "$status"
}

if [ "$mode" = all ]; then chosen=("${targets[@]}"); else chosen=("$(entry)"); fi
for line in "${chosen[@]}"; do
    set -- $line
    buildTarget "$2" "$4"
done

if [ "$mode" = minimise ]; then
    set -- ${chosen[0]}
    seeds=Tests/Fixtures/fuzz-seeds/$1
    mkdir -p "$seeds" ".build/fuzz-corpus/$1"
    merged=$(mktemp -d)
    # The fewest inputs that reach every edge the corpus reaches (not every hit count): a small seed set.
    (cd "$merged" && "$binpath/$2" -set_cover_merge=1 -use_counters=0 -max_len="$3" "$merged" "$root/$seeds" \
        "$root/.build/fuzz-corpus/$1") >/dev/null 2>&1
    rm -f "$seeds"/*
    cp "$merged"/* "$seeds"/ 2>/dev/null || true
    rm -rf "$merged"
    echo "fuzz.$1: $(ls "$seeds" | wc -l) seeds in $seeds"
    exit 0
fi

failed=()
summary=()
total=0
began=$SECONDS
# One target's run, its output kept until it ends when targets run side by side.
finish() {
    local name=$1 status=$2 out=$3
    [ -n "$out" ] && { cat "$out"; rm -f "$out"; }
    local count
    count=$(grep -a 'stat::number_of_executed_units' "$root/.build/fuzz-artifacts/$name/run.log" 2>/dev/null |
        tail -n 1 | awk '{print $2}')
    total=$((total + ${count:-0}))
    [ "$status" -eq 0 ] || failed+=("$name")
    summary+=("$name=$([ "$status" -eq 0 ] && echo ok || echo FAILED)")
}
declare -A running=()
for line in "${chosen[@]}"; do
    set -- $line
    name=$1
    if [ "$parallel" -le 1 ]; then
        status=0
        run $line "${extra[@]}" || status=$?
        finish "$name" "$status" ""
        continue
    fi
    while [ "${#running[@]}" -ge "$parallel" ]; do
        status=0
        wait -n -p done "${!running[@]}" || status=$?
        finish "${running[$done]%% *}" "$status" "${running[$done]#* }"
        unset "running[$done]"
    done
    out=$(mktemp)
    echo "fuzz.$name: started ($(date -u +%H:%M:%S) UTC)"
    run $line "${extra[@]}" >"$out" 2>&1 &
    running[$!]="$name $out"
done
while [ "${#running[@]}" -gt 0 ]; do
    status=0
    wait -n -p done "${!running[@]}" || status=$?
    finish "${running[$done]%% *}" "$status" "${running[$done]#* }"
    unset "running[$done]"
done
echo "fuzz: ${summary[*]}"
echo "fuzz: ${total} executions in all, $((SECONDS - began)) s of wall time, ${parallel} target(s) at a time"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
