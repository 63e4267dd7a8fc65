#!/usr/bin/env bash
# Tests the Debian packages as a Pi owner would meet them, printing each step's time.
#
# usage: scripts/package-test.sh [--arch amd64|arm64|all]   (default: all)
#   1. scripts/package.sh builds the packages (from .build/static/gnss-hat-{x86_64,aarch64});
#   2. lintian: no error (E:) on either; its other tags are printed;
#   3. the bash completion, sourced into bash with bash-completion, completes commands, options,
#      power's arguments and board names;
#   4. per architecture, a Debian bookworm root (debootstrap --variant=minbase with adduser and systemd,
#      made once and kept in .build/packages/roots; the arm64 one runs under the qemu-user that
#      binfmt_misc has registered), in an overlay of which scripts/package/test-in-root.sh installs,
#      runs, checks, reinstalls, removes and purges the package.
# Needs root (sudo otherwise), debootstrap, lintian and bash-completion (scripts/setup.sh), and for
# arm64 on another machine an aarch64 binfmt_misc entry (scripts/setup-aarch64.sh registers one).
# GNSSHAT_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step_start=$SECONDS
say() { printf 'package-test: %s\n' "$*"; }
die() { printf 'package-test: FAILED: %s\n' "$*" >&2; exit 1; }
step() { say "$1 ($((SECONDS - step_start)) s)"; step_start=$SECONDS; }
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
MIRROR=${GNSSHAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
INCLUDE=adduser,systemd
ROOTS=$PWD/.build/packages/roots

arches=(amd64 arm64)
case ${1:-} in
    "") ;;
    --arch)
        case ${2:-} in
            amd64 | arm64) arches=("$2") ;;
            all) ;;
            *) die "--arch takes amd64, arm64 or all" ;;
        esac
        ;;
    *) die "usage: scripts/package-test.sh [--arch amd64|arm64|all]" ;;
esac
for tool in debootstrap lintian unshare systemd-analyze systemctl; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs it)"
done
[ -f /usr/share/bash-completion/bash_completion ] || die "bash-completion is missing (scripts/setup.sh installs it)"

# 1. The packages.
arch_option=all
[ ${#arches[@]} -eq 2 ] || arch_option=${arches[0]}
scripts/package.sh --arch "$arch_option"
declare -A deb
for arch in "${arches[@]}"; do
    # The newest: the one just built.
    deb[$arch]=$(find .build/packages -maxdepth 1 -name "gnss-hat_*_$arch.deb" -printf '%T@ %p\n' |
        sort -n | tail -1 | cut -d' ' -f2-)
    [ -n "${deb[$arch]}" ] || die "scripts/package.sh made no $arch package"
done
step "packages built"

# 2. lintian.
for arch in "${arches[@]}"; do
    tags=$(lintian -EIL +pedantic --show-overrides "${deb[$arch]}" 2>&1 | grep -v '^running with root privileges' |
        grep -v '^N:' || true)
    printf '%s\n' "$tags" | sed "s/^/package-test: lintian [$arch]: /"
    if grep -q '^E:' <<<"$tags"; then die "lintian reports errors on ${deb[$arch]}"; fi
done
step "lintian: no errors"

# 3. The bash completion of the package for this machine, with its gnss-hat on the PATH.
native=$(dpkg --print-architecture)
completion_root=.build/packages/$native/root
if [[ " ${arches[*]} " == *" $native "* ]]; then
    # Completes the words of $1 (the last one is the word under the cursor) and prints the candidates.
    # In an empty folder with files a.json and b.txt and a folder d (what file names complete to).
    completion_folder=.build/packages/completion-folder
    rm -rf "$completion_folder" && mkdir -p "$completion_folder/d" && touch "$completion_folder"/{a.json,b.txt}
    complete_line() {
        (cd "$completion_folder" && PATH=$OLDPWD/$completion_root/usr/bin:$PATH bash -c '
            . /usr/share/bash-completion/bash_completion
            . "$1"
            read -r -a COMP_WORDS <<<"$2"
            [[ $2 == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$2 COMP_POINT=${#2}
            _gnss_hat gnss-hat "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
        ' _ "$OLDPWD/$completion_root/usr/share/bash-completion/completions/gnss-hat" "$1")
    }
    expect_completion() {
        local got
        got=$(complete_line "$1")
        [ "$got" = "$2" ] || die "completing '$1' gave '$got', not '$2'"
    }
    expect_completion "gnss-hat s" "serve simulate "
    expect_completion "gnss-hat power " "off on status "
    expect_completion "gnss-hat serve --mqtt-p" "--mqtt-password-file "
    expect_completion "gnss-hat info --j" "--json "
    expect_completion "gnss-hat watch --board simulator-c" "simulator-cut-supply "
    expect_completion "gnss-hat watch --board " "a.json adafruit-ultimate-gps d simulator simulator-cut-supply simulator-rtk sparkfun-gps-rtk2 sparkfun-zed-f9r-phat uputronics-gps-rtc waveshare-l76x waveshare-lc29h waveshare-max-m8q "
    expect_completion "gnss-hat ttff --budget " ""
    expect_completion "gnss-hat decode " "- a.json b.txt d "
    expect_completion "gnss-hat serve --state-dir " "d "
    rm -rf "$completion_folder"
    step "bash completion: commands, options, power's arguments, board names, files"
fi

# 4. Each package in a Debian root of its architecture.
for arch in "${arches[@]}"; do
    base=$ROOTS/$SUITE-$arch
    recipe="$SUITE $arch minbase $INCLUDE $MIRROR"
    if [ "$(cat "$base.recipe" 2>/dev/null)" != "$recipe" ]; then
        say "debootstrap $SUITE $arch (minbase, $INCLUDE) into $base"
        "${SUDO[@]}" rm -rf "$base" "$base.new"
        mkdir -p "$ROOTS/cache-$arch"
        # debootstrap mounts /proc and /sys in the root: in a mount namespace of its own they go with it.
        "${SUDO[@]}" unshare --mount --fork debootstrap --arch="$arch" --variant=minbase --include="$INCLUDE" \
            --cache-dir="$ROOTS/cache-$arch" "$SUITE" "$base.new" "$MIRROR" >"$base.log" 2>&1 ||
            { tail -15 "$base.log" >&2; die "debootstrap $SUITE $arch failed (whole log: $base.log; a foreign root needs qemu-user registered with binfmt_misc)"; }
        "${SUDO[@]}" mv "$base.new" "$base"
        echo "$recipe" >"$base.recipe"
        step "debootstrap $SUITE $arch"
    else
        step "debootstrap $SUITE $arch: cached in $base"
    fi
    "${SUDO[@]}" unshare --mount --fork scripts/package/test-in-root.sh "$base" "$PWD/.build/packages/test-$arch" \
        "${deb[$arch]}"
    step "$arch package tested"
done
say "all passed in $((SECONDS - start)) s"
