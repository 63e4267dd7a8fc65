# The swift build flags of the static executables, sourced by scripts/build-static.sh (gnss-hat)
# and scripts/hil/run.sh (gnss-hat-hil, built in the same scratch path: SwiftPM recompiles every
# module when any flag differs, so both must pass the same ones).
#   static_swift_flags  one section per function (C and Swift) and lld, for the code layout; lld folds
#                       identical functions and constants into one (--icf=all, see below)
#   static_order        the functions `gnss-hat serve` runs (scripts/profile-order.sh makes it)
#   static_order_flags  lld places them first; names missing from this build are left in place
# The MQTT module links libmosquitto.a from the prefix scripts/setup.sh builds (Debian ships it only
# shared) and the static OpenSSL it needs; lld takes archives in any order and only the members used.
# --icf=all: Swift emits many functions that are byte for byte the same (the value witnesses and
# protocol witness thunks of types with the same layout, specializations, getters of equal constants):
# lld keeps one copy, 0.61 MiB less on x86_64 and 0.45 MiB on aarch64, and the service's instructions
# per epoch stay the same (docs/code-layout.md). Folded functions share one address, which only code
# comparing function addresses could notice: Swift code does not (a function value has no identity;
# the runtime compares metadata and witness tables, writable data lld never folds), and the C code that
# folds is a handful of stubs (`return 0`, empty destructors, OpenSSL's AES-CBC-HMAC ciphers that arm64
# lacks; `-Xlinker --print-icf-sections` lists them all) whose addresses nothing compares. Debian's
# OpenSSL and glibc are not built with a section per function, so they barely fold. --icf=safe folds
# nothing here: Swift objects carry no address-significance table.
static_mosquitto_prefix=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.build/mosquitto-static/prefix
static_swift_flags=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xswiftc -use-ld=lld
    -Xlinker --icf=all -Xlinker -L"$static_mosquitto_prefix/lib" -Xlinker -lssl -Xlinker -lcrypto)
static_order=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gnss-hat.order
static_order_flags=(-Xlinker "--symbol-ordering-file=$static_order" -Xlinker --no-warn-symbol-ordering)
