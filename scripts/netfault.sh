#!/usr/bin/env bash
# Network faults against the real broker: `gnss-hat serve --mqtt` and Debian's Mosquitto in two network
# namespaces joined by a veth pair (198.18.0.1 and 198.18.0.2, the range set aside for network
# benchmarks, which exists only inside the two namespaces: nothing leaves the machine), through five
# phases: a clean link; 30 % packet loss each way (nftables' numgen at each end's ingress); a slow link
# (tc tbf, 64 kbit/s each way); a 60 s partition (everything dropped) during which the broker is stopped
# (SIGTERM) and started again on the same persistence; the broker stopped for 20 s on a clean link (its
# refusals show the back-off); a clean link until the journal has drained.
#
# A gpsd client in the service's namespace keeps the receiver on and sees every fix; a durable QoS 1
# subscriber (clean session off) in the broker's namespace counts what arrives. The report prints each
# phase's time and counts, the duplicates, reorderings and losses (none may be lost), the journal at the
# end (it must be empty), and the service's connection failures with their delays, checked against the
# bridge's back-off policy (ReconnectPolicy.swift: 1 s, doubling, at most 60 s, no jitter).
#
# Needs root (network namespaces): run as root, or it re-runs itself with sudo. Everything it makes —
# the namespaces and their veth pair, its processes, its temporary directory — goes at the end and on
# failure; the logs are copied to .build/netfault/.
#
#   scripts/netfault.sh                 # the debug build (.build/debug/gnss-hat)
#   NETFAULT_BINARY=PATH scripts/netfault.sh
#   NETFAULT_SPEED=2 NETFAULT_CLEAN=15 NETFAULT_LOSS=25 NETFAULT_SLOW=25 NETFAULT_PARTITION=60 scripts/netfault.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
if [ "$(id -u)" -ne 0 ]; then
    exec sudo --preserve-env=NETFAULT_BINARY,NETFAULT_SPEED,NETFAULT_CLEAN,NETFAULT_LOSS,NETFAULT_SLOW,NETFAULT_PARTITION,NETFAULT_REFUSED \
        "$0" "$@"
fi
root=$PWD
binary=${NETFAULT_BINARY:-$root/.build/debug/gnss-hat}
speed=${NETFAULT_SPEED:-2}
clean_seconds=${NETFAULT_CLEAN:-15}
loss_seconds=${NETFAULT_LOSS:-25}
slow_seconds=${NETFAULT_SLOW:-25}
partition_seconds=${NETFAULT_PARTITION:-60}
refused_seconds=${NETFAULT_REFUSED:-20}
# Within the partition: the broker is stopped at +15 s and started again at +35 s.
broker_stop_at=15
broker_start_at=35
drain_limit=90
helper=(/usr/bin/python3 -u "$root/scripts/netfault.py")
start=$EPOCHREALTIME

say() { printf 'netfault: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }

for tool in ip nft tc mosquitto /usr/bin/python3; do
    command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
done
/usr/bin/python3 -c 'import paho.mqtt.client' 2>/dev/null || fail "python3-paho-mqtt is missing (scripts/setup.sh)"
[ -x "$binary" ] || fail "no gnss-hat at $binary (swift build first, or NETFAULT_BINARY=PATH)"

# Names of this run only: two runs at once never share a namespace. Interface names are per namespace.
run_id=ghnf$$
ns_service=$run_id-service
ns_broker=$run_id-broker
link_service=nf-service
link_broker=nf-broker
address_service=198.18.0.1
address_broker=198.18.0.2
work=$(mktemp -d /tmp/gnsshat-netfault.XXXXXX)
chmod 755 "$work"
pids=()
broker_pid=
serve_pid=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]}" $broker_pid $serve_pid; do kill "$pid" 2>/dev/null || true; done
    for ns in "$ns_service" "$ns_broker"; do
        if [ -e "/run/netns/$ns" ]; then
            # Whatever is still running inside (only this run's processes are there).
            for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    wait 2>/dev/null || true
    if [ -d "$work" ]; then
        mkdir -p "$root/.build/netfault"
        cp "$work"/*.txt "$work"/*.log "$root/.build/netfault/" 2>/dev/null || true
        rm -rf "$work"
    fi
    if [ "$status" -ne 0 ]; then
        say "logs in .build/netfault/ (serve.txt, broker.log, received.txt, watch.txt)" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each line with the wall-clock time it was read at (EPOCHREALTIME: microseconds).
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }

# Waits (polling, at most LIMIT seconds) until FILE holds a line matching the extended regex PATTERN.
wait_for() {
    local file=$1 pattern=$2 limit=$3 what=$4
    local deadline=$((SECONDS + limit))
    until grep -Eq -- "$pattern" "$file" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "no $what within $limit s (see $(basename "$file"))"
        sleep 0.1
    done
}

# Waits until FILE holds COUNT lines matching PATTERN.
wait_for_count() {
    local file=$1 pattern=$2 count=$3 limit=$4 what=$5
    local deadline=$((SECONDS + limit))
    local found
    while found=$(grep -Ec -- "$pattern" "$file" 2>/dev/null || true); [ "${found:-0}" -lt "$count" ]; do
        [ $SECONDS -lt $deadline ] || fail "no $what within $limit s (see $(basename "$file"))"
        sleep 0.1
    done
}

elapsed() { awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

phase_name=
phase_start=
begin_phase() {
    phase_name=$1
    phase_start=$EPOCHREALTIME
    say "phase $phase_name begins at $(elapsed) s: $2"
}
end_phase() {
    printf '%s %s %s\n' "$phase_start" "$phase_name" "$EPOCHREALTIME" >>"$work/phases.txt"
    say "phase $phase_name ends at $(elapsed) s"
}

# MARK: the namespaces and the link

ip netns add "$ns_service"
ip netns add "$ns_broker"
ip link add "$link_service" netns "$ns_service" type veth peer name "$link_broker" netns "$ns_broker"
ip -n "$ns_service" addr add "$address_service/30" dev "$link_service"
ip -n "$ns_broker" addr add "$address_broker/30" dev "$link_broker"
for ns in "$ns_service" "$ns_broker"; do ip -n "$ns" link set lo up; done
ip -n "$ns_service" link set "$link_service" up
ip -n "$ns_broker" link set "$link_broker" up
in_service() { ip netns exec "$ns_service" "$@"; }
in_broker() { ip netns exec "$ns_broker" "$@"; }
say "namespaces $ns_service ($address_service) and $ns_broker ($address_broker), veth $link_service-$link_broker"

# Faults: a netdev table at each end's ingress (what the other end sent is lost on the wire, ARP included).
ingress_rule() {
    local ns=$1 link=$2 rule=$3
    ip netns exec "$ns" nft delete table netdev netfault 2>/dev/null || true
    [ -n "$rule" ] || return 0
    ip netns exec "$ns" nft -f - <<EOF
table netdev netfault {
    chain ingress {
        type filter hook ingress device "$link" priority 0; policy accept;
        $rule
    }
}
EOF
}
both_ends() {
    ingress_rule "$ns_service" "$link_service" "$1"
    ingress_rule "$ns_broker" "$link_broker" "$1"
}
shape() {
    local action=$1
    if [ "$action" = add ]; then
        ip -n "$ns_service" link show "$link_service" >/dev/null
        in_service tc qdisc add dev "$link_service" root tbf rate 64kbit burst 4kb latency 400ms
        in_broker tc qdisc add dev "$link_broker" root tbf rate 64kbit burst 4kb latency 400ms
    else
        in_service tc qdisc del dev "$link_service" root
        in_broker tc qdisc del dev "$link_broker" root
    fi
}

# MARK: the broker, the subscriber, the service, the watcher

mkdir -p "$work/broker" "$work/state"
cat >"$work/mosquitto.conf" <<EOF
listener 1883 $address_broker
allow_anonymous true
persistence true
persistence_location $work/broker/
user root
max_queued_messages 100000
connection_messages true
log_dest file $work/broker.log
log_type error
log_type warning
log_type notice
log_type information
EOF
start_broker() {
    # Counted before the start: a broker quick to open its socket would otherwise be counted in `opened`.
    local opened
    opened=$(grep -c "Opening ipv4 listen socket on port 1883" "$work/broker.log" 2>/dev/null || true)
    ip netns exec "$ns_broker" mosquitto -c "$work/mosquitto.conf" 2>>"$work/broker-stderr.log" &
    broker_pid=$!
    wait_for_count "$work/broker.log" "Opening ipv4 listen socket on port 1883" $((${opened:-0} + 1)) 10 "broker start"
}
stop_broker() {
    kill -TERM "$broker_pid"
    wait "$broker_pid" || true
    broker_pid=
}
start_broker
say "broker: mosquitto $(mosquitto -h 2>/dev/null | sed -n 's/^mosquitto version //p' | head -1), persistence in" \
    "a temporary directory, pid $broker_pid"

in_broker "${helper[@]}" subscribe "$address_broker" netfault-subscriber "$work/received.txt" >"$work/subscriber.log" 2>&1 &
pids+=($!)
wait_for "$work/subscriber.log" '^subscribed' 10 "subscription"

# The simulator board with a 2 s cold start (as ServeBridgeTests does): fixes from the first seconds.
sed -e 's/"coldStartSeconds": 26/"coldStartSeconds": 2/' -e 's/"name": "simulator"/"name": "simulator-netfault"/' \
    boards/simulator.json >"$work/simulator-netfault.json"
grep -q '"coldStartSeconds": 2,' "$work/simulator-netfault.json" || fail "boards/simulator.json changed"
ip netns exec "$ns_service" "$binary" serve --board "$work/simulator-netfault.json" --speed "$speed" \
    --listen 127.0.0.1:2947 --mqtt "mqtt://$address_broker" --mqtt-device nf1 --state-dir "$work/state" --verbose \
    > >(stamp >"$work/serve.txt") 2>&1 &
serve_pid=$!
wait_for "$work/serve.txt" "mqtt: connected to " 20 "connection to the broker"
in_service "${helper[@]}" watch 2947 "$work/watch.txt" 2>"$work/watch.log" &
watcher_pid=$!
pids+=($watcher_pid)
wait_for "$work/watch.txt" '"mode":[23]' 30 "fix at the gpsd watcher"
say "service: $binary serve --speed $speed (pid $serve_pid), first fix at $(elapsed) s"

# MARK: the phases

begin_phase clean "a clean link for $clean_seconds s"
sleep "$clean_seconds"
end_phase

begin_phase loss "30 % of the packets lost each way for $loss_seconds s"
both_ends "numgen random mod 100 < 30 drop"
sleep "$loss_seconds"
both_ends ""
end_phase

begin_phase slow "64 kbit/s each way (tbf, burst 4 kB, latency 400 ms) for $slow_seconds s"
shape add
sleep "$slow_seconds"
shape del
end_phase

begin_phase partition "everything dropped for $partition_seconds s; the broker stopped at +$broker_stop_at s, started at +$broker_start_at s"
connections_before=$(grep -c "mqtt: connected to " "$work/serve.txt" || true)
connections_before=${connections_before:-0}
both_ends "drop"
sleep "$broker_stop_at"
stop_broker
say "broker stopped (SIGTERM) at $(elapsed) s"
sleep $((broker_start_at - broker_stop_at))
start_broker
say "broker started again at $(elapsed) s on the same persistence (pid $broker_pid)"
sleep $((partition_seconds - broker_start_at))
both_ends ""
end_phase

# The partition shows little of the back-off: the service notices a silent link only by its keep-alive
# (30 s, then 30 s more for the answer), and a connect into it waits for the kernel's SYN timeout. A
# broker that is down on a working link refuses at once, and the attempts follow the delays alone.
begin_phase refused "the broker stopped on a clean link for $refused_seconds s: every attempt refused"
wait_for_count "$work/serve.txt" "mqtt: connected to " $((connections_before + 1)) 90 "reconnection after the partition"
stop_broker
sleep "$refused_seconds"
start_broker
end_phase

begin_phase drain "a clean link until every fix so far has reached the subscriber (at most $drain_limit s)"
until_now=$EPOCHREALTIME
drained=$("${helper[@]}" caught-up "$work/watch.txt" "$work/received.txt" "$drain_limit" "$until_now") ||
    fail "the backlog did not drain"
say "every fix up to the partition's end reached the subscriber $drained s after it"
end_phase

# The stop: the service tells its watcher the device closed, powers off, says offline, and prints what it
# counted; the subscriber must then hold every fix the watcher saw.
kill -TERM "$serve_pid"
serve_status=0
wait "$serve_pid" || serve_status=$?
serve_pid=
[ "$serve_status" -eq 0 ] || fail "gnss-hat serve exited with status $serve_status"
wait "$watcher_pid" 2>/dev/null || true
"${helper[@]}" caught-up "$work/watch.txt" "$work/received.txt" 10 >/dev/null ||
    fail "fixes published before the stop did not reach the subscriber"
for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
stop_broker
say "stopped at $(elapsed) s"

"${helper[@]}" report "$work"
say "passed in $(elapsed) s"
