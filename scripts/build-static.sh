#!/usr/bin/env bash
# Builds gnss-hat as one fully static executable (Swift runtime, libgpiod.a, libi2c.a,
# libmosquitto.a with OpenSSL's libssl.a and libcrypto.a, and glibc linked in), checks it with
# file (and ldd on this machine's architecture), strips it and prints its size.
#
# usage: scripts/build-static.sh [x86_64|aarch64]   (default: this machine's architecture)
#   x86_64   swift build -c release --static-swift-stdlib -Xswiftc -static-executable, here
#   aarch64  the same with Debian's Swift 6.2 cross compiler and its arm64 static runtime, in the
#            build root scripts/setup-aarch64.sh makes (run here, through the Swift SDK it writes);
#            the binary runs here too, through the qemu-aarch64 that script registers
# Output: .build/static/gnss-hat-ARCH (stripped) and gnss-hat-ARCH.unstripped beside it (a hard
# link to the linker's output, with symbols, for profiles). Size limits: x86_64 15 MiB, aarch64
# 16 MiB (see below).
# Code layout: every function gets a section of its own (-function-sections) and lld places the
# functions `gnss-hat serve` runs, listed in scripts/static/gnss-hat.order, together at the start of
# the text (--symbol-ordering-file), instead of scattered over its 6.5 MB, each pulling its page
# and the pages the kernel maps around it into the service's resident memory. Measured (serve, one
# watching client): 5.7 MB resident instead of 7.6 with the binary in the page cache as 4 KiB pages,
# 7.0 instead of 7.6 where the kernel holds it in large folios and maps them whole (Linux 6.18 here).
# scripts/profile-order.sh makes the list (on x86_64; Swift's mangled names are the same on aarch64,
# so the aarch64 build uses the same list).
# Environment: GNSSHAT_STATIC_SCRATCH overrides the scratch path (default .build/static, and
# .build/aarch64/static for aarch64); GNSSHAT_STATIC_ORDER=none links without the order
# (scripts/profile-order.sh profiles that build).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-$(uname -m)}
[ "$arch" = arm64 ] && arch=aarch64
host=$(uname -m)
if [ "$arch" = "$host" ]; then
    scratch=${GNSSHAT_STATIC_SCRATCH:-.build/static}
    limit=$((15 * 1024 * 1024))
else
    scratch=${GNSSHAT_STATIC_SCRATCH:-.build/aarch64/static}
    limit=$((16 * 1024 * 1024))
fi
start=$SECONDS
say() { printf 'build-static: %s\n' "$*"; }
die() { printf 'build-static: %s\n' "$*" >&2; exit 1; }

. scripts/static/swift-flags.sh
build_args=(-c release --product gnss-hat --scratch-path "$scratch")
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
    build_args+=("${static_swift_flags[@]}" --static-swift-stdlib -Xswiftc -static-executable)
    for lib in libgpiod.a libi2c.a libssl.a libcrypto.a; do
        [ -n "$(find /usr/lib /usr/local/lib -name "$lib" -print -quit 2>/dev/null)" ] ||
            die "$lib is missing (scripts/setup.sh installs libgpiod-dev, libi2c-dev and libssl-dev)"
    done
    [ -f "$static_mosquitto_prefix/lib/libmosquitto.a" ] ||
        die "$static_mosquitto_prefix/lib/libmosquitto.a is missing (scripts/setup.sh builds it)"
    swift_build() { swift build "$@"; }
    nm_tool=nm
    strip_tool=strip
elif [ "$arch" = aarch64 ]; then
    scripts/setup-aarch64.sh | sed -n '/cross compiler/p'
    . scripts/aarch64/env.sh
    build_args+=("${a64_static_swift_flags[@]}")
    swift_build() { a64_swift build "$@"; }
    nm_tool=aarch64-linux-gnu-nm
    strip_tool=aarch64-linux-gnu-strip
    command -v "$strip_tool" >/dev/null || die "$strip_tool is missing (scripts/setup.sh installs binutils-aarch64-linux-gnu)"
else
    die "unknown architecture '$arch' (x86_64 or aarch64)"
fi

mkdir -p "$scratch"
log=$scratch/build.log
bin=$(swift_build "${build_args[@]}" --show-bin-path 2>/dev/null | tail -1)/gnss-hat
# SwiftPM relinks when a flag changes, not when the order file behind the flag does.
if [ -n "$order" ] && [ -e "$bin" ] && [ "$order" -nt "$bin" ]; then
    rm -f "$bin"
fi
say "swift build ${build_args[*]}"
if ! swift_build "${build_args[@]}" >"$log" 2>&1; then
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
fi
# Full Foundation would bring ICU's data (tens of MB): only FoundationEssentials may be in.
# grep reads all of nm's output (no -q): an early exit would SIGPIPE nm and, under pipefail,
# turn a match into a silent pass.
if "$nm_tool" "$bin" 2>/dev/null | grep -e 'icudt' -e 'ucol_open' >/dev/null; then
    die "the binary contains ICU: something imports Foundation instead of FoundationEssentials"
fi
out=$scratch/gnss-hat-$arch
ln -f "$bin" "$out.unstripped"
if [ -n "$order" ]; then
    listed=$(grep -c . "$order")
    found=$( ("$nm_tool" --defined-only "$bin" 2>/dev/null || true) | awk '{ print $NF }' | LC_ALL=C sort -u |
        LC_ALL=C comm -12 - <(LC_ALL=C sort -u "$order") | wc -l)
    say "code layout: $found of the $listed functions in $order placed first"
    if [ "$found" -lt $((listed * 8 / 10)) ]; then
        say "more than a fifth of the order is stale: run scripts/profile-order.sh to make it again"
    fi
fi
"$strip_tool" -o "$out" "$bin"
unstripped=$(stat -c %s "$bin")
size=$(stat -c %s "$out")
say "$(file -b "$out" | cut -d, -f1-2)"
mib() { awk -v s="$1" 'BEGIN { printf "%.2f", s / 1048576 }'; }
say "size $arch: unstripped $((unstripped / 1024)) KiB, stripped $((size / 1024)) KiB ($(mib "$size") MiB)," \
    "limit $((limit / 1048576)) MiB ($(mib $((limit - size))) MiB to spare) -> $out"
say "built in $((SECONDS - start)) s"
# What the bytes are (docs/code-layout.md has the table): x86_64 14.7 MiB (2026-12-05) = the Swift
# runtime 6.0, GNSSHat's modules 3.4, glibc 1.3, OpenSSL 3.8 (Debian 12's 3.0; its default provider
# registers every algorithm in tables, so --gc-sections cannot drop the unused ones), libmosquitto,
# libgpiod, libi2c 0.1; aarch64 15.9 MiB = the runtime 5.4 (Debian's 6.2), our modules 3.1, glibc 1.1,
# OpenSSL 6.2 (sid's 3.6 with the zstd and zlib it needs: QUIC, SM2 with its 0.5 MiB arm64 table, the
# post-quantum algorithms; see scripts/setup-aarch64.sh for why sid's), the C libraries 0.1. Both
# only fit with lld folding identical functions (--icf=all, scripts/static/swift-flags.sh: 0.6 and
# 0.45 MiB). mqtts:// and ntrip+tls:// need TLS, so the limits are 15 and 16 MiB instead of the 12 MB
# goal without it. Nothing shipped imports Foundation or FoundationEssentials (they added 6 MiB), nor
# anything of _StringProcessing (a `contains` of a string in a string brought the regex engine,
# 1.3 MiB: NTRIP has its own); going over the limit fails the build (scripts/test.sh prints both sizes).
if [ "$size" -ge "$limit" ]; then
    die "stripped size $size bytes is over the $((limit / 1048576)) MiB limit (did a shipped module import Foundation?)"
fi
# Whatever the scratch path, the packaging script finds the binary in .build/static.
if [ "$(cd "$(dirname "$out")" && pwd)" != "$PWD/.build/static" ]; then
    mkdir -p .build/static
    ln -f "$out" ".build/static/gnss-hat-$arch"
fi
