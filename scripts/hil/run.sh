#!/usr/bin/env bash
# Emulated hardware-in-loop: boots Debian's own kernel in QEMU with a simulated GNSS hat
# (scripts/hil/modules: GPIO lines behind the GPIO character device, a u-blox receiver on
# an I2C adapter behind i2c-dev), runs the kernel-level checks and the static Swift
# scenarios (Sources/gnss-hat-hil, built once per libgpiod API) inside it, and reports.
#
# usage: scripts/hil/run.sh [options]
#   --arch x86_64|aarch64 the machine (default x86_64): aarch64 boots Debian's arm64 kernel on
#                         QEMU's virt board (TCG) with the aarch64 builds (scripts/setup-aarch64.sh)
#   --only PATTERN        run only the checks whose names match the shell glob PATTERN
#                         (repeatable; e.g. 'i2c.*', 'v2.gpio.drive-output', 'gpio.edges')
#   --no-swift            do not build or run the Swift scenario executables
#   --console             show the guest console even when everything passed
#   --shell               console on this terminal and a shell in the guest after the checks
#   -v, --verbose         stream the guest console live, with kernel messages and traced checks
#   --self-test-failure   add a check that must fail and break the Receiver scenarios' driver
#                         (the enable line is never set), to prove a failure fails the run
#   --timeout SECONDS     limit for the VM (default 240)
#   --accel auto|tcg|kvm  QEMU accelerator (default auto: KVM only if a probe boot works; aarch64: tcg)
#
# Exit status: 0 all checks passed; 1 a check failed; 2 the rig failed (build, boot, panic,
# time-out, or no verdict). The console and verdicts of the last run are in .build/hil/last/
# (.build/hil/aarch64/last/ for aarch64).
# Everything downloaded or built is cached under .build/hil/, keyed by its inputs (see
# scripts/hil/README.md); a warm run only boots the VM.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
HIL=$root/.build/hil
SRC=$root/scripts/hil
start=$EPOCHREALTIME

only=()
swift=auto
show_console=
shell=
verbose=
selftest=
timeout_s=240
accel=auto
arch=x86_64

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case $1 in
        --only) only+=("${2:?--only needs a pattern}"); shift ;;
        --only=*) only+=("${1#--only=}") ;;
        --scenario) only+=("${2:?--scenario needs a name}"); shift ;;
        --no-swift) swift=no ;;
        --console) show_console=1 ;;
        --shell) shell=1 ;;
        -v|--verbose) verbose=1 ;;
        --self-test-failure) selftest=fail ;;
        --timeout) timeout_s=${2:?}; shift ;;
        --accel) accel=${2:?}; shift ;;
        --arch) arch=${2:?--arch needs x86_64 or aarch64}; shift ;;
        --arch=*) arch=${1#--arch=} ;;
        -h|--help) usage 0 ;;
        *) echo "hil: unknown option $1" >&2; usage 2 ;;
    esac
    shift
done
case $arch in
    x86_64|amd64) arch=x86_64 ;;
    aarch64|arm64) arch=aarch64 ;;
    *) echo "hil: unknown architecture $arch (x86_64 or aarch64)" >&2; usage 2 ;;
esac

since() { awk -v now="$EPOCHREALTIME" -v then="$1" 'BEGIN { printf "%.1f", now - then }'; }
elapsed() { since "$start"; }
say() { printf 'hil [%6ss]: %s\n' "$(elapsed)" "$*"; }
die() { printf 'hil: %s\n' "$*" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
APT_QUIET=(-q -o APT::Sandbox::User=root)

mkdir -p "$HIL"
# One run per machine at a time; the two machines' caches are apart, so x86_64 and aarch64 may run
# side by side (scripts/test.sh does).
exec 9>"$HIL/lock-$arch"
flock 9 || die "cannot lock $HIL/lock-$arch"

# --- 1. Debian's kernel: vmlinuz and the modules we need, keyed on the kernel version -----
# The version linux-headers-amd64 (installed by scripts/setup.sh) points at is the one
# linux-image-amd64 depends on; asking dpkg is fast, apt-cache (0.9 s) is the fallback.
# (The aarch64 rig boots its arm64 twin.)
archive_kv() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1
}
KV=${HIL_KERNEL:-$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null |
    sed -n 's/^linux-headers-\([0-9][^ ,]*-amd64\).*/\1/p')}
if [ -z "$KV" ] || { [ ! -f "$HIL/kernel/$KV/complete" ] && [ -z "${HIL_KERNEL:-}" ]; }; then
    KV=$(archive_kv)
fi
[ -n "$KV" ] || die "cannot find Debian's kernel version (apt-cache depends linux-image-amd64)"
# The machine: its kernel, toolchain, tools and QEMU (scripts/hil/arch-x86_64.sh, arch-aarch64.sh).
. "$SRC/arch-$arch.sh"
hil_kernel

# --- 2. Our simulation modules, built against the matching headers ------------------------
mod_key=$( (echo "$KV $hdr_version"; cat "$SRC"/modules/Kbuild "$SRC"/modules/Makefile "$SRC"/modules/*.c) |
    sha256sum | cut -c1-16)
MDIR=$MODULE_CACHE/$mod_key
if [ ! -f "$MDIR/complete" ]; then
    say "building the simulation modules against linux-headers-$KV"
    rm -rf "$MDIR.tmp"
    mkdir -p "$MDIR.tmp/src"
    cp "$SRC"/modules/Kbuild "$SRC"/modules/Makefile "$SRC"/modules/*.c "$MDIR.tmp/src/"
    if ! make -s -C "$MDIR.tmp/src" KDIR="$KBUILD" "${module_make_args[@]}" >"$MDIR.tmp/build.log" 2>&1; then
        cat "$MDIR.tmp/build.log" >&2
        die "the simulation modules do not build"
    fi
    if grep -E 'warning:|error:' "$MDIR.tmp/build.log" | grep -v 'Skipping BTF' >&2; then
        die "the simulation modules build with warnings"
    fi
    mkdir -p "$MDIR.tmp/ko"
    cp "$MDIR.tmp"/src/*.ko "$MDIR.tmp/ko/"
    touch "$MDIR.tmp/complete"
    rm -rf "$MDIR"
    mv "$MDIR.tmp" "$MDIR"
fi

# --- 3. The static Swift scenario executables, one per libgpiod API -----------------------
hil_swift

# --- 4. The initramfs, keyed by everything in it ------------------------------------------
hil_tools
inputs=("$SRC/init" "$SRC/checks.sh" "$SRC"/boards/*.json "$BUSYBOX" "$KDIR/modules"/*.ko "$MDIR"/ko/*.ko
    "${GPIO_TOOLS[@]}" "${I2C_TOOLS[@]}" $libs "${extra_bins[@]}")
for entry in "${swift_bins[@]}"; do inputs+=("${entry#*:}"); done
[ -n "$SERVE_BIN" ] && inputs+=("$SERVE_BIN")
initrd_key=$( (printf '%s\n' "${swift_bins[@]}" "${inputs[@]}"; sha256sum "${inputs[@]}" | cut -c1-64) |
    sha256sum | cut -c1-16)
INITRD=$ARCH_HIL/initramfs-$initrd_key.cpio
if [ ! -f "$INITRD" ]; then
    say "packing the initramfs"
    stage=$ARCH_HIL/stage
    rm -rf "$stage"
    mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib/modules,hil,proc,sys,dev,tmp,run}
    cp "$BUSYBOX" "$stage/bin/busybox"
    cp "$SRC/init" "$stage/init"
    cp "$SRC/checks.sh" "$stage/hil/checks.sh"
    mkdir -p "$stage/hil/boards"
    cp "$SRC"/boards/*.json "$stage/hil/boards/"
    chmod 755 "$stage/init"
    cp "$KDIR"/modules/*.ko "$MDIR"/ko/*.ko "$stage/lib/modules/"
    cp "${GPIO_TOOLS[@]}" "$stage/usr/bin/"
    cp "${I2C_TOOLS[@]}" "$stage/usr/sbin/"
    for lib in $libs; do
        # At the path the tools look for it in the guest: its path under TOOLS_ROOT.
        guest_lib=${lib#"$TOOLS_ROOT"}
        mkdir -p "$stage$(dirname "$guest_lib")"
        cp -L "$lib" "$stage$guest_lib"
    done
    for entry in "${swift_bins[@]}"; do
        # A stripped copy: symbols are not needed in the guest and halve the size.
        "$STRIP" -o "$stage/bin/$SWIFT_PRODUCT-${entry%%:*}" "${entry#*:}"
    done
    [ ${#extra_bins[@]} -eq 0 ] || cp "${extra_bins[@]}" "$stage/bin/"
    # gnss-hat as shipped (scripts/build-static.sh strips it), for check serve.idle-wake-ups.
    [ -z "$SERVE_BIN" ] || cp "$SERVE_BIN" "$stage/bin/gnss-hat"
    (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$INITRD.tmp"
    mv "$INITRD.tmp" "$INITRD"
    # Keep only the newest few images.
    ls -t "$ARCH_HIL"/initramfs-*.cpio | tail -n +4 | xargs -r rm -f
fi

# --- 5. The accelerator ------------------------------------------------------------------
hil_accel

# --- 6. Boot and judge ---------------------------------------------------------------------
LAST=$ARCH_HIL/last
rm -rf "$LAST"
mkdir -p "$LAST"
console=$LAST/console.log
result=$LAST/result.log
: >"$console"
: >"$result"
cmdline="console=$CONSOLE_TTY panic=-1 rdinit=/init"
if [ -n "$verbose" ]; then cmdline+=" loglevel=7 hil.trace=1"; else cmdline+=" quiet loglevel=3"; fi
if [ ${#only[@]} -gt 0 ]; then cmdline+=" hil.only=$(IFS=,; echo "${only[*]}")"; fi
[ -n "$selftest" ] && cmdline+=" hil.selftest=$selftest"
[ -n "$shell" ] && cmdline+=" hil.shell=1"
console_arg=(-serial "file:$console")
[ -n "$shell" ] && console_arg=(-serial mon:stdio)
hil_verdict_args "$result"
qemu=("${qemu_base[@]}" "${accel_args[@]}" "${console_arg[@]}" "${verdict_args[@]}"
    -kernel "$KERNEL" -initrd "$INITRD" -append "$cmdline")
printf '%q ' "${qemu[@]}" >"$LAST/qemu-command"
echo >>"$LAST/qemu-command"
say "booting $KV in QEMU ($accel)"
[ -n "$verbose" ] && cat "$LAST/qemu-command"
boot_start=$EPOCHREALTIME
set +e
if [ -n "$shell" ]; then
    timeout -k 5 --foreground "$timeout_s" "${qemu[@]}"
    rc=$?
elif [ -n "$verbose" ]; then
    timeout -k 5 "$timeout_s" "${qemu[@]}" 2>"$LAST/qemu.stderr" &
    qemu_pid=$!
    tail -n +1 -f --pid=$qemu_pid "$console" &
    tail_pid=$!
    wait $qemu_pid
    rc=$?
    wait $tail_pid 2>/dev/null
else
    timeout -k 5 "$timeout_s" "${qemu[@]}" 2>"$LAST/qemu.stderr"
    rc=$?
fi
set -e
vm_time=$(since "$boot_start")
tr -d '\r' <"$result" >"$result.clean" && mv "$result.clean" "$result"

show_guest_console() {
    echo "----- guest console ($console) -----"
    tr -d '\r' <"$console"
    echo "----- end of guest console -----"
}
checks=$(grep -c '^HIL-CHECK ' "$result" || true)
failed=$(grep '^HIL-CHECK .* FAIL' "$result" || true)
verdict=$(grep '^HIL-RESULT ' "$result" | tail -n 1 || true)
problem=
status=0
case $rc in
    1) ;;  # the guest's exit code 0 (isa-debug-exit on x86_64, semihosting's SYS_EXIT on aarch64)
    3) status=1 ;;  # the guest's exit code 1: a check failed
    0) problem="the VM powered off or panicked without a verdict (QEMU exit 0)" ;;
    124|137) problem="time-out after ${timeout_s}s" ;;
    *) problem="QEMU exited with status $rc" ;;
esac
if [ -z "$problem" ] && [ -z "$verdict" ]; then problem="no HIL-RESULT line on the result port"; fi
if [ -z "$problem" ] && [ "$status" -eq 0 ] && { [ -n "$failed" ] || [[ $verdict != "HIL-RESULT PASS"* ]]; }; then
    problem="the guest exited 0 but reported: ${verdict:-nothing}"
fi
if [ -z "$problem" ] && [ "$status" -eq 1 ] && [ -z "$failed" ]; then
    problem="the guest exited 1 without a failed check"
fi
[ -n "$problem" ] && status=2

if [ $status -ne 0 ] || [ -n "$show_console" ]; then
    [ -z "$verbose" ] && [ -z "$shell" ] && show_guest_console
fi
if [ $status -eq 2 ] && [ -s "$LAST/qemu.stderr" ]; then
    echo "----- QEMU's messages -----"
    cat "$LAST/qemu.stderr"
fi
grep '^HIL-CHECK ' "$result" | sed 's/^/  /' || true
case $status in
    0) say "PASS: $checks checks passed; VM ${vm_time}s ($accel); logs in ${LAST#"$root"/}" ;;
    1) say "FAIL: $(echo "$failed" | wc -l) of $checks checks failed; VM ${vm_time}s; logs in ${LAST#"$root"/}" ;;
    *) say "RIG FAILURE: $problem; VM ${vm_time}s; logs in ${LAST#"$root"/}" ;;
esac
exit $status
