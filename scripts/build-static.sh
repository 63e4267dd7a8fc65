#!/usr/bin/env bash
# Builds gnss-hat as one fully static executable (Swift runtime, libgpiod.a, libi2c.a,
# libmosquitto.a with OpenSSL's libssl.a and libcrypto.a, and glibc linked in), checks it with
# file and ldd, strips it and prints its size.
#
# usage: scripts/build-static.sh [x86_64|aarch64]   (default: this machine's architecture)
#   x86_64   swift build -c release --static-swift-stdlib -Xswiftc -static-executable, here
#   aarch64  the same through a Swift static Linux SDK (musl), when `swift sdk list` shows one
# Output: .build/static/gnss-hat-ARCH (stripped) and gnss-hat-ARCH.unstripped beside it (a hard
# link to the linker's output, with symbols, for profiles). Size limit: 15 MiB (see below).
# Code layout: every function gets a section of its own (-function-sections) and lld places the
# functions `gnss-hat serve` runs, listed in scripts/static/gnss-hat.order, together at the start of
# the text (--symbol-ordering-file), instead of scattered over its 6.5 MB, each pulling its page
# and the pages the kernel maps around it into the service's resident memory. Measured (serve, one
# watching client): 5.7 MB resident instead of 7.6 with the binary in the page cache as 4 KiB pages,
# 7.0 instead of 7.6 where the kernel holds it in large folios and maps them whole (Linux 6.18 here).
# scripts/profile-order.sh makes the list.
# Environment: GNSSHAT_STATIC_SCRATCH overrides the scratch path (default .build/static);
# GNSSHAT_STATIC_ORDER=none links without the order (scripts/profile-order.sh profiles that build).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-$(uname -m)}
scratch=${GNSSHAT_STATIC_SCRATCH:-.build/static}
limit=$((15 * 1024 * 1024))
start=$SECONDS
say() { printf 'build-static: %s\n' "$*"; }
die() { printf 'build-static: %s\n' "$*" >&2; exit 1; }

sdk_help() {
    cat <<'HELP'
To build for a Raspberry Pi (aarch64) install the Swift static Linux SDK matching the toolchain
(`swift --version`) on this workstation, then run this script again:
    swift sdk install https://download.swift.org/swift-6.3.1-release/static-sdk/swift-6.3.1-RELEASE/swift-6.3.1-RELEASE_static-linux-0.0.1.artifactbundle.tar.gz --checksum <sha256 from swift.org/install>
    swift sdk list      # shows e.g. swift-6.3.1-RELEASE_static-linux-0.0.1
The SDK links against musl and carries its own libgpiod/libi2c only if you add them: build libgpiod,
i2c-tools' libi2c, libmosquitto and OpenSSL for aarch64-swift-linux-musl and pass their .a files
through LIBRARY_PATH (the x86_64 libmosquitto.a in .build/mosquitto-static does not fit).
Or build on the Pi itself (64-bit Raspberry Pi OS with Swift installed): scripts/build-static.sh.
HELP
}

host=$(uname -m)
. scripts/static/swift-flags.sh
build_args=(-c release --product gnss-hat --scratch-path "$scratch" "${static_swift_flags[@]}")
order=$static_order
if [ "${GNSSHAT_STATIC_ORDER:-}" = none ]; then
    order=
else
    [ -s "$order" ] || die "$order is missing (scripts/profile-order.sh makes it)"
    # Symbols the list names but this build lacks (renamed since the profile, or another libc) are
    # left where they are: the note below counts them.
    build_args+=("${static_order_flags[@]}")
fi
if [ "$arch" = "$host" ]; then
    build_args+=(--static-swift-stdlib -Xswiftc -static-executable)
    for lib in libgpiod.a libi2c.a libssl.a libcrypto.a; do
        [ -n "$(find /usr/lib /usr/local/lib -name "$lib" -print -quit 2>/dev/null)" ] ||
            die "$lib is missing (scripts/setup.sh installs libgpiod-dev, libi2c-dev and libssl-dev)"
    done
    [ -f "$static_mosquitto_prefix/lib/libmosquitto.a" ] ||
        die "$static_mosquitto_prefix/lib/libmosquitto.a is missing (scripts/setup.sh builds it)"
elif [ "$arch" = aarch64 ] || [ "$arch" = arm64 ]; then
    sdk=$(swift sdk list 2>/dev/null | grep -m1 static-linux || true)
    if [ -z "$sdk" ]; then
        printf 'build-static: no Swift static Linux SDK is installed (swift sdk list shows none).\n' >&2
        sdk_help >&2
        exit 1
    fi
    build_args+=(--swift-sdk aarch64-swift-linux-musl)
    say "using the Swift SDK $sdk"
else
    die "unknown architecture '$arch' (x86_64 or aarch64)"
fi

mkdir -p "$scratch"
log=$scratch/build.log
bin=$(swift build "${build_args[@]}" --show-bin-path 2>/dev/null)/gnss-hat
# SwiftPM relinks when a flag changes, not when the order file behind the flag does.
if [ -n "$order" ] && [ -e "$bin" ] && [ "$order" -nt "$bin" ]; then
    rm -f "$bin"
fi
say "swift build ${build_args[*]}"
if ! swift build "${build_args[@]}" >"$log" 2>&1; then
    grep -E 'error:' "$log" >&2 || tail -20 "$log" >&2
    die "the static build failed (see $log)"
fi
# The only accepted warnings are the linker's notes about glibc in a static executable: dlopen,
# the NSS calls (getpwnam_r, getpwuid_r...) that FoundationEssentials carries for home directories
# and that gnss-hat never makes, and mktemp.
if grep 'warning:' "$log" | grep -v -e "in statically linked applications requires at runtime" \
    -e "Using 'dlopen' in statically linked" -e "the use of \`mktemp' is dangerous" >&2; then
    die "the static build has warnings (see $log)"
fi
[ -x "$bin" ] || die "no binary at $bin"

description=$(file -L "$bin")
case $description in
    *"statically linked"*|*"static-pie linked"*) ;;
    *) die "not statically linked: $description" ;;
esac
if [ "$arch" = "$host" ]; then
    # ldd says "not a dynamic executable" (and exits 1) for a static binary.
    ldd_out=$(ldd "$bin" 2>&1 || true)
    case $ldd_out in
        *"not a dynamic executable"*|*"statically linked"*) ;;
        *) die "ldd finds shared libraries: $ldd_out" ;;
    esac
    # Full Foundation would bring ICU's data (tens of MB): only FoundationEssentials may be in.
    # grep reads all of nm's output (no -q): an early exit would SIGPIPE nm and, under pipefail,
    # turn a match into a silent pass.
    if nm "$bin" 2>/dev/null | grep -e 'icudt' -e 'ucol_open' >/dev/null; then
        die "the binary contains ICU: something imports Foundation instead of FoundationEssentials"
    fi
fi
out=$scratch/gnss-hat-$arch
ln -f "$bin" "$out.unstripped"
if [ -n "$order" ]; then
    listed=$(grep -c . "$order")
    found=$( (nm --defined-only "$bin" 2>/dev/null || true) | awk '{ print $NF }' | LC_ALL=C sort -u |
        LC_ALL=C comm -12 - <(LC_ALL=C sort -u "$order") | wc -l)
    say "code layout: $found of the $listed functions in $order placed first"
    if [ "$found" -lt $((listed * 8 / 10)) ]; then
        say "more than a fifth of the order is stale: run scripts/profile-order.sh to make it again"
    fi
fi
strip_tool=strip
[ "$arch" != "$host" ] && command -v llvm-strip >/dev/null && strip_tool=llvm-strip
"$strip_tool" -o "$out" "$bin"
unstripped=$(stat -c %s "$bin")
size=$(stat -c %s "$out")
say "$(file -b "$out" | cut -d, -f1-2)"
say "unstripped $((unstripped / 1024)) KiB, stripped $((size / 1024)) KiB ($(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1048576 }') MiB) -> $out"
say "built in $((SECONDS - start)) s"
# About 14.6 MiB (2026-12-02): 10 for the Swift runtime, glibc, libgpiod, libi2c and our code, 4.3 for the fleet
# path (libmosquitto 0.1, OpenSSL 3's libssl and libcrypto 4.2: its default provider registers every
# algorithm in tables, so --gc-sections cannot drop the unused ones). mqtts:// needs TLS, so the
# limit is 15 MiB instead of the 12 MB goal without MQTT. Nothing shipped imports Foundation or
# FoundationEssentials (they added 6 MiB); going over the limit fails the build.
if [ "$size" -ge "$limit" ]; then
    die "stripped size $size bytes is over the 15 MiB limit (did a shipped module import Foundation?)"
fi
