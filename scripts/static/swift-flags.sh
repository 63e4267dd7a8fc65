# The swift build flags of the static executables, sourced by scripts/build-static.sh (gnss-hat)
# and scripts/hil/run.sh (gnss-hat-hil, built in the same scratch path: SwiftPM recompiles every
# module when any flag differs, so both must pass the same ones).
#   static_swift_flags  one section per function (C and Swift) and lld, for the code layout
#   static_order        the functions `gnss-hat serve` runs (scripts/profile-order.sh makes it)
#   static_order_flags  lld places them first; names missing from this build are left in place
# The MQTT module links libmosquitto.a from the prefix scripts/setup.sh builds (Debian ships it only
# shared) and the static OpenSSL it needs; lld takes archives in any order and only the members used.
static_mosquitto_prefix=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.build/mosquitto-static/prefix
static_swift_flags=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xswiftc -use-ld=lld
    -Xlinker -L"$static_mosquitto_prefix/lib" -Xlinker -lssl -Xlinker -lcrypto)
static_order=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gnss-hat.order
static_order_flags=(-Xlinker "--symbol-ordering-file=$static_order" -Xlinker --no-warn-symbol-ordering)
