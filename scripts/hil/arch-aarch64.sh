# The aarch64 machine of the hardware-in-loop rig, sourced by scripts/hil/run.sh for --arch aarch64:
# Debian's arm64 kernel (the twin of the x86_64 rig's version) on QEMU's virt board under TCG, the
# modules cross-built against its linux-headers with gcc-aarch64-linux-gnu, the Swift executables
# built by Debian's Swift 6.2 through scripts/setup-aarch64.sh's Swift SDK, bookworm's arm64 busybox,
# gpiod and i2c-tools in the initramfs, the verdict on a virtio-serial port (hil.result) and the exit
# code through Arm semihosting (scripts/hil/semihost-exit.c).
# Everything arm64 comes from bookworm, bookworm-updates and bookworm-security through a private apt
# state in .build/hil/aarch64/apt (the system's sources stay untouched) and is cached below it.
# Each function is one step of run.sh; they set the variables run.sh's common steps read.
# shellcheck shell=bash

A64_HIL=$HIL/aarch64
ARCH_HIL=$A64_HIL
CONSOLE_TTY=ttyAMA0
A64_MIRROR=${GNSSHAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
A64_SECURITY_MIRROR=${GNSSHAT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
A64_APT_DIR=$A64_HIL/apt
A64_APT=(apt-get -q -o Dir::Etc::SourceList="$A64_APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$A64_APT_DIR/lists" -o Dir::Cache="$A64_APT_DIR/cache" -o Dir::State::status=/dev/null
    -o APT::Architectures::=arm64 -o APT::Architecture=arm64 -o APT::Sandbox::User=root)
# The guest's kernel modules besides ours (paths under /lib/modules/$KV/; none has dependencies):
# i2c-dev, and the virtio-serial transport and driver of the result port.
A64_KMODS=(kernel/drivers/i2c/i2c-dev.ko kernel/drivers/virtio/virtio_mmio.ko kernel/drivers/char/virtio_console.ko)
# Bookworm's packages the initramfs takes its tools from (the loader and libraries with them).
A64_TOOL_PACKAGES=(busybox-static gpiod libgpiod2 i2c-tools libi2c0 libc6)

# The private lists of bookworm's arm64 archive: fetched when missing, older than a day, or forced
# (a package not found in them).
a64_apt_update() {
    local sources
    sources=$(printf 'deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s\n' \
        "$A64_MIRROR bookworm main" "$A64_MIRROR bookworm-updates main" "$A64_SECURITY_MIRROR bookworm-security main")
    mkdir -p "$A64_APT_DIR/lists/partial" "$A64_APT_DIR/cache/archives/partial"
    if [ "$sources" != "$(cat "$A64_APT_DIR/sources.list" 2>/dev/null)" ]; then
        echo "$sources" >"$A64_APT_DIR/sources.list"
        rm -rf "$A64_APT_DIR/lists" && mkdir -p "$A64_APT_DIR/lists/partial"
    fi
    if [ "${1:-}" = force ] || [ -z "$(find "$A64_APT_DIR/lists" -name '*_InRelease' -mmin -1440 -print -quit)" ]; then
        say "apt-get update (bookworm, arm64; private lists in ${A64_APT_DIR#"$root"/})"
        "${A64_APT[@]}" update >"$A64_HIL/apt-update.log" 2>&1 ||
            { tail -5 "$A64_HIL/apt-update.log" >&2; die "apt-get update of the arm64 lists failed"; }
    fi
}

# a64_download DIR PACKAGE[=VERSION]...: bookworm's arm64 packages into DIR.
a64_download() {
    local dir=$1
    shift
    a64_apt_update
    mkdir -p "$dir"
    if ! (cd "$dir" && "${A64_APT[@]}" download "$@" >"$A64_HIL/apt-download.log" 2>&1); then
        a64_apt_update force
        (cd "$dir" && "${A64_APT[@]}" download "$@" >"$A64_HIL/apt-download.log" 2>&1) ||
            { tail -5 "$A64_HIL/apt-download.log" >&2; die "apt-get download $* (arm64) failed"; }
    fi
}

# Step 1: the Image QEMU boots and the modules the guest loads (KDIR/modules), then the private
# header tree step 2 cross-builds against: KBUILD, hdr_version, MODULE_CACHE, module_make_args.
hil_kernel() {
    KV=${KV%-amd64}
    KV=${KV%-arm64}-arm64
    KDIR=$A64_HIL/kernel/$KV
    if [ ! -f "$KDIR/complete" ]; then
        say "fetching linux-image-$KV (cached in ${KDIR#"$root"/})"
        rm -rf "$KDIR" "$KDIR.tmp"
        mkdir -p "$KDIR.tmp/x" "$KDIR.tmp/modules"
        a64_download "$KDIR.tmp/deb" "linux-image-$KV"
        patterns=("./boot/vmlinuz-$KV")
        for m in "${A64_KMODS[@]}"; do patterns+=("./lib/modules/$KV/$m*"); done
        dpkg-deb --fsys-tarfile "$KDIR.tmp"/deb/*.deb | tar -x -C "$KDIR.tmp/x" --wildcards "${patterns[@]}" ||
            die "cannot extract the kernel and modules from the package"
        for m in "${A64_KMODS[@]}"; do
            f=$(ls "$KDIR.tmp/x/lib/modules/$KV/$m"* | head -n 1)
            case $f in
                *.xz) xz -dc "$f" >"$KDIR.tmp/modules/$(basename "$m")" ;;
                *.zst) zstd -qdc "$f" >"$KDIR.tmp/modules/$(basename "$m")" ;;
                *) cp "$f" "$KDIR.tmp/modules/" ;;  # never strip: it would drop the signature
            esac
        done
        # The arm64 "vmlinuz" is the kernel's Image, gzip-compressed in some releases: QEMU's
        # -kernel takes the Image.
        image=$KDIR.tmp/x/boot/vmlinuz-$KV
        if gzip -t "$image" 2>/dev/null; then gzip -dc "$image" >"$KDIR.tmp/Image"; else mv "$image" "$KDIR.tmp/Image"; fi
        file "$KDIR.tmp/Image" | grep -q 'ARM64 boot executable Image' || die "linux-image-$KV has no arm64 Image"
        basename "$KDIR.tmp"/deb/*.deb >"$KDIR.tmp/package"
        rm -rf "$KDIR.tmp/deb" "$KDIR.tmp/x"
        touch "$KDIR.tmp/complete"
        mv "$KDIR.tmp" "$KDIR"
    fi
    KERNEL=$KDIR/Image
    a64_headers
    command -v aarch64-linux-gnu-gcc >/dev/null ||
        die "aarch64-linux-gnu-gcc is missing (scripts/setup.sh installs gcc-aarch64-linux-gnu)"
    MODULE_CACHE=$A64_HIL/modules
    module_make_args=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
}

# linux-headers-$KV (arm64) and its -common, of one version, unpacked into a private tree with the
# host's kbuild tools (fixdep, modpost: x86_64 programs) where the packages' relative links expect
# them, and the flavour's Makefile pointed at the private -common: sets KBUILD and hdr_version.
a64_headers() {
    local hdir=$A64_HIL/headers/$KV
    if [ ! -f "$hdir/complete" ]; then
        say "unpacking linux-headers-$KV for the cross build (in ${hdir#"$root"/})"
        rm -rf "$hdir" "$hdir.tmp"
        mkdir -p "$hdir.tmp/root"
        a64_download "$hdir.tmp/deb" "linux-headers-$KV"
        local deb version common kbuild host_kbuild
        deb=$(ls "$hdir.tmp"/deb/linux-headers-"$KV"_*.deb)
        version=$(dpkg-deb -f "$deb" Version)
        common=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-headers-[^ ]*-common\) .*/\1/p')
        kbuild=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-kbuild-[0-9.]*\)\( .*\)\{0,1\}$/\1/p')
        [ -n "$common" ] && [ -n "$kbuild" ] || die "cannot read linux-headers-$KV's dependencies"
        a64_download "$hdir.tmp/deb" "$common=$version"
        for deb in "$hdir.tmp"/deb/*.deb; do dpkg-deb -x "$deb" "$hdir.tmp/root"; done
        # The host's kbuild, as linux-headers-$KV asks (>= its version); else the archive's.
        host_kbuild=$(dpkg-query -W -f='${Version}' "$kbuild" 2>/dev/null || true)
        if [ -n "$host_kbuild" ] && dpkg --compare-versions "$host_kbuild" ge "$version"; then
            mkdir -p "$hdir.tmp/root/usr/lib"
            cp -a "/usr/lib/$kbuild" "$hdir.tmp/root/usr/lib/"
        else
            say "the host's $kbuild is ${host_kbuild:-missing}: fetching $kbuild $version (amd64)"
            mkdir -p "$hdir.tmp/kbuild"
            (cd "$hdir.tmp/kbuild" && apt-get "${APT_QUIET[@]}" download "$kbuild=$version" >/dev/null) ||
                die "apt-get download $kbuild=$version failed"
            dpkg-deb -x "$hdir.tmp"/kbuild/*.deb "$hdir.tmp/root"
        fi
        # The flavour's Makefile includes the -common one by its absolute installed path.
        sed -i "s|^include /usr/src/|include $hdir/root/usr/src/|" "$hdir.tmp/root/usr/src/linux-headers-$KV/Makefile"
        echo "$version" >"$hdir.tmp/version"
        rm -rf "$hdir.tmp/deb" "$hdir.tmp/kbuild"
        touch "$hdir.tmp/complete"
        mv "$hdir.tmp" "$hdir"
    fi
    KBUILD=$hdir/root/usr/src/linux-headers-$KV
    hdr_version=$(cat "$hdir/version")
}

# Step 3: swift_bins (variant:path of each gnss-hat-hil build) and SERVE_BIN (the static gnss-hat
# of scripts/build-static.sh aarch64, for check serve.idle-wake-ups). libgpiod v2 is built in
# .build/aarch64/static, where build-static.sh builds gnss-hat with the same arguments (the modules
# both products compile are compiled once), v1 in .build/aarch64/static-v1.
hil_swift() {
    SWIFT_PRODUCT=gnss-hat-hil
    swift_bins=()
    SERVE_BIN=
    [ "$swift" = auto ] || return 0
    say "scripts/setup-aarch64.sh (the aarch64 toolchain, .build/aarch64)"
    "$root/scripts/setup-aarch64.sh" >"$A64_HIL/setup-aarch64.log" 2>&1 ||
        { tail -20 "$A64_HIL/setup-aarch64.log" >&2; die "scripts/setup-aarch64.sh failed"; }
    . "$root/scripts/aarch64/env.sh"
    . "$root/scripts/static/swift-flags.sh"
    command -v aarch64-linux-gnu-strip >/dev/null ||
        die "aarch64-linux-gnu-strip is missing (scripts/setup.sh installs binutils-aarch64-linux-gnu)"
    local variant scratch log bin syms want
    for variant in v2 v1; do
        scratch=.build/aarch64/static
        [ $variant = v1 ] && scratch=.build/aarch64/static-v1
        say "swift build (aarch64, static, release, libgpiod $variant) in $scratch"
        log=$A64_HIL/swift-$variant.log
        # scripts/build-static.sh aarch64's arguments, all of them and in its order (SwiftPM compares
        # the list as written), for this product.
        if ! A64_GPIOD=$variant a64_swift build -c release --product "$SWIFT_PRODUCT" --scratch-path "$scratch" \
            "${static_order_flags[@]}" "${a64_static_swift_flags[@]}" >"$log" 2>&1; then
            grep -E 'error:' "$log" >&2 || tail -30 "$log" >&2
            die "the static aarch64 $variant build of $SWIFT_PRODUCT failed (see $log)"
        fi
        # As on x86_64, glibc's notes about a static executable; and the toolset hands lld's flag to
        # every C compile as well, where clang finds it unused (as scripts/build-static.sh says).
        if grep 'warning:' "$log" | grep -v -e "in statically linked applications requires at runtime" \
            -e "Using 'dlopen' in statically linked" -e "the use of \`mktemp' is dangerous" \
            -e "argument unused during compilation: '-fuse-ld=lld'" >&2; then
            die "the static aarch64 $variant build of $SWIFT_PRODUCT has warnings (see $log)"
        fi
        bin=$root/$scratch/$A64_TRIPLE/release/$SWIFT_PRODUCT
        case $(file -L "$bin") in
            *"ARM aarch64"*"statically linked"*|*"ARM aarch64"*"static-pie linked"*) ;;
            *) die "$bin is not a static aarch64 executable: $(file -L "$bin")" ;;
        esac
        # The link must take libgpiod.a of the API asked for: the sysroot's 2.x (gpiod_api_version)
        # or bookworm's 1.6 in /opt/gpiod-v1 (gpiod_version_string), never the other.
        syms=$(aarch64-linux-gnu-nm "$bin" | awk '$2 == "T" {print $3}' |
            grep -x -e gpiod_api_version -e gpiod_version_string || true)
        want=gpiod_version_string
        [ $variant = v2 ] && want=gpiod_api_version
        [ "$syms" = "$want" ] || die "$bin links the wrong libgpiod (has: ${syms:-none}; wants $want)"
        swift_bins+=("$variant:$bin")
        if [ $variant = v2 ]; then
            say "scripts/build-static.sh aarch64 (gnss-hat) in $scratch"
            "$root/scripts/build-static.sh" aarch64 >"$A64_HIL/gnss-hat-static.log" 2>&1 ||
                { tail -20 "$A64_HIL/gnss-hat-static.log" >&2; die "scripts/build-static.sh aarch64 failed"; }
            SERVE_BIN=$root/.build/static/gnss-hat-aarch64
        fi
    done
}

# The shared libraries (and the loader) that the dynamically linked arm64 programs given need,
# found under the tool root $1, one path per line.
a64_libraries() {
    local troot=$1
    shift
    local pending=("$@") done_list=" " file name path interp
    for file in "$@"; do
        interp=$(aarch64-linux-gnu-readelf -l "$file" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
        [ -z "$interp" ] || echo "$troot$interp"
    done | sort -u
    while [ ${#pending[@]} -gt 0 ]; do
        file=${pending[0]}
        pending=("${pending[@]:1}")
        for name in $(aarch64-linux-gnu-readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case $done_list in *" $name "*) continue ;; esac
            done_list+="$name "
            path=
            for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
                [ -e "$troot/$dir/$name" ] && { path=$troot/$dir/$name; break; }
            done
            [ -n "$path" ] || die "no $name for the arm64 tools under $troot"
            echo "$path"
            pending+=("$path")
        done
    done
}

# Step 4's inputs: bookworm's arm64 busybox-static, gpiod and i2c-tools with their libraries
# (unpacked under TOOLS_ROOT; each goes to the guest at its path there), the strip program for the
# Swift executables, and hil-exit (scripts/hil/semihost-exit.c) for /bin.
hil_tools() {
    local tools=$A64_HIL/tools
    if [ "$(cat "$tools/packages" 2>/dev/null)" != "${A64_TOOL_PACKAGES[*]}" ]; then
        say "fetching bookworm's ${A64_TOOL_PACKAGES[*]} (arm64)"
        rm -rf "$tools" "$tools.tmp"
        mkdir -p "$tools.tmp/root"
        a64_download "$tools.tmp/deb" "${A64_TOOL_PACKAGES[@]}"
        for deb in "$tools.tmp"/deb/*.deb; do dpkg-deb -x "$deb" "$tools.tmp/root"; done
        rm -rf "$tools.tmp/deb"
        echo "${A64_TOOL_PACKAGES[*]}" >"$tools.tmp/packages"
        mv "$tools.tmp" "$tools"
    fi
    TOOLS_ROOT=$tools/root
    BUSYBOX=$TOOLS_ROOT/bin/busybox
    file -L "$BUSYBOX" | grep -q 'ARM aarch64.*statically linked' || die "$BUSYBOX is not a static arm64 busybox"
    GPIO_TOOLS=()
    for tool in gpiodetect gpioinfo gpioget gpioset gpiomon gpiofind; do GPIO_TOOLS+=("$TOOLS_ROOT/usr/bin/$tool"); done
    I2C_TOOLS=("$TOOLS_ROOT/usr/sbin/i2ctransfer" "$TOOLS_ROOT/usr/sbin/i2cdetect")
    libs=$(a64_libraries "$TOOLS_ROOT" "${GPIO_TOOLS[@]}" "${I2C_TOOLS[@]}")
    STRIP=aarch64-linux-gnu-strip
    local exit_bin=$A64_HIL/hil-exit
    if [ ! -x "$exit_bin" ] || [ "$SRC/semihost-exit.c" -nt "$exit_bin" ]; then
        aarch64-linux-gnu-gcc -Wall -Wextra -Werror -O2 -ffreestanding -fno-stack-protector -nostdlib -static \
            -o "$exit_bin" "$SRC/semihost-exit.c" || die "hil-exit does not build (scripts/hil/semihost-exit.c)"
    fi
    extra_bins=("$exit_bin")
}

# Step 5: qemu_base and accel_args; TCG only (an x86_64 host has no KVM for arm64 guests).
# cortex-a72 (the Raspberry Pi 4's core): `-cpu max` would emulate pointer authentication, slowly.
hil_accel() {
    qemu_base=(qemu-system-aarch64 -machine virt -cpu cortex-a72 -smp 1 -m 1024 -nodefaults -no-user-config
        -display none -no-reboot)
    case $accel in
        auto|tcg) accel=tcg ;;
        *) die "--accel $accel: the aarch64 rig runs under TCG only" ;;
    esac
    accel_args=(-accel tcg)
}

# Step 6: the verdict's way out (the result file is $1). The virt board has one UART (the
# console), so the verdict lines go to a virtio-serial port named hil.result; the exit code goes
# through Arm semihosting's SYS_EXIT, which /bin/hil-exit calls from user space, so QEMU exits with
# (code << 1) | 1 as isa-debug-exit makes it on x86_64. (Semihosting would also let the guest open
# host files; only the rig's own programs run there.)
hil_verdict_args() {
    verdict_args=(-device virtio-serial-device -chardev "file,id=hilresult,path=$1"
        -device virtserialport,chardev=hilresult,name=hil.result -semihosting-config enable=on,userspace=on)
}
