#!/usr/bin/env bash
# Emulated hardware-in-loop: boots Debian's own kernel in QEMU with a simulated GNSS hat
# (scripts/hil/modules: GPIO lines behind the GPIO character device, a u-blox receiver on
# an I2C adapter behind i2c-dev), runs the kernel-level checks and the static Swift
# scenarios (Sources/gnss-hat-hil, built once per libgpiod API) inside it, and reports.
#
# usage: scripts/hil/run.sh [options]
#   --only PATTERN        run only the checks whose names match the shell glob PATTERN
#                         (repeatable; e.g. 'i2c.*', 'v2.gpio.drive-output', 'gpio.edges')
#   --no-swift            do not build or run the Swift scenario executables
#   --console             show the guest console even when everything passed
#   --shell               console on this terminal and a shell in the guest after the checks
#   -v, --verbose         stream the guest console live, with kernel messages and traced checks
#   --self-test-failure   add a check that must fail and break the Receiver scenarios' driver
#                         (the enable line is never set), to prove a failure fails the run
#   --timeout SECONDS     limit for the VM (default 240)
#   --accel auto|tcg|kvm  QEMU accelerator (default auto: KVM only if a probe boot works)
#
# Exit status: 0 all checks passed; 1 a check failed; 2 the rig failed (build, boot, panic,
# time-out, or no verdict). The console and verdicts of the last run are in .build/hil/last/.
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
        -h|--help) usage 0 ;;
        *) echo "hil: unknown option $1" >&2; usage 2 ;;
    esac
    shift
done

since() { awk -v now="$EPOCHREALTIME" -v then="$1" 'BEGIN { printf "%.1f", now - then }'; }
elapsed() { since "$start"; }
say() { printf 'hil [%6ss]: %s\n' "$(elapsed)" "$*"; }
die() { printf 'hil: %s\n' "$*" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
APT_QUIET=(-q -o APT::Sandbox::User=root)

mkdir -p "$HIL"
exec 9>"$HIL/lock"
flock 9 || die "cannot lock $HIL/lock"

# --- 1. Debian's kernel: vmlinuz and the modules we need, keyed on the kernel version -----
# The version linux-headers-amd64 (installed by scripts/setup.sh) points at is the one
# linux-image-amd64 depends on; asking dpkg is fast, apt-cache (0.9 s) is the fallback.
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
KBUILD=/lib/modules/$KV/build
if [ ! -f "$KBUILD/Module.symvers" ]; then
    say "installing linux-headers-$KV"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "linux-headers-$KV" >/dev/null || die "cannot install linux-headers-$KV"
fi
# Kernel modules the guest loads, besides ours (paths under /lib/modules/$KV/; no dependencies).
KMODS=(kernel/drivers/i2c/i2c-dev.ko)
KDIR=$HIL/kernel/$KV
if [ ! -f "$KDIR/complete" ]; then
    say "fetching linux-image-$KV (cached in $KDIR)"
    rm -rf "$KDIR" "$KDIR.tmp"
    mkdir -p "$KDIR.tmp/deb" "$KDIR.tmp/x"
    (cd "$KDIR.tmp/deb" && apt-get "${APT_QUIET[@]}" download "linux-image-$KV" >/dev/null) ||
        die "apt-get download linux-image-$KV failed"
    patterns=("./boot/vmlinuz-$KV")
    for m in "${KMODS[@]}"; do patterns+=("./lib/modules/$KV/$m*"); done
    dpkg-deb --fsys-tarfile "$KDIR.tmp"/deb/*.deb | tar -x -C "$KDIR.tmp/x" --wildcards "${patterns[@]}" ||
        die "cannot extract the kernel and modules from the package"
    mkdir -p "$KDIR.tmp/modules"
    for m in "${KMODS[@]}"; do
        f=$(ls "$KDIR.tmp/x/lib/modules/$KV/$m"* | head -n 1)
        case $f in
            *.xz) xz -dc "$f" >"$KDIR.tmp/modules/$(basename "$m")" ;;
            *.zst) zstd -qdc "$f" >"$KDIR.tmp/modules/$(basename "$m")" ;;
            *) cp "$f" "$KDIR.tmp/modules/" ;;  # never strip: it would drop the signature
        esac
    done
    mv "$KDIR.tmp/x/boot/vmlinuz-$KV" "$KDIR.tmp/vmlinuz"
    basename "$KDIR.tmp"/deb/*.deb >"$KDIR.tmp/package"
    rm -rf "$KDIR.tmp/deb" "$KDIR.tmp/x"
    touch "$KDIR.tmp/complete"
    mv "$KDIR.tmp" "$KDIR"
fi

# An uncompressed vmlinux boots through its PVH entry point (Debian sets CONFIG_PVH) and
# skips the bzImage's xz decompression, which costs ~5 s per boot under TCG.
if [ ! -f "$KDIR/vmlinux" ] && [ ! -f "$KDIR/no-pvh" ]; then
    command -v xz >/dev/null || die "xz is missing (scripts/setup.sh installs xz-utils)"
    say "unpacking vmlinux for a PVH boot"
    offset=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$KDIR/vmlinuz" | sed -n 1p | cut -d: -f1)
    # xz complains about the bzImage's bytes after its stream; the stream itself is whole.
    [ -n "$offset" ] && tail -c +$((offset + 1)) "$KDIR/vmlinuz" | xz -dc >"$KDIR/vmlinux.tmp" 2>/dev/null || true
    # The PVH entry note is XEN_ELFNOTE_PHYS32_ENTRY (18).
    if [ -s "$KDIR/vmlinux.tmp" ] &&
        readelf -n "$KDIR/vmlinux.tmp" 2>/dev/null | grep -E '0x00000012|PHYS32_ENTRY' >/dev/null; then
        mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux"
    else
        rm -f "$KDIR/vmlinux.tmp"
        touch "$KDIR/no-pvh"
    fi
fi
KERNEL=$KDIR/vmlinuz
[ -f "$KDIR/vmlinux" ] && KERNEL=$KDIR/vmlinux

# --- 2. Our simulation modules, built against the matching headers ------------------------
hdr_version=$(dpkg-query -W -f='${Version}' "linux-headers-$KV" 2>/dev/null || echo unknown)
mod_key=$( (echo "$KV $hdr_version"; cat "$SRC"/modules/Kbuild "$SRC"/modules/Makefile "$SRC"/modules/*.c) |
    sha256sum | cut -c1-16)
MDIR=$HIL/modules/$mod_key
if [ ! -f "$MDIR/complete" ]; then
    say "building the simulation modules against linux-headers-$KV"
    rm -rf "$MDIR.tmp"
    mkdir -p "$MDIR.tmp/src"
    cp "$SRC"/modules/Kbuild "$SRC"/modules/Makefile "$SRC"/modules/*.c "$MDIR.tmp/src/"
    if ! make -s -C "$MDIR.tmp/src" KDIR="$KBUILD" >"$MDIR.tmp/build.log" 2>&1; then
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
SWIFT_PRODUCT=gnss-hat-hil
swift_bins=()
if [ "$swift" = auto ] && [ -d "$root/Sources/$SWIFT_PRODUCT" ]; then
    V2_PREFIX=$root/.build/libgpiod-v2/prefix
    [ -f "$V2_PREFIX/lib/libgpiod.a" ] || die "no libgpiod v2 in $V2_PREFIX: run scripts/setup.sh"
    for variant in v1 v2; do
        say "swift build (static, release, libgpiod $variant) in .build/hil/swift-$variant"
        env_args=()
        if [ $variant = v2 ]; then
            env_args=(GNSSHAT_GPIOD_V2=1 "PKG_CONFIG_PATH=$V2_PREFIX/lib/pkgconfig")
        fi
        log=$HIL/swift-$variant.log
        # scripts/build-static.sh's flags, all of them and in its order (SwiftPM compares the list
        # as written): the modules the two products share in .build/hil/swift-v1 are then
        # compiled once.
        . "$root/scripts/static/swift-flags.sh"
        if ! env "${env_args[@]}" swift build -c release \
            "${static_swift_flags[@]}" "${static_order_flags[@]}" --static-swift-stdlib -Xswiftc -static-executable \
            --product "$SWIFT_PRODUCT" --scratch-path "$HIL/swift-$variant" >"$log" 2>&1; then
            cat "$log" >&2
            die "the static $variant build of $SWIFT_PRODUCT failed"
        fi
        # The only accepted warnings are the linker's notes from glibc about a static executable:
        # dlopen and the NSS calls (getpwnam_r...) that FoundationEssentials carries but the
        # scenarios never make, and its mktemp.
        if grep 'warning:' "$log" | grep -v -e "in statically linked applications requires at runtime" \
            -e "Using 'dlopen' in statically linked" -e "the use of \`mktemp' is dangerous" >&2; then
            die "the static $variant build of $SWIFT_PRODUCT has warnings (see $log)"
        fi
        bin=$HIL/swift-$variant/release/$SWIFT_PRODUCT
        file -L "$bin" | grep -q 'statically linked' || die "$bin is not statically linked"
        # The link must take libgpiod.a of the API asked for: v2's gpiod_api_version from the
        # private prefix, never the system's v1 archive (its gpiod_version_string).
        syms=$(nm "$bin" | awk '$2 == "T" {print $3}' | grep -x -e gpiod_api_version -e gpiod_version_string || true)
        want=gpiod_version_string
        [ $variant = v2 ] && want=gpiod_api_version
        [ "$syms" = "$want" ] || die "$bin links the wrong libgpiod (has: ${syms:-none}; wants $want)"
        swift_bins+=("$variant:$bin")
    done
fi

# --- 4. The initramfs, keyed by everything in it ------------------------------------------
GPIO_TOOLS=(/usr/bin/gpiodetect /usr/bin/gpioinfo /usr/bin/gpioget /usr/bin/gpioset /usr/bin/gpiomon /usr/bin/gpiofind)
I2C_TOOLS=(/usr/sbin/i2ctransfer /usr/sbin/i2cdetect)
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" | grep -q 'statically linked' || die "$BUSYBOX is not static (install busybox-static)"
# Shared libraries of the (dynamically linked) diagnostic tools, with the loader.
libs=$(ldd "${GPIO_TOOLS[@]}" "${I2C_TOOLS[@]}" | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | sort -u)
inputs=("$SRC/init" "$SRC/checks.sh" "$SRC"/boards/*.json "$BUSYBOX" "$KDIR/modules"/*.ko "$MDIR"/ko/*.ko
    "${GPIO_TOOLS[@]}" "${I2C_TOOLS[@]}" $libs)
for entry in "${swift_bins[@]}"; do inputs+=("${entry#*:}"); done
initrd_key=$( (printf '%s\n' "${swift_bins[@]}" "${inputs[@]}"; sha256sum "${inputs[@]}" | cut -c1-64) |
    sha256sum | cut -c1-16)
INITRD=$HIL/initramfs-$initrd_key.cpio
if [ ! -f "$INITRD" ]; then
    say "packing the initramfs"
    stage=$HIL/stage
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
        mkdir -p "$stage$(dirname "$lib")"
        cp -L "$lib" "$stage$lib"
    done
    for entry in "${swift_bins[@]}"; do
        # A stripped copy: symbols are not needed in the guest and halve the size.
        strip -o "$stage/bin/$SWIFT_PRODUCT-${entry%%:*}" "${entry#*:}"
    done
    (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$INITRD.tmp"
    mv "$INITRD.tmp" "$INITRD"
    # Keep only the newest few images.
    ls -t "$HIL"/initramfs-*.cpio | tail -n +4 | xargs -r rm -f
fi

# --- 5. The accelerator: KVM only when a probe boot proves it works -----------------------
qemu_base=(qemu-system-x86_64 -machine q35 -cpu max -smp 1 -m 1024 -nodefaults -no-user-config
    -display none -no-reboot)
if [ "$accel" = auto ]; then
    accel=tcg
    if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        probe_key=$(echo "$(uname -r) $(qemu-system-x86_64 --version | head -n 1) $KV" | sha256sum | cut -c1-12)
        probe=$HIL/kvm-probe-$probe_key
        if [ ! -f "$probe" ]; then
            say "probing KVM (once per host kernel, QEMU and guest kernel)"
            probe_dir=$(mktemp -d)
            mkdir -p "$probe_dir/root/bin" "$probe_dir/root/dev"
            cp "$BUSYBOX" "$probe_dir/root/bin/busybox"
            {
                echo '#!/bin/busybox sh'
                echo '/bin/busybox mount -t devtmpfs d /dev'
                echo '/bin/busybox printf "\000" | /bin/busybox dd of=/dev/port bs=1 seek=244 count=1 conv=notrunc'
            } >"$probe_dir/root/init"
            chmod 755 "$probe_dir/root/init"
            (cd "$probe_dir/root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$probe_dir/probe.cpio"
            set +e
            # In a subshell that outlives QEMU (`exit`), so bash's report of an aborting QEMU
            # goes to /dev/null too.
            (timeout -k 2 20 "${qemu_base[@]}" -accel kvm -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
                -kernel "$KERNEL" -initrd "$probe_dir/probe.cpio" \
                -append "console=ttyS0 quiet panic=-1 rdinit=/init"; exit $?) >/dev/null 2>&1
            rc=$?
            set -e
            rm -rf "$probe_dir"
            if [ $rc -eq 1 ]; then echo kvm >"$probe"; else echo tcg >"$probe"; fi
        fi
        accel=$(cat "$probe")
    fi
fi
accel_args=(-accel "$accel")

# --- 6. Boot and judge ---------------------------------------------------------------------
LAST=$HIL/last
rm -rf "$LAST"
mkdir -p "$LAST"
console=$LAST/console.log
result=$LAST/result.log
: >"$console"
: >"$result"
cmdline="console=ttyS0 panic=-1 rdinit=/init"
if [ -n "$verbose" ]; then cmdline+=" loglevel=7 hil.trace=1"; else cmdline+=" quiet loglevel=3"; fi
if [ ${#only[@]} -gt 0 ]; then cmdline+=" hil.only=$(IFS=,; echo "${only[*]}")"; fi
[ -n "$selftest" ] && cmdline+=" hil.selftest=$selftest"
[ -n "$shell" ] && cmdline+=" hil.shell=1"
console_arg=(-serial "file:$console")
[ -n "$shell" ] && console_arg=(-serial mon:stdio)
qemu=("${qemu_base[@]}" "${accel_args[@]}" "${console_arg[@]}" -serial "file:$result"
    -device isa-debug-exit,iobase=0xf4,iosize=0x04
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
    1) ;;  # the guest's exit code 0 through isa-debug-exit
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
