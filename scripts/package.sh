#!/usr/bin/env bash
# Builds the Debian packages of gnss-hat from the static executables, with Debian's own dpkg-deb
# (no debhelper): .build/packages/gnss-hat_VERSION_amd64.deb and gnss-hat_VERSION_arm64.deb.
#
# usage: scripts/package.sh [--arch amd64|arm64|all] [--binary ARCH=PATH]...
#   --arch     which packages (default: all)
#   --binary   the executable packaged for ARCH (defaults: .build/static/gnss-hat-x86_64 for amd64,
#              made by scripts/build-static.sh; .build/static/gnss-hat-aarch64 for arm64, made by the
#              aarch64 build)
# VERSION is what the executable says (`gnss-hat --version`); the executables must agree. Each one is
# run here (a foreign one through binfmt_misc's qemu-user) for its version, manual page and bash
# completion, which scripts/package/help-docs.py makes from its --help output.
#
# A package holds /usr/bin/gnss-hat; the systemd unit made from scripts/gnss-hat.service (the program
# in /usr/bin), installed but neither enabled nor started; /etc/default/gnss-hat (a conffile:
# scripts/package/default); the manual page and the bash completion; copyright and changelog.gz; the
# maintainer scripts scripts/package/{postinst,prerm,postrm} (the gnss-hat system user in the gpio,
# dialout and i2c groups, its state directory /var/lib/gnss-hat, removed on purge).
# File times are SOURCE_DATE_EPOCH's (default: the last commit's), so the same inputs make the same
# packages. GNSSHAT_MAINTAINER overrides the Maintainer field.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
say() { printf 'package: %s\n' "$*"; }
die() { printf 'package: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '5,9s/^# \{0,1\}//p' "$0"; }
usage_error() { printf 'package: %s\n' "$*" >&2; usage >&2; exit 2; }

out=.build/packages
maintainer=${GNSSHAT_MAINTAINER:-GNSSHat maintainers <maintainers@users.noreply.a-seed-0f7105d7.example>}
declare -A binary=([amd64]=.build/static/gnss-hat-x86_64 [arm64]=.build/static/gnss-hat-aarch64)
declare -A build_hint=([amd64]="run scripts/build-static.sh x86_64" [arm64]="run scripts/build-static.sh aarch64")
# What file(1) says of an executable for the architecture.
declare -A machine=([amd64]="x86-64" [arm64]="ARM aarch64")

canonical_arch() {
    case $1 in
        amd64 | x86_64) echo amd64 ;;
        arm64 | aarch64) echo arm64 ;;
        *) usage_error "unknown architecture '$1' (amd64 or arm64)" ;;
    esac
}

arches=(amd64 arm64)
while [ $# -gt 0 ]; do
    case $1 in
        --arch | --arch=*)
            if [ "$1" = --arch ]; then [ $# -ge 2 ] || usage_error "--arch needs amd64, arm64 or all"; value=$2; shift
            else value=${1#--arch=}; fi
            if [ "$value" = all ]; then arches=(amd64 arm64); else arches=("$(canonical_arch "$value")"); fi
            ;;
        --binary | --binary=*)
            if [ "$1" = --binary ]; then [ $# -ge 2 ] || usage_error "--binary needs ARCH=PATH"; value=$2; shift
            else value=${1#--binary=}; fi
            [[ $value == *=?* ]] || usage_error "--binary needs ARCH=PATH, not '$value'"
            binary[$(canonical_arch "${value%%=*}")]=${value#*=}
            build_hint[$(canonical_arch "${value%%=*}")]="check --binary $value"
            ;;
        -h | --help) usage; exit 0 ;;
        *) usage_error "unknown argument '$1'" ;;
    esac
    shift
done

for tool in dpkg-deb python3 gzip file; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs it)"
done

# The executables: present, static, stripped, of the right architecture, and runnable here.
version=
for arch in "${arches[@]}"; do
    bin=${binary[$arch]}
    [ -f "$bin" ] || die "no $arch executable at $bin: ${build_hint[$arch]}"
    description=$(file -b "$bin")
    [[ $description == *"${machine[$arch]}"* ]] || die "$bin is not an $arch executable: $description"
    [[ $description == *"statically linked"* ]] || die "$bin is not statically linked: $description"
    [[ $description == *", stripped"* ]] || die "$bin is not stripped: $description"
    said=$("$bin" --version 2>&1) ||
        die "$bin --version failed (${said%%$'\n'*}): an executable older than gnss-hat --version, or one this machine cannot run (a foreign one needs qemu-user registered with binfmt_misc)"
    [[ $said =~ ^gnss-hat\ ([0-9][0-9A-Za-z.+~]*)$ ]] || die "$bin --version said '$said', not 'gnss-hat VERSION'"
    if [ -n "$version" ] && [ "${BASH_REMATCH[1]}" != "$version" ]; then
        die "the executables disagree: $bin is ${BASH_REMATCH[1]}, the other $version"
    fi
    version=${BASH_REMATCH[1]}
done

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
date_rfc2822=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
date_day=$(date -u +%Y-%m-%d -d "@$SOURCE_DATE_EPOCH")

# The unit for the package: scripts/gnss-hat.service with the program in /usr/bin and its paragraph on
# installing by hand replaced by how to enable the packaged unit.
packaged_unit() {
    awk '
        /^# Install by hand/ {
            print "# Installed by the gnss-hat Debian package, neither enabled nor started. To run it:"
            print "#   sudo systemctl disable --now gpsd.socket gpsd.service     # if gpsd is installed: both want port 2947"
            print "#   sudo systemctl enable --now gnss-hat"
            print "# Changes of your own go in a drop-in (sudo systemctl edit gnss-hat): this file is replaced on upgrade."
            skip = 1
            next
        }
        skip && /^#$/ { skip = 0 }
        !skip { print }
    ' scripts/gnss-hat.service | sed 's|^ExecStart=/usr/local/bin/gnss-hat |ExecStart=/usr/bin/gnss-hat |'
}

control() {
    cat <<EOF
Package: gnss-hat
Version: $version
Architecture: $1
Maintainer: $maintainer
Installed-Size: $2
Depends: adduser
Recommends: chrony
Suggests: gpsd-clients
Section: misc
Priority: optional
Description: Raspberry Pi GNSS hat service, receiver powered only on demand
 GNSSHat runs a GNSS (GPS) receiver hat on a Raspberry Pi and keeps the
 receiver powered only while somebody listens: the first client switches
 it on, and it goes off a little after the last one leaves.
 .
 gnss-hat serve is a gpsd-compatible service (gpsd's JSON protocol on port
 2947, for gpspipe, cgps, python3-gps, chrony, Home Assistant and others)
 that can also feed chrony's refclock sockets and publish fixes to an MQTT
 broker. Other commands show the receiver live, decode captures, switch the
 power by hand, detect the receiver and measure the time to first fix.
 .
 Boards of Adafruit, SparkFun, Uputronics and Waveshare are built in, and a
 simulator board lets everything run without hardware. The program is one
 static executable. The systemd unit gnss-hat.service is installed but not
 enabled.
EOF
}

changelog() {
    cat <<EOF
gnss-hat ($version) unstable; urgency=medium

  * GNSSHat $version (gnss-hat --version), packaged by scripts/package.sh
    from the static executable.

 -- $maintainer  $date_rfc2822
EOF
}

# dpkg-gencontrol's rule: each file's size in KiB rounded up, and 1 for every other entry.
installed_size() {
    find "$1" -mindepth 1 -path "$1/DEBIAN" -prune -o -printf '%y %s\n' |
        awk '{ kib += ($1 == "f") ? int(($2 + 1023) / 1024) : 1 } END { print kib }'
}

build_package() {
    local arch=$1 bin=${binary[$1]}
    local stage=$out/$arch/root deb=$out/gnss-hat_${version}_$arch.deb
    rm -rf "$stage"
    mkdir -p "$stage/DEBIAN"
    install -D -m 0755 "$bin" "$stage/usr/bin/gnss-hat"
    packaged_unit >"$out/$arch/gnss-hat.service"
    grep -q '^ExecStart=/usr/bin/gnss-hat serve ' "$out/$arch/gnss-hat.service" &&
        ! grep -q '/usr/local\|Install by hand' "$out/$arch/gnss-hat.service" ||
        die "scripts/gnss-hat.service no longer has the shape packaged_unit rewrites (ExecStart=/usr/local/bin/gnss-hat serve, '# Install by hand' paragraph)"
    install -D -m 0644 "$out/$arch/gnss-hat.service" "$stage/usr/lib/systemd/system/gnss-hat.service"
    install -D -m 0644 scripts/package/default "$stage/etc/default/gnss-hat"

    mkdir -p "$stage/usr/share/man/man1" "$stage/usr/share/bash-completion/completions"
    python3 scripts/package/help-docs.py "$bin" --version "$version" --date "$date_day" \
        --man "$stage/usr/share/man/man1/gnss-hat.1" \
        --completion "$stage/usr/share/bash-completion/completions/gnss-hat"
    gzip -9n "$stage/usr/share/man/man1/gnss-hat.1"

    install -D -m 0644 scripts/package/copyright "$stage/usr/share/doc/gnss-hat/copyright"
    # changelog.gz, not changelog.Debian.gz: GNSSHat is its own upstream and its packaging lives in its
    # tree, a native package in Debian's terms (a version without a Debian revision).
    changelog | gzip -9n >"$stage/usr/share/doc/gnss-hat/changelog.gz"
    install -D -m 0644 scripts/package/lintian-overrides "$stage/usr/share/lintian/overrides/gnss-hat"

    for script in postinst prerm postrm; do
        install -m 0755 "scripts/package/$script" "$stage/DEBIAN/$script"
    done
    echo /etc/default/gnss-hat >"$stage/DEBIAN/conffiles"
    # md5sums of every file but the conffiles (dpkg keeps theirs in its status), as dh_md5sums does.
    (cd "$stage" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
        LC_ALL=C sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
    control "$arch" "$(installed_size "$stage")" >"$stage/DEBIAN/control"
    chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
    find "$stage" -type d -exec chmod 0755 {} +
    find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

    rm -f "$deb"
    dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
    say "$deb: $(stat -c %s "$deb") bytes ($(($(stat -c %s "$deb") / 1024)) KiB; installed $(installed_size "$stage") KiB)"
}

mkdir -p "$out"
for arch in "${arches[@]}"; do
    build_package "$arch"
done
say "gnss-hat $version packaged in $((SECONDS - start)) s"
