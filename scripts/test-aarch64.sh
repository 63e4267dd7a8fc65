#!/usr/bin/env bash
# The unit tests on the Pi's CPU: every test target built for aarch64 by Debian's Swift 6.2 cross
# compiler (scripts/setup-aarch64.sh makes it), then run under qemu-user against the arm64 sysroot.
# The same tests as on x86_64 with Swift 6.3, the same expectations: the corpus tests compare the
# decoders with gpsd's own output, so a byte-order or alignment bug in a decoder fails here.
#
# Under emulation each test costs some twenty times more, so the seeded stress suites run a twentieth
# of their seeds (GNSSHAT_STRESS_SCALE, at least 100 each; SEED_COUNT for the Receiver's random
# schedules) and the differential decoding tests a hundredth of their messages (GNSSHAT_DIFFERENTIAL_COUNT);
# scripts/test.sh runs them whole on x86_64; the commands that run the simulator N times faster than
# real time run it a tenth as fast (GNSSHAT_SPEED_SCALE). Skipped here, with the reason (each runs on x86_64):
#   - SerialPortTests.exclusive: qemu-user does not emulate the TIOCGEXCL ioctl (ENOTTY);
#   - RealClientTests.oneHeapArena: the process's maps hold qemu's own malloc arenas too;
#   - ServerTests.slowClient: it pushes megabytes at a client that never reads, which under emulation
#     outlasts its time limit;
#   - the libgpiod v1 build: the sysroot's libgpiod is 2.x (the v1 build of the rig's scenarios runs
#     on the arm64 kernel, scripts/hil/run.sh --arch aarch64).
# usage: scripts/test-aarch64.sh [--skip-build] [EXTRA ARGUMENTS TO THE TEST BUNDLE]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/aarch64/env.sh
start=$SECONDS
step() { printf '\n=== test-aarch64: %s (%ds)\n' "$*" $((SECONDS - start)); }
build=yes
[ "${1:-}" = --skip-build ] && { build=no; shift; }

step "the aarch64 toolchain (scripts/setup-aarch64.sh)"
scripts/setup-aarch64.sh

scratch=.build/aarch64/debug
if [ $build = yes ]; then
    step "build for aarch64 (debug, with tests; Debian's Swift $(a64_root 'swift --version 2>/dev/null' |
        sed -n 's/.*Swift version \([0-9.]*\).*/\1/p'))"
    log=$scratch/build.log
    mkdir -p "$scratch"
    { a64_swift build --build-tests --scratch-path "$scratch" 2>&1; echo $? >"$scratch/build.status"; } |
        tee "$log" | grep -E 'warning:|error:|Compiling|Build' | grep -v '^\[' || true
    status=$(cat "$scratch/build.status")
    [ "$status" -eq 0 ] || { echo "test-aarch64: the build failed (exit $status; see $log)" >&2; exit 1; }
    if grep -q 'warning:' "$log"; then
        echo "test-aarch64: the aarch64 build has warnings (see $log)" >&2
        exit 1
    fi
fi

step "unit tests under qemu-user ($("$A64/qemu/qemu-aarch64" --version | head -1))"
bundle=$scratch/$A64_TRIPLE/debug/GNSSHatPackageTests.xctest
[ -x "$bundle" ] || { echo "test-aarch64: no test bundle at $bundle (run without --skip-build)" >&2; exit 1; }
file -L "$bundle" | grep -q 'ARM aarch64' || { echo "test-aarch64: $bundle is not an aarch64 program" >&2; exit 1; }
# The bundle and the programs it starts (the aarch64 gnss-hat, the executor probe) run through the
# registered qemu-aarch64; QEMU_LD_PREFIX gives them the sysroot's loader and libraries. One test
# target at a time: all at once, emulated, their tests outlast their time limits.
targets=(SignalsTests GNSSProtocolTests LinuxSystemTests PiHardwareTests GNSSHatSimulatorTests
    GNSSHatTestingTests GNSSHatTests GPSDTests NTRIPTests MQTTTests GNSSHatCommandTests)
failed=()
for target in "${targets[@]}"; do
    target_start=$SECONDS
    status=0
    env QEMU_LD_PREFIX="$A64_SYSROOT" LD_LIBRARY_PATH=/usr/lib/swift/linux GNSSHAT_EMULATED=qemu-user \
        GNSSHAT_STRESS_SCALE=0.05 SEED_COUNT=100 GNSSHAT_DIFFERENTIAL_COUNT=100 GNSSHAT_SPEED_SCALE=0.1 \
        GNSSHAT_VENV_PYTHON="$PWD/.build/venv/bin/python" \
        GNSSHAT_GPIOD_V2=1 GNSSHAT_GPIOD_V2_LIBDIR="$A64_SYSROOT/usr/lib/aarch64-linux-gnu" \
        "$bundle" --testing-library swift-testing --filter "^$target\\." \
        --skip 'PiHardwareTests\.SerialPortTests/exclusive' --skip 'GPSDTests\.RealClientTests/oneHeapArena' \
        --skip 'GPSDTests\.ServerTests/slowClient' "$@" >"$scratch/$target.log" 2>&1 || status=$?
    summary=$(grep -E '^(✔|✘) Test run with' "$scratch/$target.log" | tail -1)
    printf 'test-aarch64: %-22s %4d s  %s\n' "$target" $((SECONDS - target_start)) "${summary:-no summary (exit $status)}"
    if [ "$status" -ne 0 ]; then
        grep -E '^✘' "$scratch/$target.log" | grep 'recorded an issue' | head -20
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "test-aarch64: failed: ${failed[*]} (logs in $scratch/TARGET.log)" >&2
    exit 1
fi

step "all passed on aarch64 in $((SECONDS - start)) s"
