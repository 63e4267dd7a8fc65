#!/usr/bin/env bash
# Installs everything GNSSHat needs on Debian 12, idempotently: Debian packages (one
# `apt-get update`, only when something is missing), the Python test oracles in a virtual
# environment under .build/venv, libgpiod 2.1 (v2 API) unpacked into a private prefix
# under .build/libgpiod-v2 (the system keeps its libgpiod 1.6), and a static libmosquitto.a
# built from Debian's own source package into .build/mosquitto-static (Debian ships only the
# shared library; scripts/build-static.sh links the static one).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf 'setup: %s\n' "$*"; }

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi

# Debian packages: build (pkg-config, libgpiod, libi2c), test oracles and peers (gpsd,
# gpspipe, gpsdecode, python3-gps), emulated hardware-in-loop (QEMU, busybox, kernel
# headers matching Debian's current kernel; for the arm64 rig qemu-system-arm and the cross gcc that
# builds its kernel modules), the aarch64 toolchain's needs (scripts/setup-aarch64.sh: debootstrap,
# qemu-user-static; binutils-aarch64-linux-gnu strips), small tools the scripts use, valgrind
# (scripts/profile-order.sh), and the MQTT fleet path: libmosquitto for the build, the broker
# and its command-line clients for the tests (each test starts its own broker on a free
# loopback port; a system broker that the package may start on 1883 is never used), openssl
# for the tests' certificates, Python paho-mqtt as a peer, and what building libmosquitto.a
# takes (dpkg-dev for `apt-get source`, cmake, libssl-dev for OpenSSL's headers and its
# static libssl.a / libcrypto.a). paho-mqtt is Debian's (seen by /usr/bin/python3 only), not
# pip's: the typical gpsd-to-MQTT bridge the benchmark runs beside ours is Debian's python3-gps
# with paho-mqtt, and python3-gps exists only for Debian's python. The Debian packages
# (scripts/package.sh, scripts/package-test.sh): lintian, debootstrap for the test roots, systemd for
# systemd-analyze verify and systemctl --root (no running systemd needed), and bash-completion to
# try the packaged completion. NTRIP: RTKLIB's str2str (rtklib) as a caster and socat's OpenSSL
# listener as a TLS front for the tests' own caster. Network faults (scripts/netfault.sh): iproute2 for
# the namespaces, the veth pair and tc's tbf, nftables for the loss and the partition. The soak's plot
# (scripts/soak.sh): gnuplot.
PACKAGES=(
    pkg-config gcc make file
    libgpiod-dev gpiod libi2c-dev i2c-tools
    python3 python3-venv python3-gps
    gpsd gpsd-clients gpsd-tools
    qemu-system-x86 busybox-static cpio linux-headers-amd64 xz-utils
    qemu-system-arm gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu debootstrap qemu-user-static
    valgrind
    libmosquitto-dev mosquitto mosquitto-clients python3-paho-mqtt openssl
    dpkg-dev cmake libssl-dev
    lintian debootstrap systemd bash-completion
    rtklib socat
    iproute2 nftables gnuplot-nox
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

# Python test oracles and peers, pinned, in a virtual environment of Debian's python3: pygnssutils'
# gnssserver is an NTRIP caster for the NTRIP tests (its dependencies pinned with it).
VENV=$root/.build/venv
PY_PACKAGES=(pyubx2==1.4.0 pynmeagps==1.1.8 pyrtcm==1.2.1
    pygnssutils==1.3.1 certifi==2026.10.19.post1 pyqgc==1.0.1 pysbf2==1.0.7 pyserial==3.5 pyspartn==1.1.1
    pyubxutils==1.0.6 pyunigps==1.0.1)
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    mkdir -p "$root/.build"
    /usr/bin/python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import pyubx2, pynmeagps, pygnssutils' 2>/dev/null || [ ! -x "$VENV/bin/gnssserver" ]; then
    say "installing Python oracles: ${PY_PACKAGES[*]}"
    # python -m pip: a venv copied from another checkout keeps that checkout's path in bin/pip.
    "$VENV/bin/python" -m pip install -q --cache-dir "$root/.build/pip-cache" "${PY_PACKAGES[@]}"
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

# libmosquitto.a: the client library alone (no broker, clients, plugins or C++ wrapper), with
# TLS against Debian's OpenSSL, built from the source package of the very version whose headers
# libmosquitto-dev installed, fetched with a private apt state (a deb-src entry for the same
# archive) so the system's sources stay untouched. Rebuilt only when that version changes.
MS=$root/.build/mosquitto-static
mosquitto_version=$(dpkg-query -W -f='${Version}' libmosquitto-dev)
if [ ! -f "$MS/prefix/lib/libmosquitto.a" ] || [ "$(cat "$MS/prefix/VERSION" 2>/dev/null)" != "$mosquitto_version" ]
then
    say "building libmosquitto.a $mosquitto_version from Debian's source package into $MS"
    rm -rf "$MS"
    mkdir -p "$MS/apt/lists/partial" "$MS/apt/cache/archives/partial" "$MS/src" "$MS/build"
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    {
        echo "deb-src http://deb.debian.org/debian $codename main"
        echo "deb-src http://deb.debian.org/debian $codename-updates main"
        echo "deb-src http://deb.debian.org/debian-security $codename-security main"
    } > "$MS/apt/sources.list"
    APT_PRIVATE=(-q -o Dir::Etc::SourceList="$MS/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$MS/apt/lists" -o Dir::Cache="$MS/apt/cache" -o APT::Sandbox::User=root)
    apt-get "${APT_PRIVATE[@]}" update >/dev/null
    # apt-get source checks the files against the signed index and unpacks them with Debian's
    # patches applied (dpkg-source -x).
    (cd "$MS/src" && apt-get "${APT_PRIVATE[@]}" source "mosquitto=$mosquitto_version" >"$MS/source.log" 2>&1) ||
        { cat "$MS/source.log" >&2; exit 1; }
    src=$(find "$MS/src" -mindepth 1 -maxdepth 1 -type d -name 'mosquitto-*' -print -quit)
    # Debian's own compiler flags, one section per function and datum so the static link keeps only
    # what gnss-hat calls, and PIC since the static executable may be position independent.
    (
        cd "$MS/build"
        CFLAGS="$(dpkg-buildflags --get CFLAGS) -ffunction-sections -fdata-sections" \
            CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)" \
            cmake "$src" -DCMAKE_BUILD_TYPE=None -DWITH_STATIC_LIBRARIES=ON -DWITH_PIC=ON -DWITH_TLS=ON \
            -DWITH_CJSON=OFF -DWITH_LIB_CPP=OFF -DWITH_CLIENTS=OFF -DWITH_BROKER=OFF -DWITH_APPS=OFF \
            -DWITH_PLUGINS=OFF -DDOCUMENTATION=OFF -DWITH_SRV=OFF -DWITH_WEBSOCKETS=OFF
        cmake --build . --target libmosquitto_static -j"$(nproc)"
    ) >"$MS/build.log" 2>&1 || { tail -30 "$MS/build.log" >&2; exit 1; }
    mkdir -p "$MS/prefix/lib" "$MS/prefix/include"
    cp "$MS/build/lib/libmosquitto_static.a" "$MS/prefix/lib/libmosquitto.a"
    cp "$src/include/mosquitto.h" "$src/include/mqtt_protocol.h" "$MS/prefix/include/"
    echo "$mosquitto_version" > "$MS/prefix/VERSION"
    rm -rf "$MS/apt" "$MS/src" "$MS/build"
fi
say "libmosquitto.a $(cat "$MS/prefix/VERSION"): $MS/prefix/lib/libmosquitto.a"
