# Kernel-level checks of the hardware-in-loop rig, sourced by the guest's /init (busybox sh).
# They prove the simulated hat behind the real kernel interfaces with stock tools, before
# any of our Swift code runs: libgpiod's gpioinfo/gpioset/gpioget/gpiomon on the GPIO
# character device, i2c-tools' i2ctransfer (I2C_RDWR) and i2cdetect on i2c-dev.
# Each check is a function run in a subshell by `check NAME FUNCTION` (see /init): it fails
# through `fail MESSAGE`, or any command that returns non-zero under `set -e`.

SIM_GPIO=/sys/devices/platform/gnss-gpio-sim
DDC_ATTR=/sys/class/misc/ubx-sim
DDC_CTL=/dev/ubx-sim

fail() { echo "$*"; exit 1; }

# wait_until TENTHS COMMAND...: polls COMMAND every 0.1 s until it succeeds; a bound on a
# hang, not a timing assertion.
wait_until() {
    tries=$1
    shift
    while ! "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
    done
}

gpio_chip() { basename "$(ls -d $SIM_GPIO/gpiochip* | head -n 1)"; }
# line_offset NAME: the line's offset, from the module's names parameter.
line_offset() {
    tr ',' '\n' </sys/module/gnss_gpio_sim/parameters/names | grep -n -x "$1" | cut -d: -f1 | awk '{print $1 - 1}'
}
level() { cat "$SIM_GPIO/sim_gpio$(line_offset "$1")/value"; }
set_pull() { echo "$2" >"$SIM_GPIO/sim_gpio$(line_offset "$1")/pull"; }
level_is() { [ "$(level "$1")" = "$2" ]; }
line_used_by() { gpioinfo "$(gpio_chip)" | grep "\"$1\"" | grep -q "\"$2\""; }

ddc_bus() {
    for adapter in /sys/class/i2c-adapter/i2c-*; do
        if [ "$(cat "$adapter/name")" = ubx-ddc-sim ]; then
            basename "$adapter" | cut -d- -f2
            return 0
        fi
    done
    return 1
}
ddc_reset() { echo 1 >$DDC_ATTR/reset; }
ddc_stat() { grep "^$1=" $DDC_ATTR/stats | cut -d= -f2; }
# hex: a byte stream as i2ctransfer prints it ("0x01 0x2c").
hex() { hexdump -v -e '/1 "0x%02x "' | sed 's/ $//'; }
# rdwr ARGS...: i2ctransfer on the simulated bus, output on one line.
rdwr() { i2ctransfer -y "$(ddc_bus)" "$@"; }

check_boot_devices() {
    set -e
    [ -d $SIM_GPIO ] || fail "no $SIM_GPIO"
    [ -c "/dev/$(gpio_chip)" ] || fail "no GPIO character device for $(gpio_chip)"
    [ -c $DDC_CTL ] || fail "no $DDC_CTL"
    bus=$(ddc_bus) || fail "no I2C adapter named ubx-ddc-sim"
    [ -c "/dev/i2c-$bus" ] || fail "no /dev/i2c-$bus"
    # The rig's board files name the bus by number (insmod ubx_ddc_sim bus=$DDC_BUS in /init).
    [ "$bus" = "$DDC_BUS" ] || fail "the ubx-ddc-sim adapter is i2c-$bus, not i2c-$DDC_BUS"
}

check_gpio_names() {
    set -e
    chip=$(gpio_chip)
    gpiodetect | grep -q "^$chip \[gnss-hat-sim\] (6 lines)" || fail "gpiodetect: $(gpiodetect)"
    gpioinfo "$chip" | tee /tmp/gpioinfo.out
    offset=0
    for name in GNSS_PWR_EN GNSS_RESET_N GNSS_STANDBY GNSS_FORCE_ON GNSS_PPS GNSS_EXTINT; do
        grep -q -E "line +$offset: +\"$name\" +unused" /tmp/gpioinfo.out || fail "line $offset is not an unused $name"
        [ "$(gpiofind "$name")" = "$chip $offset" ] || fail "gpiofind $name: $(gpiofind "$name")"
        offset=$((offset + 1))
    done
}

check_gpio_output() {
    set -e
    chip=$(gpio_chip)
    pwr=$(line_offset GNSS_PWR_EN)
    reset=$(line_offset GNSS_RESET_N)
    level_is GNSS_PWR_EN 0 || fail "GNSS_PWR_EN is high while nobody drives it"
    level_is GNSS_RESET_N 1 || fail "GNSS_RESET_N is low while nobody drives it"
    gpioset --mode=signal "$chip" "$pwr=1" "$reset=0" &
    holder=$!
    wait_until 50 line_used_by GNSS_PWR_EN gpioset || fail "gpioset never took GNSS_PWR_EN"
    gpioinfo "$chip" | grep "GNSS_PWR_EN"
    level_is GNSS_PWR_EN 1 || fail "GNSS_PWR_EN reads $(level GNSS_PWR_EN) while gpioset drives it high"
    level_is GNSS_RESET_N 0 || fail "GNSS_RESET_N reads $(level GNSS_RESET_N) while gpioset drives it low"
    kill "$holder"
    wait "$holder" || true
    wait_until 50 level_is GNSS_PWR_EN 0 || fail "GNSS_PWR_EN did not fall back to its pull-down"
    level_is GNSS_RESET_N 1 || fail "GNSS_RESET_N did not fall back to its pull-up"
    # An input follows its pull, which is how the harness drives a line from outside.
    set_pull GNSS_EXTINT pull-up
    [ "$(gpioget "$chip" "$(line_offset GNSS_EXTINT)")" = 1 ] || fail "gpioget does not see the pull-up"
    set_pull GNSS_EXTINT pull-down
    [ "$(gpioget "$chip" "$(line_offset GNSS_EXTINT)")" = 0 ] || fail "gpioget does not see the pull-down"
}

check_gpio_busy() {
    set -e
    chip=$(gpio_chip)
    pwr=$(line_offset GNSS_PWR_EN)
    gpioset --mode=signal "$chip" "$pwr=1" &
    holder=$!
    wait_until 50 line_used_by GNSS_PWR_EN gpioset || fail "gpioset never took GNSS_PWR_EN"
    if gpioset "$chip" "$pwr=0" 2>/tmp/busy.err; then
        kill "$holder"
        fail "a second consumer got a line already held"
    fi
    kill "$holder"
    wait "$holder" || true
    cat /tmp/busy.err
    grep -q "Device or resource busy" /tmp/busy.err || fail "the second request failed otherwise: $(cat /tmp/busy.err)"
}

check_gpio_edges() {
    set -e
    chip=$(gpio_chip)
    pps=$(line_offset GNSS_PPS)
    set_pull GNSS_PPS pull-down
    timeout 20 gpiomon --num-events=4 "$chip" "$pps" >/tmp/gpiomon.out &
    monitor=$!
    wait_until 50 line_used_by GNSS_PPS gpiomon || fail "gpiomon never took GNSS_PPS"
    # gpiolib tells a rising from a falling edge by the level when its IRQ thread runs, so
    # leave it time to run between the two halves of a pulse.
    for pulse in 1 2; do
        set_pull GNSS_PPS pull-up
        sleep 0.05
        set_pull GNSS_PPS pull-down
        sleep 0.05
    done
    wait "$monitor" || fail "gpiomon did not see four edges: $(cat /tmp/gpiomon.out)"
    cat /tmp/gpiomon.out
    [ "$(grep -c 'RISING EDGE' /tmp/gpiomon.out)" = 2 ] || fail "expected 2 rising edges"
    [ "$(grep -c 'FALLING EDGE' /tmp/gpiomon.out)" = 2 ] || fail "expected 2 falling edges"
    # Kernel timestamps: present and strictly increasing.
    previous=0
    for stamp in $(sed -n 's/.*timestamp: \[ *\([0-9]*\)\.\([0-9]*\)\].*/\1\2/p' /tmp/gpiomon.out); do
        stamp=$(echo "$stamp" | sed 's/^0*//')
        [ -n "$stamp" ] && [ "$stamp" -gt "$previous" ] || fail "timestamps not increasing: $(cat /tmp/gpiomon.out)"
        previous=$stamp
    done
}

check_i2c_adapter() {
    set -e
    bus=$(ddc_bus)
    i2cdetect -y "$bus" | tee /tmp/i2cdetect.out
    found=$(tail -n +2 /tmp/i2cdetect.out | cut -c5- | tr ' ' '\n' | grep -v -e '^--$' -e '^$' | tr '\n' ' ')
    [ "$found" = "42 " ] || fail "i2cdetect found '$found', expected only 42"
    if rdwr w1@0x43 0xfd r2 2>/tmp/absent.err; then
        fail "a transfer to 0x43 succeeded"
    fi
    grep -q "Remote I/O error" /tmp/absent.err || fail "0x43 failed otherwise: $(cat /tmp/absent.err)"
}

check_i2c_stream() {
    set -e
    ddc_reset
    dd if=/dev/urandom of=/tmp/fed bs=300 count=1 2>/dev/null
    cat /tmp/fed >$DDC_CTL
    count=$(rdwr w1@0x42 0xfd r2)
    [ "$count" = "0x01 0x2c" ] || fail "count read '$count', expected 0x01 0x2c"
    got=$(rdwr w1@0x42 0xff r300)
    [ "$got" = "$(hex </tmp/fed)" ] || fail "the stream differs from what was fed"
    [ "$(rdwr r3@0x42)" = "0xff 0xff 0xff" ] || fail "an empty stream does not read 0xff"
    # One read from 0xFD runs on into the stream (the address advances, then stays at 0xFF).
    printf 'AB' >$DDC_CTL
    [ "$(rdwr w1@0x42 0xfd r5)" = "0x00 0x02 0x41 0x42 0xff" ] || fail "a read from 0xfd: $(rdwr w1@0x42 0xfd r5)"
    printf 'CD' >$DDC_CTL
    [ "$(rdwr r2@0x42)" = "0x43 0x44" ] || fail "the current address did not stay at 0xff"
}

check_i2c_write() {
    set -e
    ddc_reset
    rdwr w8@0x42 0xb5 0x62 0x01 0x03 0x00 0x00 0x04 0x0d
    rdwr w1@0x42 0xfd
    got=$(timeout 5 dd if=$DDC_CTL bs=64 count=1 2>/dev/null | hex)
    [ "$got" = "0xb5 0x62 0x01 0x03 0x00 0x00 0x04 0x0d" ] || fail "the simulator received '$got'"
    [ "$(ddc_stat register_sets)" = 1 ] || fail "a one-byte write was not a register set"
    [ "$(ddc_stat host_pending)" = 0 ] || fail "a one-byte write reached the simulator"
}

check_i2c_nak() {
    set -e
    ddc_reset
    # By default a NAK is EREMOTEIO, as the Pi's i2c-bcm2835 reports it; nak_errno=6 gives ENXIO.
    echo 2 >$DDC_ATTR/nak_next
    for attempt in 1 2; do
        if rdwr w1@0x42 0xfd r2 2>/tmp/nak.err; then
            fail "NAKed transfer $attempt succeeded"
        fi
        grep -q "Remote I/O error" /tmp/nak.err || fail "a NAK failed otherwise: $(cat /tmp/nak.err)"
    done
    [ "$(rdwr w1@0x42 0xfd r2)" = "0x00 0x00" ] || fail "the transfer after the NAKs failed"
    [ "$(ddc_stat naks)" = 2 ] || fail "the module counted $(ddc_stat naks) NAKs"
    echo 6 >$DDC_ATTR/nak_errno
    echo 1 >$DDC_ATTR/nak_next
    if rdwr w1@0x42 0xfd r2 2>/tmp/nak.err; then
        fail "a NAKed transfer succeeded with nak_errno 6"
    fi
    grep -q "No such device or address" /tmp/nak.err || fail "nak_errno 6 failed otherwise: $(cat /tmp/nak.err)"
    ddc_reset
    [ "$(cat $DDC_ATTR/nak_errno)" = 121 ] || fail "reset did not restore nak_errno"
}

check_i2c_faults() {
    set -e
    ddc_reset
    printf 'ABCDE' >$DDC_CTL
    echo "127 32767 bit15" >$DDC_ATTR/bogus_counts
    for expected in "0x00 0x7f" "0x7f 0xff" "0x80 0x05" "0x00 0x05"; do
        got=$(rdwr w1@0x42 0xfd r2)
        [ "$got" = "$expected" ] || fail "count read '$got', expected '$expected'"
    done
    echo 2 >$DDC_ATTR/ff_after
    got=$(rdwr w1@0x42 0xff r6)
    [ "$got" = "0x41 0x42 0xff 0x43 0x44 0x45" ] || fail "with 0xff injected after 2 bytes: '$got'"
    [ "$(ddc_stat injected_ff)" = 1 ] || fail "the module counted no injected 0xff"
}

# The modules unload cleanly and take parameters (names, pulls, address); the defaults are
# back afterwards for the checks and scenarios that follow.
check_modules_reload() {
    set -e
    rmmod ubx_ddc_sim gnss_gpio_sim
    [ ! -d $SIM_GPIO ] || fail "$SIM_GPIO is still there after rmmod"
    insmod /lib/modules/gnss_gpio_sim.ko names=ALPHA,-,GAMMA pulls=1,0,1 label=other-sim
    insmod /lib/modules/ubx_ddc_sim.ko addr=0x10
    gpiodetect | grep -q "^$(gpio_chip) \[other-sim\] (3 lines)" || fail "gpiodetect: $(gpiodetect)"
    gpioinfo "$(gpio_chip)" | grep -q -E 'line +1: +unnamed' || fail "line 1 is not unnamed"
    [ "$(cat $SIM_GPIO/sim_gpio2/value)" = 1 ] || fail "GAMMA does not idle at its pull-up"
    rdwr w1@0x10 0xfd r2 >/dev/null || fail "no receiver at the address given"
    rmmod ubx_ddc_sim gnss_gpio_sim
    insmod /lib/modules/gnss_gpio_sim.ko
    insmod /lib/modules/ubx_ddc_sim.ko bus="$DDC_BUS"
    gpiodetect | grep -q "\[gnss-hat-sim\] (6 lines)" || fail "the default chip did not come back"
}

# Both modules' platform drivers unbound and bound again through sysfs, with nobody holding the
# devices: the chip and the adapter go away and come back with their names, lines and bus number
# (the fault scenarios do this under a streaming Receiver).
check_modules_rebind() {
    set -e
    echo gnss-gpio-sim >/sys/bus/platform/drivers/gnss-gpio-sim/unbind
    echo ubx-ddc-sim >/sys/bus/platform/drivers/ubx-ddc-sim/unbind
    ! ls -d $SIM_GPIO/gpiochip* >/dev/null 2>&1 || fail "a gpiochip is still under $SIM_GPIO after the unbind"
    [ ! -e $SIM_GPIO/sim_gpio0 ] || fail "sim_gpio0 is still there after the unbind"
    ! ddc_bus >/dev/null 2>&1 || fail "the ubx-ddc-sim adapter is still there after the unbind"
    [ ! -e "/dev/i2c-$DDC_BUS" ] || fail "/dev/i2c-$DDC_BUS is still there after the unbind"
    echo gnss-gpio-sim >/sys/bus/platform/drivers/gnss-gpio-sim/bind
    echo ubx-ddc-sim >/sys/bus/platform/drivers/ubx-ddc-sim/bind
    gpioinfo "$(gpio_chip)" | grep -q -E 'line +0: +"GNSS_PWR_EN" +unused' ||
        fail "GNSS_PWR_EN is not back: $(gpioinfo)"
    [ "$(gpiofind GNSS_PPS)" = "$(gpio_chip) 4" ] || fail "gpiofind GNSS_PPS: $(gpiofind GNSS_PPS)"
    level_is GNSS_RESET_N 1 || fail "GNSS_RESET_N is not back at its pull-up"
    [ "$(ddc_bus)" = "$DDC_BUS" ] || fail "the adapter came back as i2c-$(ddc_bus), not i2c-$DDC_BUS"
    ddc_reset
    printf '\x42\x43' >$DDC_CTL
    [ "$(rdwr w1@0x42 0xfd r2)" = "0x00 0x02" ] || fail "the adapter does not answer after the bind"
    ddc_reset
}

# task_switches PID: "TID COMM VOLUNTARY" for every thread of process PID, one per line.
task_switches() {
    for task in /proc/"$1"/task/*; do
        echo "${task##*/} $(cat "$task/comm") $(sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "$task/status")"
    done
}

# serve_failed WHAT: fails check serve.idle-wake-ups with the service's log and the watcher's lines
# shown, naming a crash (the service gone, its fatal error) before what did not happen.
serve_failed() {
    echo "--- gnss-hat serve's log:"
    cat /tmp/serve.log
    echo "--- the watcher's lines:"
    cut -c1-160 /tmp/client.out 2>/dev/null
    if ! serve_alive; then
        fail "gnss-hat serve died: $(grep -m 1 -e 'Fatal error' -e 'error:' /tmp/serve.log || echo 'no message')"
    fi
    fail "gnss-hat serve $1"
}

# serve_alive: whether the service still runs (a process that died is a zombie until waited for).
serve_alive() { [ -d /proc/"$server" ] && ! grep -q '^State:[[:space:]]*Z' /proc/"$server"/status; }
# serve_shows PATTERN FILE: whether FILE has a line matching PATTERN; fails at once if the service died.
serve_shows() {
    serve_alive || serve_failed "died"
    grep -q "$1" "$2"
}

# The idle promise of `gnss-hat serve` (issue 34): once the last watcher left and the linger
# passed, no thread of the service wakes up while nobody watches: over 5 s, not one voluntary
# context switch (a sleep that ended) in any of its threads. A client first watches until the
# simulator board's receiver is on, then leaves; --verbose logs when the device closed (power off).
check_serve_idle_wake_ups() {
    set -e
    ip link set lo up
    gnss-hat serve --board simulator --listen 127.0.0.1:2947 --linger 1 --verbose 2>/tmp/serve.log &
    server=$!
    client=
    trap 'kill $server $client 2>/dev/null' EXIT
    wait_until 300 serve_shows 'listening on 127.0.0.1:2947' /tmp/serve.log || serve_failed "did not listen"
    mkfifo /tmp/client.in
    nc 127.0.0.1 2947 </tmp/client.in >/tmp/client.out &
    client=$!
    exec 3>/tmp/client.in
    # A watcher that could not connect is found below, not by a SIGPIPE here.
    trap '' PIPE
    printf '?WATCH={"enable":true,"json":true};\n' >&3 || true
    wait_until 300 serve_shows '"class":"TPV"' /tmp/client.out || serve_failed "sent the watcher no report within 30 s"
    grep -q '"class":"DEVICE".*"activated"' /tmp/client.out || fail "the watcher never saw the device activated"
    cut -c1-100 /tmp/client.out | head -n 5
    exec 3>&-
    kill "$client" 2>/dev/null || true
    wait "$client" 2>/dev/null || true  # (killed: no "Terminated" notice in the output)
    client=
    wait_until 300 serve_shows 'device .* closed' /tmp/serve.log || serve_failed "did not switch the receiver off"
    cat /tmp/serve.log
    task_switches "$server" >/tmp/switches.before
    sleep 5
    task_switches "$server" >/tmp/switches.after
    echo "threads (tid, name, voluntary context switches) after the 5 s:"
    cat /tmp/switches.after
    serve_alive || serve_failed "ended while idle"
    woken=$(awk 'NR == FNR { before[$1] = $3; next }
        { woke = $3 - before[$1]; if (woke != 0) printf "%s%s (%s) %d", sep, $2, $1, woke; if (woke != 0) sep = ", " }
        ' /tmp/switches.before /tmp/switches.after)
    [ -z "$woken" ] || fail "threads woke up while nobody watched for 5 s: $woken"
    [ "$(wc -l </tmp/switches.before)" = "$(wc -l </tmp/switches.after)" ] || fail "threads came or went while idle"
    kill -TERM "$server"
    wait "$server" || fail "gnss-hat serve exited with status $? on SIGTERM"
    trap - EXIT
}

# The kernel logged no warning, oops or bug while the checks and scenarios ran.
check_kernel_log() {
    if dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|refcount_t:|INFO: task'; then
        fail "the kernel logged a warning or bug (above)"
    fi
}

# A check that must fail (the enable line is never driven): proves a failing check makes
# run.sh exit non-zero. Run only with `run.sh --self-test-failure`.
check_selftest_broken_driver() {
    level_is GNSS_PWR_EN 1 || fail "GNSS_PWR_EN is low: the (deliberately absent) driver never switched it on"
}

run_kernel_checks() {
    check boot.devices check_boot_devices
    check gpio.names check_gpio_names
    check gpio.output check_gpio_output
    check gpio.busy check_gpio_busy
    check gpio.edges check_gpio_edges
    check i2c.adapter check_i2c_adapter
    check i2c.stream check_i2c_stream
    check i2c.write check_i2c_write
    check i2c.nak check_i2c_nak
    check i2c.faults check_i2c_faults
    check modules.reload check_modules_reload
    check modules.rebind check_modules_rebind
    if [ "$HIL_SELFTEST" = fail ]; then
        check selftest.broken-driver check_selftest_broken_driver
    fi
}
