#!/usr/bin/env bash
# Installs everything GNSSHat needs on Debian 12, idempotently: Debian packages (one
# `apt-get update`, only when something is missing), the Python test oracles in a virtual
# environment under .build/venv, and libgpiod 2.1 (v2 API) unpacked into a private prefix
# under .build/libgpiod-v2 (the system keeps its libgpiod 1.6).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf 'setup: %s\n' "$*"; }

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi

# Debian packages: build (pkg-config, libgpiod, libi2c), test oracles and peers (gpsd,
# gpspipe, gpsdecode, python3-gps), emulated hardware-in-loop (QEMU, busybox, kernel
# headers matching Debian's current kernel), small tools the scripts use, and valgrind
# (scripts/profile-order.sh).
PACKAGES=(
    pkg-config gcc make file
    libgpiod-dev gpiod libi2c-dev i2c-tools
    python3 python3-venv python3-gps
    gpsd gpsd-clients gpsd-tools
    qemu-system-x86 busybox-static cpio linux-headers-amd64 xz-utils
    valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    say "Debian packages present"
fi

# Python test oracles, pinned, in a virtual environment of Debian's python3.
VENV=$root/.build/venv
PY_PACKAGES=(pyubx2==1.4.0 pynmeagps==1.1.8 pyrtcm==1.2.1)
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    mkdir -p "$root/.build"
    /usr/bin/python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import pyubx2, pynmeagps' 2>/dev/null; then
    say "installing Python oracles: ${PY_PACKAGES[*]}"
    "$VENV/bin/pip" install -q --cache-dir "$root/.build/pip-cache" "${PY_PACKAGES[@]}"
else
    say "Python oracles present"
fi

# libgpiod 2.1 (v2 API) from bookworm-backports, fetched with a private apt state so the
# system's sources and its libgpiod 1.6 stay untouched.
V2=$root/.build/libgpiod-v2
if [ ! -f "$V2/prefix/lib/pkgconfig/libgpiod.pc" ]; then
    say "fetching libgpiod 2.x from bookworm-backports into $V2"
    rm -rf "$V2"
    mkdir -p "$V2/apt/lists/partial" "$V2/apt/cache/archives/partial" "$V2/debs" "$V2/root"
    echo "deb http://deb.debian.org/debian bookworm-backports main" > "$V2/apt/sources.list"
    APT_PRIVATE=(-q -o Dir::Etc::SourceList="$V2/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$V2/apt/lists" -o Dir::Cache="$V2/apt/cache" -o APT::Sandbox::User=root)
    apt-get "${APT_PRIVATE[@]}" update >/dev/null
    (cd "$V2/debs" && apt-get "${APT_PRIVATE[@]}" download libgpiod-dev/bookworm-backports libgpiod3/bookworm-backports)
    for deb in "$V2"/debs/*.deb; do dpkg-deb -x "$deb" "$V2/root"; done
    # Lay the unpacked files out as a prefix with a pkg-config file that points at it.
    mkdir -p "$V2/prefix/lib/pkgconfig" "$V2/prefix/include"
    cp -a "$V2"/root/usr/include/. "$V2/prefix/include/"
    cp -a "$V2"/root/usr/lib/x86_64-linux-gnu/libgpiod* "$V2/prefix/lib/"
    sed -e "s|^prefix=.*|prefix=$V2/prefix|" \
        -e "s|^libdir=.*|libdir=\${prefix}/lib|" \
        -e "s|^includedir=.*|includedir=\${prefix}/include|" \
        "$V2/root/usr/lib/x86_64-linux-gnu/pkgconfig/libgpiod.pc" > "$V2/prefix/lib/pkgconfig/libgpiod.pc"
    rm -rf "$V2/root" "$V2/apt"
fi
say "libgpiod v2 prefix: $V2/prefix ($(PKG_CONFIG_PATH=$V2/prefix/lib/pkgconfig pkg-config --modversion libgpiod))"
