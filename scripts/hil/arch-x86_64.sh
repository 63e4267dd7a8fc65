# The x86_64 machine of the hardware-in-loop rig, sourced by scripts/hil/run.sh (the default,
# --arch x86_64): Debian's amd64 kernel on QEMU's q35, the modules built against the host's own
# linux-headers-$KV, the Swift executables built natively, the host's tools in the initramfs, the
# verdict on the second 16550 (ttyS1) and the exit code through isa-debug-exit.
# Each function is one step of run.sh; they set the variables run.sh's common steps read.
# shellcheck shell=bash

ARCH_HIL=$HIL
CONSOLE_TTY=ttyS0

# Step 1: KERNEL (what QEMU boots), KDIR (its modules in KDIR/modules), and what step 2 builds
# against: KBUILD, hdr_version, MODULE_CACHE, module_make_args.
hil_kernel() {
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

    hdr_version=$(dpkg-query -W -f='${Version}' "linux-headers-$KV" 2>/dev/null || echo unknown)
    MODULE_CACHE=$HIL/modules
    module_make_args=()
}

# Step 3: swift_bins (variant:path of each gnss-hat-hil build) and SERVE_BIN (the static
# gnss-hat that check serve.idle-wake-ups runs).
hil_swift() {
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
    # gnss-hat itself, as scripts/test.sh builds it: in the v1 scratch path, whose flags it shares.
    SERVE_BIN=
    if [ "$swift" = auto ]; then
        say "scripts/build-static.sh (gnss-hat) in .build/hil/swift-v1"
        GNSSHAT_STATIC_SCRATCH=$HIL/swift-v1 "$root/scripts/build-static.sh" >"$HIL/gnss-hat-static.log" 2>&1 ||
            { cat "$HIL/gnss-hat-static.log" >&2; die "scripts/build-static.sh failed"; }
        SERVE_BIN=$HIL/swift-v1/gnss-hat-x86_64
    fi
}

# Step 4's inputs: busybox, the stock tools with their shared libraries (TOOLS_ROOT is where they
# are, / here), the strip program for the Swift executables and other executables for /bin.
hil_tools() {
    GPIO_TOOLS=(/usr/bin/gpiodetect /usr/bin/gpioinfo /usr/bin/gpioget /usr/bin/gpioset /usr/bin/gpiomon /usr/bin/gpiofind)
    I2C_TOOLS=(/usr/sbin/i2ctransfer /usr/sbin/i2cdetect)
    BUSYBOX=/bin/busybox
    file -L "$BUSYBOX" | grep -q 'statically linked' || die "$BUSYBOX is not static (install busybox-static)"
    # Shared libraries of the (dynamically linked) diagnostic tools, with the loader.
    libs=$(ldd "${GPIO_TOOLS[@]}" "${I2C_TOOLS[@]}" | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | sort -u)
    TOOLS_ROOT=
    STRIP=strip
    extra_bins=()
}

# Step 5: qemu_base and accel_args.
hil_accel() {
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
}

# Step 6: the verdict's way out (the result file is $1): the second 16550 and isa-debug-exit,
# through which the guest's exit code N ends QEMU with (N << 1) | 1.
hil_verdict_args() {
    verdict_args=(-serial "file:$1" -device isa-debug-exit,iobase=0xf4,iosize=0x04)
}
