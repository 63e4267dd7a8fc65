#!/usr/bin/env bash
# Makes the aarch64 (Raspberry Pi 64-bit) toolchain from Debian's archive, idempotently, all under
# .build/aarch64 (scripts/aarch64/env.sh names the paths):
#   1. a Debian sid amd64 root (debootstrap) with Debian's `swiftlang` (6.2 or later: sid moves, so
#      whatever it serves is taken and its version printed) and the tools to cross-build C libraries;
#   2. the arm64 Swift runtime (`swiftlang` and `libswiftlang` for arm64, unpacked: modules and the
#      static archives a fully static executable links);
#   3. an arm64 sysroot unpacked from sid's -dev packages (glibc, libgcc, libstdc++, libgpiod 2.x,
#      libi2c, OpenSSL, zlib, zstd), with an empty lib_Testing_Foundation.so (Debian ships none and
#      every test bundle's link asks for it);
#   4. libmosquitto.a for arm64, cross-built from sid's source package with the root's clang and lld;
#   5. bookworm's libgpiod 1.6 for arm64 (the v1 API) in a prefix of its own inside the sysroot;
#   6. a SwiftPM Swift SDK bundle for aarch64-unknown-linux-gnu (`--swift-sdk debian-aarch64`);
#   7. sid's qemu-user (bookworm's qemu 7.2 lacks the TCGETS2 ioctl sid's glibc makes for tcgetattr),
#      registered with binfmt_misc as `gnsshat-aarch64` (fix-binary, so it works in chroots too): an
#      aarch64 program then runs as if native, a dynamically linked one with QEMU_LD_PREFIX=sysroot.
# Downloads are kept under .build/aarch64/cache (the arm64 swiftlang packages only until they are
# unpacked, those apt installs in the root not at all); a step whose result exists is skipped. Needs root
# (debootstrap, chroot) or sudo, and debootstrap, qemu-user-static (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/aarch64/env.sh
start=$SECONDS
say() { printf 'setup-aarch64: %s (%ds)\n' "$*" $((SECONDS - start)); }
die() { printf 'setup-aarch64: %s\n' "$*" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
MIRROR=${GNSSHAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=$A64/cache
mkdir -p "$CACHE/debs"

# A private apt state that reaches sid and bookworm for amd64 and arm64, leaving the system's alone.
APT_DIR=$A64/apt
APT=(apt-get -q -o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" -o Dir::State::status=/dev/null
    -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 -o APT::Architecture=amd64
    -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root)
apt_update() {
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
    cat >"$APT_DIR/sources.list.new" <<EOF
deb [arch=arm64,amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR sid main
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR bookworm main
EOF
    # Once per run at most, and not at all when the lists are less than a day old and the sources
    # are the same.
    if ! cmp -s "$APT_DIR/sources.list.new" "$APT_DIR/sources.list"; then
        mv "$APT_DIR/sources.list.new" "$APT_DIR/sources.list"
        rm -rf "$APT_DIR/lists" && mkdir -p "$APT_DIR/lists/partial"
    fi
    if [ -z "${apt_updated:-}" ] && [ -z "$(find "$APT_DIR/lists" -name '*_InRelease' -mmin -1440 -print -quit)" ]
    then
        "${APT[@]}" update >"$A64/apt-update.log" 2>&1 || { tail -5 "$A64/apt-update.log" >&2; die "apt-get update failed"; }
    fi
    apt_updated=1
}
# Downloads PKG[:ARCH][/SUITE] ... into the cache folder SUITE (sid or bookworm; one already there
# is kept).
apt_download() {
    local suite=$1; shift
    apt_update
    mkdir -p "$CACHE/debs/$suite"
    (cd "$CACHE/debs/$suite" && "${APT[@]}" download "$@" >"$A64/apt-download.log" 2>&1) ||
        { tail -5 "$A64/apt-download.log" >&2; die "apt-get download $* failed"; }
}
# The cached .deb of NAME for ARCH from SUITE (the newest if several), or nothing.
cached_deb() {
    find "$CACHE/debs/$3" -name "${1}_*_${2}.deb" | sort -V | tail -1
}

# 1. The build root.
# libgpiod-dev, libmosquitto-dev and libssl-dev (amd64): SwiftPM also resolves the package's system libraries for
# the host (the tools destination of a cross build); without their .pc files in the root every build
# warns "you may be able to install libgpiod using your system-packager", which build-static.sh fails on.
ROOT_PACKAGES="swiftlang libc6-dev g++ pkg-config cmake make dpkg-dev file libgpiod-dev libmosquitto-dev libssl-dev"
if [ "$(cat "$A64_ROOT/.gnsshat-packages" 2>/dev/null)" != "$ROOT_PACKAGES" ]; then
    command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/setup.sh installs it)"
    if [ ! -x "$A64_ROOT/usr/bin/apt-get" ]; then
        say "debootstrap sid (amd64) into $A64_ROOT"
        "${SUDO[@]}" rm -rf "$A64_ROOT"
        mkdir -p "$CACHE/debootstrap"
        "${SUDO[@]}" debootstrap --variant=minbase --arch=amd64 --cache-dir="$CACHE/debootstrap" \
            sid "$A64_ROOT" "$MIRROR" >"$A64/debootstrap.log" 2>&1 ||
            { tail -20 "$A64/debootstrap.log" >&2; die "debootstrap failed (see $A64/debootstrap.log)"; }
    fi
    # sid's Release file can look expired to apt; the root resolves names as this machine does.
    echo 'Acquire::Check-Valid-Until "false";' | "${SUDO[@]}" tee "$A64_ROOT/etc/apt/apt.conf.d/99gnsshat" >/dev/null
    echo "deb-src $MIRROR sid main" | "${SUDO[@]}" tee "$A64_ROOT/etc/apt/sources.list.d/src.list" >/dev/null
    "${SUDO[@]}" cp /etc/resolv.conf "$A64_ROOT/etc/resolv.conf"
    say "installing Debian's swiftlang and the cross-build tools in the root"
    a64_root "apt-get -q update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $ROOT_PACKAGES" >"$A64/root-install.log" 2>&1 ||
        { tail -20 "$A64/root-install.log" >&2; die "installing swiftlang in the root failed"; }
    echo "$ROOT_PACKAGES" >"$A64_ROOT/.gnsshat-packages"
fi
# The root's downloaded packages (about 0.8 GB, swiftlang most of it) are not needed once installed.
if [ -n "$(find "$A64_ROOT/var/cache/apt" -maxdepth 2 -name '*.deb' -print -quit)" ]; then
    a64_root "apt-get clean" || die "apt-get clean in the root failed"
fi
swift_version=$(a64_root 'swift --version 2>/dev/null' | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -1)
case $swift_version in
    6.[2-9]*|6.[1-9][0-9]*|[7-9].*) ;;
    *) die "the root's swiftlang is '$swift_version': Swift 6.2 or later is needed (sid serves what it serves)" ;;
esac
say "cross compiler: Debian's swiftlang $swift_version (sid)"

# 2. The arm64 Swift runtime, the same version as the root's compiler.
runtime_version=$(cat "$A64_RUNTIME/VERSION" 2>/dev/null || true)
root_deb_version=$(a64_root "dpkg-query -W -f='\${Version}' swiftlang")
if [ "$runtime_version" != "$root_deb_version" ]; then
    say "unpacking the arm64 Swift runtime $root_deb_version"
    apt_download sid "swiftlang:arm64=$root_deb_version" "libswiftlang:arm64=$root_deb_version"
    rm -rf "$A64_RUNTIME"
    mkdir -p "$A64_RUNTIME"
    for name in swiftlang libswiftlang; do
        deb=$(find "$CACHE/debs/sid" -name "${name}_${root_deb_version//:/%3a}_arm64.deb" | head -1)
        [ -n "$deb" ] || die "no ${name}_${root_deb_version}_arm64.deb was downloaded"
        dpkg-deb -x "$deb" "$A64_RUNTIME"
        rm -f "$deb"
    done
    [ -f "$A64_RUNTIME/usr/libexec/swift/lib/swift_static/linux/static-executable-args.lnk" ] ||
        die "the arm64 swiftlang has no static runtime (swift_static/linux/static-executable-args.lnk)"
    echo "$root_deb_version" >"$A64_RUNTIME/VERSION"
    rm -f "$A64_SYSROOT/.complete"
fi
# Only the runtime is used (modules, shared and static libraries, clang's resource folder): the arm64
# toolchain's programs, its embedded and macro-host libraries and its LLDB, SourceKit, libclang and
# LTO libraries (about 2.3 GB of the 2.7 GB unpacked) go, so a clean run's disk stays small.
(cd "$A64_RUNTIME/usr/libexec/swift" && rm -rf bin lib/swift/embedded lib/swift/host lib/swift/FrameworkABIBaseline \
    lib/liblldb.so* lib/libsourcekitdInProc.so lib/libclang.so* lib/libLTO.so* lib/libSwiftSourceKit*)

# 3. The arm64 sysroot.
SYSROOT_PACKAGES=(libc6 libc6-dev linux-libc-dev libgcc-s1 libstdc++6 libatomic1 libcrypt1 libcrypt-dev
    libgpiod3 libgpiod-dev libi2c0 libi2c-dev libssl3t64 libssl-dev libzstd1 libzstd-dev zlib1g zlib1g-dev)
# libmosquitto from bookworm, the version the x86_64 build links (sid's 2.1 needs cJSON for the library).
MOSQUITTO_PACKAGES=(libmosquitto-dev libmosquitto1)
if [ ! -f "$A64_SYSROOT/.complete" ]; then
    say "unpacking the arm64 sysroot from sid's packages"
    apt_update
    # The libgcc and libstdc++ development packages of the root's gcc (their names carry its version).
    gcc_major=$(a64_root 'gcc -dumpversion' | cut -d. -f1)
    gcc_dev="libgcc-$gcc_major-dev libstdc++-$gcc_major-dev"
    names=()
    for package in "${SYSROOT_PACKAGES[@]}" $gcc_dev; do
        case $package in linux-libc-dev) names+=("$package") ;; *) names+=("$package:arm64") ;; esac
    done
    apt_download sid "${names[@]}"
    apt_download bookworm "${MOSQUITTO_PACKAGES[@]/%/:arm64/bookworm}"
    rm -rf "$A64_SYSROOT"
    mkdir -p "$A64_SYSROOT"
    for package in "${SYSROOT_PACKAGES[@]}" $gcc_dev; do
        deb=$(cached_deb "$package" arm64 sid)
        [ -n "$deb" ] || deb=$(cached_deb "$package" all sid)
        [ -n "$deb" ] || die "$package (arm64) was not downloaded"
        dpkg-deb -x "$deb" "$A64_SYSROOT"
    done
    for package in "${MOSQUITTO_PACKAGES[@]}"; do
        deb=$(cached_deb "$package" arm64 bookworm)
        [ -n "$deb" ] || die "bookworm's $package (arm64) was not downloaded"
        dpkg-deb -x "$deb" "$A64_SYSROOT"
    done
    # Merged /usr, and the Swift runtime where the driver looks for it under the SDK.
    [ -e "$A64_SYSROOT/lib" ] || ln -s usr/lib "$A64_SYSROOT/lib"
    ln -sfn ../../../arm64-swift/usr/libexec/swift/lib/swift "$A64_SYSROOT/usr/lib/swift"
    ln -sfn ../../../arm64-swift/usr/libexec/swift/lib/swift_static "$A64_SYSROOT/usr/lib/swift_static"
    # Every test bundle's link asks for lib_Testing_Foundation, which Debian does not ship: an empty
    # library stands in (the tests use no Foundation-only Testing API).
    a64_root "/usr/libexec/swift/bin/clang --target=aarch64-linux-gnu --sysroot=$A64_SYSROOT -shared \
        -nostdlib -fuse-ld=lld -o $A64_RUNTIME/usr/libexec/swift/lib/swift/linux/lib_Testing_Foundation.so -x c /dev/null"
    touch "$A64_SYSROOT/.complete"
fi

# 4. libmosquitto.a for arm64 (Debian ships the shared library only, which the dynamically linked
# test bundles use), from bookworm's source package.
MOSQ=$A64/mosquitto
mosquitto_version=$(dpkg-deb -f "$(cached_deb libmosquitto-dev arm64 bookworm)" Version)
if [ "$(cat "$MOSQ/VERSION" 2>/dev/null)" != "$mosquitto_version" ] ||
    [ ! -f "$A64_SYSROOT/usr/lib/aarch64-linux-gnu/libmosquitto.a" ]; then
    say "cross-building libmosquitto.a $mosquitto_version for arm64"
    rm -rf "$MOSQ"
    mkdir -p "$MOSQ/src" "$MOSQ/build"
    apt_update
    (cd "$MOSQ/src" && "${APT[@]}" source "mosquitto=$mosquitto_version" >"$MOSQ/source.log" 2>&1) ||
        { tail -10 "$MOSQ/source.log" >&2; die "apt-get source mosquitto=$mosquitto_version failed"; }
    src=$(find "$MOSQ/src" -mindepth 1 -maxdepth 1 -type d -name 'mosquitto-*' -print -quit)
    lib=$A64_SYSROOT/usr/lib/aarch64-linux-gnu
    flags="--target=aarch64-linux-gnu --sysroot=$A64_SYSROOT -O2 -ffunction-sections -fdata-sections -fPIC"
    a64_root "cd $MOSQ/build && cmake $src -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_SYSROOT=$A64_SYSROOT \
        -DCMAKE_LIBRARY_ARCHITECTURE=aarch64-linux-gnu -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
        -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
        -DCMAKE_C_COMPILER=/usr/libexec/swift/bin/clang -DCMAKE_CXX_COMPILER=/usr/libexec/swift/bin/clang++ \
        -DCMAKE_C_COMPILER_TARGET=aarch64-linux-gnu -DCMAKE_CXX_COMPILER_TARGET=aarch64-linux-gnu \
        -DCMAKE_AR=/usr/libexec/swift/bin/llvm-ar -DCMAKE_RANLIB=/usr/libexec/swift/bin/llvm-ranlib \
        '-DCMAKE_C_FLAGS=$flags' -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
        -DOPENSSL_ROOT_DIR=$A64_SYSROOT/usr -DOPENSSL_INCLUDE_DIR=$A64_SYSROOT/usr/include \
        -DOPENSSL_SSL_LIBRARY=$lib/libssl.a -DOPENSSL_CRYPTO_LIBRARY=$lib/libcrypto.a \
        -DWITH_STATIC_LIBRARIES=ON -DWITH_PIC=ON -DWITH_TLS=ON -DWITH_CJSON=OFF -DWITH_LIB_CPP=OFF \
        -DWITH_CLIENTS=OFF -DWITH_BROKER=OFF -DWITH_APPS=OFF -DWITH_PLUGINS=OFF -DDOCUMENTATION=OFF \
        -DWITH_SRV=OFF -DWITH_WEBSOCKETS=OFF && cmake --build . --target libmosquitto_static -j$(nproc)" \
        >"$MOSQ/build.log" 2>&1 || { tail -30 "$MOSQ/build.log" >&2; die "cross-building libmosquitto.a failed"; }
    cp "$MOSQ/build/lib/libmosquitto_static.a" "$lib/libmosquitto.a"
    echo "$mosquitto_version" >"$MOSQ/VERSION"
    rm -rf "$MOSQ/src" "$MOSQ/build"
fi

# 5. libgpiod 1.6 (the v1 API) for arm64, from bookworm, beside the sysroot's 2.x.
if [ ! -f "$A64_GPIOD_V1/lib/pkgconfig/libgpiod.pc" ]; then
    say "unpacking bookworm's libgpiod 1.6 (arm64) into $A64_GPIOD_V1"
    apt_download bookworm libgpiod-dev:arm64/bookworm libgpiod2:arm64/bookworm
    rm -rf "$A64_GPIOD_V1" "$A64/gpiod-v1-root"
    mkdir -p "$A64_GPIOD_V1/lib/pkgconfig" "$A64_GPIOD_V1/include" "$A64/gpiod-v1-root"
    for package in libgpiod-dev libgpiod2; do
        deb=$(cached_deb "$package" arm64 bookworm)
        [ -n "$deb" ] || die "bookworm's $package (arm64) was not downloaded"
        dpkg-deb -x "$deb" "$A64/gpiod-v1-root"
    done
    cp -a "$A64/gpiod-v1-root/usr/include/gpiod.h" "$A64_GPIOD_V1/include/"
    cp -a "$A64/gpiod-v1-root"/usr/lib/aarch64-linux-gnu/libgpiod.* "$A64_GPIOD_V1/lib/"
    sed -e "s|^prefix=.*|prefix=$A64_GPIOD_V1_PREFIX|" -e "s|^libdir=.*|libdir=\${prefix}/lib|" \
        -e "s|^includedir=.*|includedir=\${prefix}/include|" \
        "$A64/gpiod-v1-root/usr/lib/aarch64-linux-gnu/pkgconfig/libgpiod.pc" >"$A64_GPIOD_V1/lib/pkgconfig/libgpiod.pc"
    rm -rf "$A64/gpiod-v1-root"
fi

# 6. The Swift SDK bundle: the sysroot, the arm64 runtime, and the root's clang and lld.
BUNDLE=$A64_SDKS/$A64_SDK.artifactbundle
bundle_key="$root_deb_version $(sha256sum "$0" | cut -c1-12)"
if [ ! -f "$BUNDLE/info.json" ] || [ "$(cat "$BUNDLE/VERSION" 2>/dev/null)" != "$bundle_key" ]; then
    say "writing the Swift SDK $A64_SDK"
    rm -rf "$BUNDLE"
    mkdir -p "$BUNDLE/$A64_SDK"
    cat >"$BUNDLE/info.json" <<EOF
{
    "schemaVersion": "1.0",
    "artifacts": {
        "$A64_SDK": {
            "type": "swiftSDK",
            "version": "$swift_version",
            "variants": [{ "path": "$A64_SDK" }]
        }
    }
}
EOF
    cat >"$BUNDLE/$A64_SDK/swift-sdk.json" <<EOF
{
    "schemaVersion": "4.0",
    "targetTriples": {
        "$A64_TRIPLE": {
            "sdkRootPath": "$A64_SYSROOT",
            "swiftResourcesPath": "$A64_SYSROOT/usr/lib/swift",
            "swiftStaticResourcesPath": "$A64_SYSROOT/usr/lib/swift_static",
            "toolsetPaths": ["toolset.json"]
        }
    }
}
EOF
    cat >"$BUNDLE/$A64_SDK/toolset.json" <<EOF
{
    "schemaVersion": "1.0",
    "rootPath": "/usr/libexec/swift/bin",
    "swiftCompiler": { "extraCLIOptions": ["-use-ld=lld"] },
    "linker": { "path": "ld.lld" }
}
EOF
    echo "$bundle_key" >"$BUNDLE/VERSION"
fi
# 7. qemu-user from sid, and its binfmt_misc registration.
QEMU=$A64/qemu/qemu-aarch64
if [ ! -x "$QEMU" ]; then
    say "unpacking sid's qemu-user (qemu-aarch64)"
    apt_download sid qemu-user:amd64
    rm -rf "$A64/qemu" "$A64/qemu-root"
    mkdir -p "$A64/qemu" "$A64/qemu-root"
    dpkg-deb -x "$(cached_deb qemu-user amd64 sid)" "$A64/qemu-root"
    cp "$A64/qemu-root/usr/bin/qemu-aarch64" "$QEMU"
    rm -rf "$A64/qemu-root"
fi
BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/register" ]; then
    "${SUDO[@]}" mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc at $BINFMT"
fi
if [ ! -e "$BINFMT/gnsshat-aarch64" ] || ! grep -qx "interpreter $QEMU" "$BINFMT/gnsshat-aarch64"; then
    [ -e "$BINFMT/gnsshat-aarch64" ] && echo -1 | "${SUDO[@]}" tee "$BINFMT/gnsshat-aarch64" >/dev/null
    say "registering $QEMU for aarch64 ELF programs (binfmt_misc)"
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    printf ':gnsshat-aarch64:M::%s:%s:%s:OCF' "$magic" "$mask" "$QEMU" | "${SUDO[@]}" tee "$BINFMT/register" >/dev/null
fi
say "qemu: $("$QEMU" --version | head -1)"

say "ready: swift build --swift-sdks-path $A64_SDKS --swift-sdk $A64_SDK (in the root: scripts/aarch64/env.sh)"
