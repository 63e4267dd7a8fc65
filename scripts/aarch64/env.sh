# The aarch64 toolchain's paths and the way into its build root, sourced by the scripts that build or
# test for the Raspberry Pi's CPU (scripts/setup-aarch64.sh makes what is named here).
#   A64          .build/aarch64: everything below lives there
#   A64_ROOT     a Debian sid (amd64) root with Debian's swiftlang: the Swift 6.2 cross compiler
#   A64_SYSROOT  the arm64 sysroot: sid's -dev packages, the arm64 Swift runtime, libmosquitto.a
#   A64_SDKS     the SwiftPM Swift SDK bundle for aarch64-unknown-linux-gnu (`--swift-sdk debian-aarch64`)
#   a64_root CMD runs CMD (a shell command line) in the build root, as root, with /proc, /dev, a
#                private /tmp and the package folder at its own path: nothing stays mounted after it
#   a64_swift ARGS...  `swift ARGS` in the root, cross-compiling for aarch64 through the Swift SDK
#                with the sysroot's pkg-config (libgpiod 2.x there: the v2 API; A64_GPIOD=v1 takes
#                bookworm's 1.6 instead)
#   a64_static_swift_flags  the flags of a fully static aarch64 executable (one section per
#                function, lld folding identical code as for x86_64: scripts/static/swift-flags.sh;
#                OpenSSL's libcrypto from sid also needs zstd and zlib)
# shellcheck shell=bash
A64_PACKAGE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
A64=$A64_PACKAGE/.build/aarch64
A64_ROOT=$A64/sid-amd64
A64_SYSROOT=$A64/sysroot
A64_RUNTIME=$A64/arm64-swift
A64_SDKS=$A64/sdks
A64_SDK=debian-aarch64
A64_TRIPLE=aarch64-unknown-linux-gnu
# Bookworm's libgpiod 1.6 (the v1 API) for the v1 build of the rig's binary: a prefix inside the
# sysroot (pkg-config prefixes its paths with the sysroot).
A64_GPIOD_V1_PREFIX=/opt/gpiod-v1
A64_GPIOD_V1=$A64_SYSROOT$A64_GPIOD_V1_PREFIX

a64_root() {
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    mkdir -p "$A64_ROOT$A64_PACKAGE"
    # shellcheck disable=SC2016
    "${sudo[@]}" unshare --mount --fork sh -c '
        set -e
        root=$1 package=$2 dir=$3; shift 3
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount -t tmpfs tmpfs "$root/tmp"
        mount --bind "$package" "$root$package"
        exec chroot "$root" /bin/sh -c "cd \"\$0\" && $*" "$dir"
    ' a64_root "$A64_ROOT" "$A64_PACKAGE" "$PWD" "$@"
}

a64_swift() {
    local pkgconfig=$A64_SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig:$A64_SYSROOT/usr/share/pkgconfig
    local gpiod_v2=1 first=
    if [ "${A64_GPIOD:-v2}" = v1 ]; then
        pkgconfig=$A64_GPIOD_V1/lib/pkgconfig:$pkgconfig
        gpiod_v2=0
        # SwiftPM looks for a system library's .pc file itself: in PKG_CONFIG_PATH first, then in
        # the sysroot's own folders (where sid's libgpiod 2.x is), never in PKG_CONFIG_LIBDIR.
        first="PKG_CONFIG_PATH=$A64_GPIOD_V1/lib/pkgconfig"
    fi
    local quoted
    quoted=$(printf '%q ' "$@")
    a64_root "env $first PKG_CONFIG_LIBDIR=$pkgconfig PKG_CONFIG_SYSROOT_DIR=$A64_SYSROOT GNSSHAT_GPIOD_V2=$gpiod_v2 \
        GNSSHAT_GPIOD_V2_LIBDIR=/usr/lib/aarch64-linux-gnu \
        swift $quoted --swift-sdks-path $A64_SDKS --swift-sdk $A64_SDK"
}

a64_static_swift_flags=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
    --static-swift-stdlib -Xswiftc -static-executable -Xlinker --icf=all
    -Xlinker -lssl -Xlinker -lcrypto -Xlinker -lzstd -Xlinker -lz)
