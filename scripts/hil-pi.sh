#!/usr/bin/env bash
# Hardware-in-loop on a real Raspberry Pi with a GNSS hat: checks the board's devices and
# permissions, identifies the receiver, then `gnss-hat ttff` powers it on, times a cold start,
# checks the enable line (where the board has one) is inactive after the last subscriber, and
# times a hot start after a power cycle. Prints a report; keeps it in .build/hil-pi/.
#
# usage: scripts/hil-pi.sh --board NAME|PATH [--binary PATH] [--budget SECONDS] [--off SECONDS]
#   --board    the hat's board (gnss-hat boards lists them); required: there is no default hat
#   --binary   the gnss-hat to run (default: .build/static/gnss-hat-$(uname -m), else gnss-hat on PATH)
#   --budget   the longest wait for each fix (default 180)
#   --off      seconds off before the hot start (default 10)
# Exit status: 0 passed; 1 a measurement failed; 2 bad usage; 3 not a Pi with this hat (refused).
set -euo pipefail
cd "$(dirname "$0")/.."
board=
binary=
budget=180
off=10
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }
refuse() { printf 'hil-pi: refused: %s\n' "$*" >&2; exit 3; }
while [ $# -gt 0 ]; do
    case $1 in
        --board) board=${2:?--board needs a name}; shift ;;
        --binary) binary=${2:?--binary needs a path}; shift ;;
        --budget) budget=${2:?}; shift ;;
        --off) off=${2:?}; shift ;;
        -h|--help) usage 0 ;;
        *) printf 'hil-pi: unknown option %s\n' "$1" >&2; usage 2 ;;
    esac
    shift
done
[ -n "$board" ] || { printf 'hil-pi: --board is required (the hat on this Pi)\n' >&2; usage 2; }

# --- the machine: a Raspberry Pi ---------------------------------------------------------------
model=$( { tr -d '\0' </proc/device-tree/model; } 2>/dev/null || true)
case $model in
    "Raspberry Pi"*) ;;
    *) refuse "this is not a Raspberry Pi (/proc/device-tree/model: ${model:-absent}); run it on the Pi that carries the hat" ;;
esac

if [ -z "$binary" ]; then
    binary=.build/static/gnss-hat-$(uname -m)
    [ -x "$binary" ] || binary=$(command -v gnss-hat || true)
fi
[ -n "$binary" ] && [ -x "$binary" ] || refuse "no gnss-hat binary (scripts/build-static.sh, or copy one and pass --binary)"
[ "$board" != simulator ] || refuse "the simulator board is not hardware; name the hat (gnss-hat boards)"

out=.build/hil-pi
mkdir -p "$out"
report=$out/report.txt
: >"$report"
log() { printf '%s\n' "$*" | tee -a "$report"; }
log "hil-pi: $(date -u +%FT%TZ) on $model, $(uname -r), board $board, $("$binary" --help >/dev/null && echo "$binary")"

# --- the board's devices and permissions -------------------------------------------------------
status=0
"$binary" power status --board "$board" >"$out/status.txt" 2>&1 || status=$?
sed 's/^/  /' "$out/status.txt" | tee -a "$report"
case $status in
    0) ;;
    3) refuse "the board '$board' does not load (see above)" ;;
    *) refuse "the board's GPIO is not usable here (exit $status; see above: GPIO chip, lines held by another program?)" ;;
esac
if grep -q ': missing$' "$out/status.txt"; then
    refuse "the board's link device is missing (UART enabled? dtparam=i2c_arm=on? see above)"
fi
for device in $(sed -n 's/^  \(\/dev\/[^:]*\): present$/\1/p' "$out/status.txt"); do
    [ -r "$device" ] && [ -w "$device" ] ||
        refuse "$device is not readable and writable by $(id -un) (groups dialout / i2c; see README)"
done
for chip in /dev/gpiochip*; do
    [ -e "$chip" ] || refuse "no /dev/gpiochip* (is this kernel's GPIO character device there?)"
    [ -r "$chip" ] && [ -w "$chip" ] || refuse "$chip is not usable by $(id -un) (group gpio; see README)"
done

# --- the receiver: identify, then time the fixes -------------------------------------------------
info_status=0
"$binary" info --board "$board" >"$out/info.txt" 2>&1 || info_status=$?
sed 's/^/  /' "$out/info.txt" | tee -a "$report"
[ "$info_status" -eq 0 ] || refuse "the receiver does not answer (gnss-hat info exit $info_status; see above)"

log "ttff: cold start, power cycle, hot start (budget ${budget}s each, ${off}s off) ..."
ttff_status=0
"$binary" ttff --board "$board" --budget "$budget" --off "$off" --verbose >"$out/ttff.txt" 2>"$out/ttff.log" ||
    ttff_status=$?
sed 's/^/  /' "$out/ttff.txt" | tee -a "$report"
if [ "$ttff_status" -eq 0 ]; then
    log "hil-pi: PASS (report in $report)"
    exit 0
fi
log "hil-pi: FAIL (gnss-hat ttff exit $ttff_status; its log: $out/ttff.log)"
exit 1
