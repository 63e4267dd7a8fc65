#!/usr/bin/env bash
# Fuzzes GNSSProtocol (framer, NMEA/UBX/RTCM3 decoders, the GNSSDecoder pipeline) with libFuzzer and
# AddressSanitizer for SECONDS (default 60). The corpus it grows is kept in .build/fuzz-corpus, and
# seeds cut from the shared captures in .build/fuzz-seeds, so each run goes on where the last stopped;
# inputs that once failed are kept in Tests/Fixtures/fuzz-regressions and replayed every run. A failing
# input is written to .build/fuzz-artifacts and printed in base64 (CI keeps only the log).
#   scripts/fuzz.sh            # 60 s (what scripts/test.sh runs)
#   scripts/fuzz.sh 3600       # an hour
# Extra arguments after SECONDS go to libFuzzer (e.g. -jobs=2 -workers=2).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true

export GNSSHAT_FUZZ=1
# swiftc keeps only the last -sanitize= it is given, and SwiftPM's `--sanitize=fuzzer
# --sanitize=address` reaches it in a random order (a Set): one build got coverage without
# AddressSanitizer, another AddressSanitizer without coverage. So SwiftPM is told only of the
# fuzzer (it then builds the target without a main of its own, for libFuzzer's), and both
# sanitizers go last, in one flag.
build=(swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --scratch-path .build/fuzz
    --product GNSSProtocolFuzz)
"${build[@]}" 2>&1 | grep -E 'error|warning:' || true
binary=$("${build[@]}" --show-bin-path)/GNSSProtocolFuzz
test -x "$binary" || { echo "fuzz: build failed (see above)" >&2; exit 1; }
# Without coverage counters libFuzzer runs blind, and without AddressSanitizer it misses what it
# is for: check the binary has the counters and the decoders' objects call into ASan.
instrumented() {
    readelf -S "$binary" | grep __sancov_cntrs >/dev/null || { echo "fuzz: no coverage counters" >&2; return 1; }
    local object
    object=$(find .build/fuzz -path '*/release/GNSSProtocol.build/Framer.swift.o' | head -n 1)
    [ -n "$object" ] && nm "$object" | grep __asan_report >/dev/null ||
        { echo "fuzz: the GNSSProtocol objects are not AddressSanitizer-instrumented" >&2; return 1; }
}
if ! instrumented; then
    echo "fuzz: rebuilding from scratch" >&2
    rm -rf .build/fuzz/release .build/fuzz/x86_64-unknown-linux-gnu/release
    "${build[@]}" 2>&1 | grep -E 'error|warning:' || true
    instrumented || { echo "fuzz: still not instrumented (see above)" >&2; exit 1; }
fi

corpus=.build/fuzz-corpus
seeds=.build/fuzz-seeds
mkdir -p "$corpus" "$seeds"
if [ -z "$(ls -A "$seeds")" ]; then
    # Seeds: 2 KB slices of every shared capture (comment headers dropped), when the corpus is there.
    shared=""
    for candidate in Tests/Fixtures/corpus/gpsd; do
        if [ -d "$candidate" ]; then shared=$candidate; break; fi
    done
    if [ -n "$shared" ]; then
        for log in "$shared"/*.log; do
            name=$(basename "$log" .log)
            grep -av '^#' "$log" | head -c 16384 | split -b 2048 - "$seeds/$name." || true
        done
    fi
    printf '$PMTK161,0*28\r\n' > "$seeds/pmtk"
    printf '\xb5\x62\x0a\x04\x00\x00\x0e\x34' > "$seeds/ubx-poll"
fi
echo "fuzz: $seconds s, corpus $corpus ($(ls "$corpus" | wc -l) inputs), seeds $seeds ($(ls "$seeds" | wc -l))"
# Inputs that once crashed (Tests/Fixtures/fuzz-regressions) are read with the seeds every run.
regressions=Tests/Fixtures/fuzz-regressions
artifacts=$PWD/.build/fuzz-artifacts
mkdir -p "$artifacts"
rm -f "$artifacts"/fuzz-*.log
before=$(ls "$artifacts")
# The Swift runtime's own crash reporter fights AddressSanitizer; libFuzzer reports crashes itself.
export SWIFT_BACKTRACE=enable=no
# libFuzzer writes its per-job logs (fuzz-N.log, with -jobs) to the working directory: keep them
# in .build/fuzz-artifacts, not in the checkout.
root=$PWD
status=0
(cd "$artifacts" && "$binary" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 -timeout=10 \
    -artifact_prefix="$artifacts/" "$@" "$root/$corpus" "$root/$seeds" "$root/$regressions") || status=$?
if [ "$status" -ne 0 ]; then
    # A CI machine's .build is gone after the run: print each new failing input so the log alone
    # reproduces it (base64 -d > input; then the fuzzer binary with the input's path as argument).
    for name in $(ls "$artifacts"); do
        case " $(echo $before) " in *" $name "*) continue ;; esac
        case "$name" in crash-* | leak-* | timeout-* | oom-* | slow-unit-*)
            echo "fuzz: failing input $name ($(wc -c < "$artifacts/$name") bytes), base64:" >&2
            base64 -w 0 "$artifacts/$name" >&2
            echo >&2 ;;
        esac
    done
    for log in "$artifacts"/fuzz-*.log; do
        [ -f "$log" ] && grep -q -E 'ERROR|deadly|Timeout' "$log" && { echo "fuzz: $log:" >&2; tail -n 40 "$log" >&2; }
    done
    echo "fuzz: failed (exit $status)" >&2
fi
exit "$status"
