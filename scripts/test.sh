#!/usr/bin/env bash
# Runs every GNSSHat test: installs what is missing, builds once, runs the unit tests, then the
# GNSSProtocol differential tests and a 60 s fuzzing run, the libgpiod v2 build, the Signals,
# GNSSHat and GPSD tests again under ThreadSanitizer, then the emulated hardware-in-loop rig in QEMU.
# The static binary is built and smoke-tested before the QEMU rig.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n=== test: %s (%ds)\n' "$*" $((SECONDS - start)); }

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

step "fuzzing every input surface (30 s per target, libFuzzer + AddressSanitizer; a crash fails, exec/s is printed)"
scripts/fuzz.sh --all 30

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

step "static binary: build, then smoke-test it (decode against the debug build, watch on the simulator)"
smoke_start=$SECONDS
# The same flags as the rig's libgpiod v1 build: one scratch path, so the modules the two
# products share are compiled once.
GNSSHAT_STATIC_SCRATCH=.build/hil/swift-v1 scripts/build-static.sh
static=.build/hil/swift-v1/gnss-hat-$(uname -m)
capture=Tests/Fixtures/corpus/gpsd/ublox-8.log
cmp <("$static" decode "$capture") <(.build/debug/gnss-hat decode "$capture") ||
    { echo "test: the static binary decodes $capture differently from the debug build" >&2; exit 1; }
# 40 s of simulated time at 20x (2 s): past the simulated cold start (26 s) to 3D fixes.
timeout 20 "$static" watch --json --speed 20 --duration 40 >.build/hil/watch.jsonl ||
    { echo "test: the static watch on the simulator failed" >&2; exit 1; }
grep -q '"class":"POWER","state":"on"' .build/hil/watch.jsonl &&
    grep -Eq '"class":"TPV".*"mode":3' .build/hil/watch.jsonl ||
    { echo "test: the static watch showed no power-on or no 3D fix (.build/hil/watch.jsonl)" >&2; exit 1; }
hil_pi_status=0
scripts/hil-pi.sh --board uputronics-gps-rtc --binary "$static" 2>.build/hil/hil-pi.err || hil_pi_status=$?
[ "$hil_pi_status" -eq 3 ] && grep -q '^hil-pi: refused: ' .build/hil/hil-pi.err ||
    { cat .build/hil/hil-pi.err; echo "test: hil-pi.sh did not refuse off a Pi (exit $hil_pi_status)" >&2; exit 1; }
echo "test: static binary step took $((SECONDS - smoke_start)) s"

step "emulated hardware-in-loop (QEMU; scripts/hil/README.md)"
scripts/hil/run.sh

step "hardware-in-loop rig self-test: a failing check and a broken driver must fail the run"
# One more boot of the same initramfs: the shell check that must fail, and the Receiver's DDC
# scenario with a driver that never sets the enable line (both libgpiod builds).
hil_status=0
scripts/hil/run.sh --self-test-failure --only selftest.broken-driver --only 'v*.receiver.ddc-power-cycle' \
    >.build/hil-selftest.log 2>&1 || hil_status=$?
for expected in 'selftest.broken-driver FAIL' 'v1.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high' \
    'v2.receiver.ddc-power-cycle FAIL: .*GNSS_PWR_EN high'; do
    if [ "$hil_status" -ne 1 ] || ! grep -q "^  HIL-CHECK $expected" .build/hil-selftest.log; then
        cat .build/hil-selftest.log
        echo "test: the rig did not report the deliberate failure '$expected' (exit $hil_status)" >&2
        exit 1
    fi
done

step "all passed in $((SECONDS - start)) s"
