#!/usr/bin/env bash
# Runs every GNSSHat test: installs what is missing, builds once, runs the unit tests, then the
# GNSSProtocol differential tests and the fuzzers, the libgpiod v2 build, the concurrent parts under
# ThreadSanitizer, the static binary, the emulated hardware-in-loop rig in QEMU, the amd64 Debian
# package, an hour of churn, the network faults and the journal's crash test. Beside those, from the
# end of the debug build on, the same on the Pi's CPU runs as a second lane
# (scripts/test-aarch64-lane.sh: Debian's Swift 6.2 cross toolchain, the static binary, every test
# target under qemu-user, the rig on Debian's arm64 kernel, the arm64 package), its output in
# .build/test-aarch64-lane.log and its step lines here. Each step
# prints the time since the start; the summary at the end lists each step's own time, both lanes'.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_BANNER=test
source scripts/lib/steps.sh

step "setup"
scripts/setup.sh

# A run from a clean clone writes about 7.5 GB under .build (the aarch64 lane's sid root and runtime
# are most of it); short of that, it says so before it starts rather than at a failing write.
if [ "$(df -Pk . | awk 'NR == 2 { print $4 }')" -lt $((10 * 1024 * 1024)) ]; then
    echo "test: warning: $(free_disk) free here; a run from a clean clone needs about 7.5 GB under .build" >&2
fi

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

# The aarch64 lane from here on, beside the x86_64 steps: its step lines show here, the rest goes to
# its log; a failure of the x86_64 steps stops it.
mkdir -p .build
lane_started=$((SECONDS - start))
setsid scripts/test-aarch64-lane.sh >.build/test-aarch64-lane.log 2>&1 &
lane_pid=$!
trap '[ -n "${lane_pid:-}" ] && kill -TERM -- "-$lane_pid" 2>/dev/null' EXIT
tail -n +1 --pid="$lane_pid" -f .build/test-aarch64-lane.log 2>/dev/null | grep --line-buffered -E '^=== aarch64 lane|^aarch64 lane' &

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

step "static binary (x86_64): build, then smoke-test it"
# The same flags as the rig's libgpiod v1 build: one scratch path, so the modules the two
# products share are compiled once.
GNSSHAT_STATIC_SCRATCH=.build/hil/swift-v1 scripts/build-static.sh | tee .build/static-x86_64.log
static=.build/static/gnss-hat-$(uname -m)
scripts/smoke-static.sh "$(uname -m)" "$static"
hil_pi_status=0
scripts/hil-pi.sh --board uputronics-gps-rtc --binary "$static" 2>.build/hil/hil-pi.err || hil_pi_status=$?
[ "$hil_pi_status" -eq 3 ] && grep -q '^hil-pi: refused: ' .build/hil/hil-pi.err ||
    { cat .build/hil/hil-pi.err; echo "test: hil-pi.sh did not refuse off a Pi (exit $hil_pi_status)" >&2; exit 1; }

step "emulated hardware-in-loop (QEMU; scripts/hil/README.md)"
scripts/hil/run.sh

step "hardware-in-loop rig self-test: a failing check and a broken driver must fail the run"
scripts/hil/self-test.sh --arch x86_64

step "the amd64 Debian package: built, lintian, its bash completion, installed and removed in a bookworm root"
scripts/package-test.sh --arch amd64

step "a simulated hour of churn (scripts/soak.sh 1): memory, descriptors and threads flat, the receiver off at the end"
scripts/soak.sh 1

step "network faults against the real broker (scripts/netfault.sh): loss, a slow link, a partition, restarts"
scripts/netfault.sh

step "crash safety of the MQTT journal (scripts/journal-crash.sh): 100 seeded SIGKILLs and torn records while the broker is away"
scripts/journal-crash.sh 100

step "the aarch64 lane (scripts/test-aarch64-lane.sh, started at ${lane_started} s): waiting for it to end"
lane_status=0
wait "$lane_pid" || lane_status=$?
lane_pid=
if [ "$lane_status" -ne 0 ]; then
    tail -60 .build/test-aarch64-lane.log
    echo "test: the aarch64 lane failed (exit $lane_status; whole log: .build/test-aarch64-lane.log)" >&2
    exit 1
fi

step "summary"
for arch in x86_64 aarch64; do
    echo "test: $(grep -o 'size .*to spare)' ".build/static-$arch.log" | tail -1)"
done
printf '%s\n' "${timings[@]}"
grep -E '^ *[0-9]+ s  aarch64: ' .build/test-aarch64-lane.log
echo "test: all passed in $((SECONDS - start)) s"
