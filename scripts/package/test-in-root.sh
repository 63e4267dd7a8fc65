#!/usr/bin/env bash
# The life of one gnss-hat package in a Debian root, as root in a mount namespace of its own
# (scripts/package-test.sh runs it under `unshare --mount --fork`: every mount here goes with it).
#
# usage: test-in-root.sh BASE RUN DEB
#   BASE  a Debian root (debootstrap minbase with adduser and systemd); it is not changed: the test
#         runs in an overlay of it whose changes land in RUN/upper
#   RUN   a scratch folder (emptied first)
#   DEB   the package
# Installs DEB with dpkg -i, runs the program, checks the user, groups, state directory and unit
# (systemd-analyze verify), installs it again with apt (idempotent scripts), enables the unit as an owner
# would, removes and purges it, and checks that nothing it brought is left. Exits 1 at the first
# failed check.
set -euo pipefail
base=$1 run=$2 deb=$3
[ -x "$base/usr/bin/dpkg" ] || { echo "test-in-root: $base is no Debian root" >&2; exit 1; }
step_start=$SECONDS
arch=$(dpkg-deb -f "$deb" Architecture)
version=$(dpkg-deb -f "$deb" Version)
say() { printf 'package-test [%s]: %s\n' "$arch" "$*"; }
fail() { printf 'package-test [%s]: FAILED: %s\n' "$arch" "$*" >&2; exit 1; }
step() { say "$1 ($((SECONDS - step_start)) s)"; step_start=$SECONDS; }
check() { local what=$1; shift; "$@" || fail "$what"; }

rm -rf "$run"
mkdir -p "$run/upper" "$run/work" "$run/root"
root=$run/root
mount -t overlay overlay -o "lowerdir=$base,upperdir=$run/upper,workdir=$run/work" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
cp "$deb" "$root/tmp/gnss-hat.deb"
# A command in the root, with a clean environment.
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }
# Runs a command in the root, keeping its output in $output; fails with that output if it fails.
run_in_root() {
    output=$(in_root "$@" 2>&1) || fail "$* exited with $?: $output"
}
contains() { grep -qF -- "$2" <<<"$1"; }
has_line() { grep -qxF -- "$2" <<<"$1"; }

# 1. Install.
run_in_root dpkg -i /tmp/gnss-hat.deb
check "dpkg -i printed a warning or error: $output" bash -c '! grep -qi "warning\|error" <<<"$1"' _ "$output"
run_in_root dpkg-query -W -f '${Status} ${Version}' gnss-hat
check "after dpkg -i: $output" [ "$output" = "install ok installed $version" ]
mapfile -t installed < <(in_root dpkg-query -L gnss-hat)
step "dpkg -i: installed ${#installed[@]} paths"

# 2. The program, in the root (a foreign one through binfmt_misc's qemu-user).
run_in_root gnss-hat --version
check "gnss-hat --version said '$output'" [ "$output" = "gnss-hat $version" ]
run_in_root gnss-hat boards
for board in simulator uputronics-gps-rtc adafruit-ultimate-gps; do
    check "gnss-hat boards does not list $board as built in: $output" has_line "$output" "$board  [built-in]"
done
run_in_root gnss-hat info --board simulator
for line in "board: simulator (Simulated u-blox receiver (no hardware))" "chip: ublox-gen9 simulated ZED-F9P" \
    "protocol version: 27.31"; do
    check "gnss-hat info --board simulator lacks '$line': $output" has_line "$output" "$line"
done
check "no manual page" [ -s "$root/usr/share/man/man1/gnss-hat.1.gz" ]
check "no bash completion" [ -s "$root/usr/share/bash-completion/completions/gnss-hat" ]
step "gnss-hat --version, boards and info --board simulator ran in the root"

# 3. The user, its groups and its state directory; the groups Debian lacks are system groups.
run_in_root getent passwd gnss-hat
IFS=: read -r _ _ uid gid _ home shell <<<"$output"
check "gnss-hat is no system user (uid $uid)" [ "$uid" -lt 1000 ]
check "gnss-hat's home is $home" [ "$home" = /var/lib/gnss-hat ]
check "gnss-hat's shell is $shell" [ "$shell" = /usr/sbin/nologin ]
run_in_root id -nG gnss-hat
groups_of_user=$output
for group in gnss-hat gpio dialout i2c; do
    check "gnss-hat is not in $group (groups: $groups_of_user)" has_line "$(tr ' ' '\n' <<<"$groups_of_user")" "$group"
    run_in_root getent group "$group"
    check "group $group is no system group: $output" [ "$(cut -d: -f3 <<<"$output")" -lt 1000 ]
done
run_in_root stat -c '%a %U %G' /var/lib/gnss-hat
check "/var/lib/gnss-hat is '$output'" [ "$output" = "700 gnss-hat gnss-hat" ]
run_in_root dpkg-query -W -f '${Conffiles}' gnss-hat
check "/etc/default/gnss-hat is no conffile: $output" contains "$output" "/etc/default/gnss-hat "
step "user gnss-hat (uid $uid) in $groups_of_user; /var/lib/gnss-hat 0700; conffile"

# 4. The unit: installed, not enabled, and systemd (the host's systemd-analyze, on the root's units
# and program) finds nothing to say about it. A broken copy must make it speak, or the check is void.
output=$(systemctl --root="$root" is-enabled gnss-hat.service 2>&1) || true
check "gnss-hat.service is '$output' after installing, not disabled" [ "$output" = disabled ]
verify() { systemd-analyze verify --root="$root" --man=no --recursive-errors=no "$@" 2>&1; }
output=$(verify gnss-hat.service) || fail "systemd-analyze verify gnss-hat.service: $output"
check "systemd-analyze verify gnss-hat.service said: $output" [ -z "$output" ]
sed -e 's|^ExecStart=/usr/bin/gnss-hat |ExecStart=/usr/bin/gnss-hat-missing |' -e 's|^Nice=|Nicety=|' \
    "$root/usr/lib/systemd/system/gnss-hat.service" >"$root/etc/systemd/system/gnss-hat-broken.service"
output=$(verify gnss-hat-broken.service) || true
check "systemd-analyze verify did not see the broken unit's missing program: $output" contains "$output" gnss-hat-missing
check "systemd-analyze verify did not see the broken unit's unknown key: $output" contains "$output" Nicety
rm "$root/etc/systemd/system/gnss-hat-broken.service"
exposure=$(systemd-analyze security --root="$root" --offline=yes --no-pager gnss-hat.service 2>/dev/null |
    sed -n 's/^→ Overall exposure level for gnss-hat.service: //p')
step "systemd-analyze verify: clean (a broken copy is caught); security exposure: ${exposure:-not shown}"

# 5. Installing again, the way the README tells Pi owners (apt install ./FILE), runs the scripts again:
# the same user, nothing added twice. (Nothing to download: adduser is there, recommends are off.)
passwd_before=$(in_root getent passwd gnss-hat; in_root getent group gpio i2c dialout gnss-hat)
run_in_root apt-get install --reinstall --no-install-recommends -y -q /tmp/gnss-hat.deb
check "apt-get install --reinstall did not run the package's scripts: $output" contains "$output" \
    "Setting up gnss-hat ($version)"
passwd_after=$(in_root getent passwd gnss-hat; in_root getent group gpio i2c dialout gnss-hat)
check "reinstalling changed the user or groups: '$passwd_before' -> '$passwd_after'" \
    [ "$passwd_before" = "$passwd_after" ]
step "apt install --reinstall ./gnss-hat.deb: user and groups unchanged"

# 6. The owner enables the unit, edits the settings and keeps state; then removes the package.
systemctl --root="$root" enable gnss-hat.service >/dev/null 2>&1 || fail "systemctl --root enable gnss-hat.service"
check "enabling made no multi-user.target.wants link" \
    [ -L "$root/etc/systemd/system/multi-user.target.wants/gnss-hat.service" ]
echo 'GNSSHAT_BOARD=uputronics-gps-rtc' >>"$root/etc/default/gnss-hat"
echo journal >"$root/var/lib/gnss-hat/state"
run_in_root dpkg -r gnss-hat
run_in_root dpkg-query -W -f '${Status}' gnss-hat
check "after dpkg -r: $output" [ "$output" = "deinstall ok config-files" ]
for path in /usr/bin/gnss-hat /usr/lib/systemd/system/gnss-hat.service /usr/share/man/man1/gnss-hat.1.gz; do
    check "dpkg -r left $path" [ ! -e "$root$path" ]
done
check "dpkg -r removed the edited conffile" grep -qx 'GNSSHAT_BOARD=uputronics-gps-rtc' "$root/etc/default/gnss-hat"
check "dpkg -r removed the state" [ -f "$root/var/lib/gnss-hat/state" ]
step "dpkg -r: program gone; the edited /etc/default/gnss-hat and the state kept"

# 7. Purge: nothing of the package is left. Every change the overlay holds is one dpkg or adduser
# made to their own databases (the gnss-hat user and the groups stay, as Debian leaves system users).
run_in_root dpkg --purge gnss-hat
output=$(in_root dpkg-query -W -f '${Status}' gnss-hat 2>&1) && fail "dpkg still knows gnss-hat after purge: $output"
for path in "${installed[@]}" /etc/default/gnss-hat /var/lib/gnss-hat \
    /etc/systemd/system/multi-user.target.wants/gnss-hat.service; do
    if [ -e "$root$path" ] || [ -L "$root$path" ]; then
        [ -d "$root$path" ] && [ -d "$base$path" ] && continue  # a directory of the base, like /usr/bin
        fail "dpkg --purge left $path"
    fi
done
left=()
while IFS= read -r -d '' entry; do
    path=${entry#* }
    [ "${entry%% *}" = d ] && [ -d "$base/$path" ] && continue  # a directory of the base, copied up
    case $path in
        var/lib/dpkg/info/gnss-hat.*) ;;
        var/lib/dpkg | var/lib/dpkg/* | var/log/dpkg.log) continue ;;
        var/cache/apt | var/cache/apt/* | var/lib/apt | var/lib/apt/* | var/log/apt | var/log/apt/*) continue ;;
        # debconf's database, rewritten when apt preconfigures (the package has no templates).
        var/cache/debconf/*.dat) continue ;;
        etc/passwd | etc/passwd- | etc/group | etc/group- | etc/shadow | etc/shadow- | etc/gshadow | etc/gshadow-)
            continue ;;
        # The locks of the shadow suite (lckpwdf) and of adduser (in /run, a tmpfs on a running system).
        etc/.pwd.lock | run/adduser) continue ;;
    esac
    left+=("$path (${entry%% *})")
done < <(cd "$run/upper" && find . -mindepth 1 -printf '%y %P\0')
[ ${#left[@]} -eq 0 ] || fail "after purge the root has new or changed entries: ${left[*]}"
step "dpkg --purge: no file of the package left, state and enablement gone"
