#!/usr/bin/env bash
# Runs every GNSSHat test: installs what is missing, builds once, runs the unit tests, then the
# GNSSProtocol differential tests and the fuzzers, the libgpiod v2 build, the concurrent parts under
# ThreadSanitizer, the static binary and the emulated hardware-in-loop rig in QEMU; then the same on
# the Pi's CPU (aarch64: Debian's Swift 6.2 cross toolchain, the static binary, every test target
# under qemu-user, the rig on Debian's arm64 kernel), and the Debian packages of both. Each step
# prints the time since the start; the summary at the end lists each step's own time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step_name=
step_start=$SECONDS
timings=()
# Closes the previous step (its own time goes to the summary) and announces the next.
step() {
    [ -n "$step_name" ] && timings+=("$(printf '%5d s  %s' $((SECONDS - step_start)) "$step_name")")
    step_name=$*
    step_start=$SECONDS
    printf '\n=== test: %s (%ds)\n' "$*" $((SECONDS - start))
}

step "setup"
scripts/setup.sh

step "function length: none over 80 lines outside the benchmarks"
scripts/function-length.py || { echo "test: split the functions above (scripts/function-length.py)" >&2; exit 1; }

step "build (debug, with tests)"
# Progress shows as it builds; the build's own exit status is kept apart from the pipeline's.
{ swift build --build-tests 2>&1; echo $? >.build/build.status; } | tee .build/build.log |
    grep -E 'warning:|error:|Compiling|Build' | grep -v '^\[' || true
build_status=$(cat .build/build.status)
if [ "$build_status" -ne 0 ]; then
    echo "test: the build failed (exit $build_status; see .build/build.log)" >&2
    exit 1
fi
if grep -q 'warning:' .build/build.log; then
    echo "test: the build has warnings (see .build/build.log)" >&2
    exit 1
fi

step "unit tests"
# GNSSProtocol's differential tests have their own step below; GPSD's (real gpsd on the same
# bytes, about 20 s) and MQTT's (each test starts its own Mosquitto broker; MQTTTests take 20 to
# 50 s, most of it ServeBridgeTests, which run gnss-hat serve as a process) run here, and NTRIP's (about
# 5 s: str2str, pygnssutils' gnssserver, the tests' own caster, socat for TLS, each started by its test).
swift test --skip-build --skip 'GNSSProtocolTests.DifferentialTests'

step "GNSSProtocol differential tests against pyubx2 and pynmeagps (10,000 messages per type, both ways)"
test -x .build/venv/bin/python || { echo "test: .build/venv is missing (scripts/setup.sh makes it)" >&2; exit 1; }
swift test --skip-build --filter 'GNSSProtocolTests.DifferentialTests'

step "fuzzing GNSSProtocol (60 s, libFuzzer + AddressSanitizer)"
scripts/fuzz.sh 60

step "libgpiod v2 API: build and PiHardware tests against libgpiod 2.1 from the private prefix"
# The rpath in Package.swift makes the loader take libgpiod.so.3 from .build/libgpiod-v2; the
# test "the library that runs has the API this module was compiled for" checks it did.
v2=(env PKG_CONFIG_PATH="$PWD/.build/libgpiod-v2/prefix/lib/pkgconfig" GNSSHAT_GPIOD_V2=1)
if ! "${v2[@]}" swift build --build-tests --scratch-path .build/gpiod-v2 > .build/build-v2.log 2>&1; then
    grep -E 'error:' .build/build-v2.log || tail -20 .build/build-v2.log
    echo "test: the libgpiod v2 build failed (see .build/build-v2.log)" >&2
    exit 1
fi
if grep -q 'warning:' .build/build-v2.log; then
    grep 'warning:' .build/build-v2.log >&2
    echo "test: the libgpiod v2 build has warnings (see .build/build-v2.log)" >&2
    exit 1
fi
"${v2[@]}" swift test --skip-build --scratch-path .build/gpiod-v2 --filter PiHardwareTests

step "the signal, the Receiver, the service, the MQTT and NTRIP clients under ThreadSanitizer"
# TSan reports make the test process exit non-zero even when every test passed.
tsan_suites='SignalsTests|GNSSHatTests|GPSDTests|MQTTTests|NTRIPTests|LinuxSystemTests.ThreadExecutorTests'
tsan_suites+='|LinuxSystemTests.InputWaitTests|LinuxSystemTests.ReadinessWaiterTests|PiHardwareTests.EdgeWaitTests'
swift test --sanitize=thread --scratch-path .build/tsan --filter "$tsan_suites"

# smoke_static ARCH BINARY: the static binary decodes a capture byte for byte as the debug build
# does, and `watch` on the simulator shows a power-on and 3D fixes.
smoke_static() {
    local arch=$1 static=$2 out=.build/static/smoke-$1
    mkdir -p "$out"
    local capture=Tests/Fixtures/corpus/gpsd/ublox-8.log
    cmp <("$static" decode "$capture") <(.build/debug/gnss-hat decode "$capture") ||
        { echo "test: the $arch static binary decodes $capture differently from the debug build" >&2; exit 1; }
    # 40 s of simulated time at 20x (2 s): past the simulated cold start (26 s) to 3D fixes.
    timeout 60 "$static" watch --json --speed 20 --duration 40 >"$out/watch.jsonl" ||
        { echo "test: the $arch static watch on the simulator failed" >&2; exit 1; }
    grep -q '"class":"POWER","state":"on"' "$out/watch.jsonl" &&
        grep -Eq '"class":"TPV".*"mode":3' "$out/watch.jsonl" ||
        { echo "test: the $arch static watch showed no power-on or no 3D fix ($out/watch.jsonl)" >&2; exit 1; }
    echo "test: the $arch static binary decodes as the debug build and shows 3D fixes on the simulator"
}

# hil_self_test [ARGS]: the rig must fail a check that must fail and the Receiver's DDC scenario with a
# driver that never sets the enable line (both libgpiod builds), and say so.
hil_self_test() {
    local hil_status=0 log=.build/hil-selftest$*.log
    log=${log// /}
    scripts/hil/run.sh "$@" --self-test-failure --only selftest.broken-driver --only 'v*.receiver.ddc-power-cycle' \
        >"$log" 2>&1 || hil_status=$?
    for expected in 'selftest.broken-driver FAIL' 'v1.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high' \
        'v2.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high'; do
        if [ "$hil_status" -ne 1 ] || ! grep -q "^  HIL-CHECK $expected" "$log"; then
            cat "$log"
            echo "test: the rig ($*) did not report the deliberate failure '$expected' (exit $hil_status)" >&2
            exit 1
        fi
    done
}

step "static binary (x86_64): build, then smoke-test it"
# The same flags as the rig's libgpiod v1 build: one scratch path, so the modules the two
# products share are compiled once.
GNSSHAT_STATIC_SCRATCH=.build/hil/swift-v1 scripts/build-static.sh | tee .build/static-x86_64.log
static=.build/static/gnss-hat-$(uname -m)
smoke_static "$(uname -m)" "$static"
hil_pi_status=0
scripts/hil-pi.sh --board uputronics-gps-rtc --binary "$static" 2>.build/hil/hil-pi.err || hil_pi_status=$?
[ "$hil_pi_status" -eq 3 ] && grep -q '^hil-pi: refused: ' .build/hil/hil-pi.err ||
    { cat .build/hil/hil-pi.err; echo "test: hil-pi.sh did not refuse off a Pi (exit $hil_pi_status)" >&2; exit 1; }

step "emulated hardware-in-loop (QEMU; scripts/hil/README.md)"
scripts/hil/run.sh

step "hardware-in-loop rig self-test: a failing check and a broken driver must fail the run"
hil_self_test

step "aarch64: Debian's Swift 6.2 cross toolchain (scripts/setup-aarch64.sh)"
scripts/setup-aarch64.sh

step "aarch64: static binary, then the same smoke test (run through qemu-aarch64)"
scripts/build-static.sh aarch64 | tee .build/static-aarch64.log
smoke_static aarch64 .build/static/gnss-hat-aarch64

step "aarch64: every test target built by Swift 6.2 and run under qemu-user (scripts/test-aarch64.sh)"
scripts/test-aarch64.sh

step "summary"
for arch in x86_64 aarch64; do
    echo "test: size $arch: $(grep -o 'stripped .* MiB)' ".build/static-$arch.log" | tail -1)"
done
printf '%s\n' "${timings[@]}"
echo "test: all passed in $((SECONDS - start)) s"
