// swift-tools-version: 6.0
// GNSSHat: Raspberry Pi GNSS hats, powered only while somebody listens.
import PackageDescription
import Foundation

// `GNSSHAT_GPIOD_V2=1` builds PiHardware against the libgpiod 2.x (v2) API instead of the
// system's 1.6 (v1). `scripts/setup.sh` unpacks libgpiod 2.1 into `.build/libgpiod-v2/` and
// `scripts/test.sh` points PKG_CONFIG_PATH there for that build.
let gpiodV2 = ProcessInfo.processInfo.environment["GNSSHAT_GPIOD_V2"] == "1"
// The v2 library is libgpiod.so.3 in a private prefix the dynamic loader does not search, so the
// v2 build records it as an rpath (GNSSHAT_GPIOD_V2_LIBDIR overrides where it is).
let gpiodV2LibDir = ProcessInfo.processInfo.environment["GNSSHAT_GPIOD_V2_LIBDIR"]
    ?? Context.packageDirectory + "/.build/libgpiod-v2/prefix/lib"

let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "GNSSHat",
    platforms: [.macOS(.v15)],
    products: [
        // The core: the signal, the protocols, the system and hardware calls, the boards and the Receiver.
        // No libmosquitto, no OpenSSL: a user who wants the signal and the driver links only these.
        .library(name: "GNSSHat", targets: ["GNSSHat", "Signals", "GNSSProtocol", "LinuxSystem", "PiHardware"]),
        // The gpsd service over TCP and Unix sockets, and gpsd's JSON (GPSDProtocol: no sockets).
        .library(name: "GNSSHatGPSD", targets: ["GPSD", "GPSDProtocol"]),
        // The MQTT fleet bridge over libmosquitto; it writes gpsd's JSON with GPSDProtocol.
        .library(name: "GNSSHatMQTT", targets: ["MQTT", "GPSDProtocol"]),
        // The simulated receiver and hat behind the simulator boards (`hardware: .simulated`).
        .library(name: "GNSSHatSimulator", targets: ["GNSSHatSimulator"]),
        // The NTRIP caster client: RTCM corrections as a signal (links OpenSSL).
        .library(name: "GNSSHatNTRIP", targets: ["NTRIP"]),
        .library(name: "GNSSHatTesting", targets: ["GNSSHatTesting"]),
        .executable(name: "gnss-hat", targets: ["gnss-hat"]),
        // GNSSHatBench is a target, not a product: scripts/bench.sh builds it (`--product` finds the
        // executable targets of the root package too).
    ],
    targets: [
        // C interop only.
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CI2C", providers: [.apt(["libi2c-dev"])]),
        .target(name: "CLinuxShims"),
        // libmosquitto, the MQTT client library (Debian ships it shared only: scripts/setup.sh builds the
        // static archive scripts/build-static.sh links).
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // OpenSSL's libssl and libcrypto, for NTRIP over TLS (the static build links -lssl -lcrypto).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),

        // Libraries.
        .target(name: "Signals"),
        // libm: Double.rounded() and squareRoot() call it, and nothing else links it without Foundation.
        .target(name: "GNSSProtocol", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        // Descriptors, the syscall seam, sockets, epoll, threads and executors, clocks, pseudo-terminals.
        .target(name: "LinuxSystem", dependencies: ["CLinuxShims"]),
        // GPIO, I2C, serial ports and PPS, on top of LinuxSystem.
        .target(
            name: "PiHardware",
            dependencies: ["LinuxSystem", "CGPIOD", "CI2C", "CLinuxShims"],
            swiftSettings: gpiodV2 ? [.define("GNSSHAT_GPIOD_V2")] : [],
            linkerSettings: gpiodV2 ? [.unsafeFlags(["-Xlinker", "-rpath", "-Xlinker", gpiodV2LibDir])] : []
        ),
        .target(name: "GNSSHat", dependencies: ["Signals", "GNSSProtocol", "LinuxSystem", "PiHardware"]),
        // gpsd's JSON reports and client requests, written and read without sockets (no I/O at all).
        .target(name: "GPSDProtocol", dependencies: ["GNSSProtocol"]),
        // The gpsd protocol over sockets: LinuxSystem's, never PiHardware (it touches no hardware).
        .target(name: "GPSD", dependencies: ["GPSDProtocol", "GNSSHat", "Signals", "GNSSProtocol", "LinuxSystem"]),
        // The fleet path over libmosquitto; GPSDProtocol for the TPV and SKY JSON it publishes as the service
        // writes it (GPSD's sibling: it never imports GPSD).
        .target(
            name: "MQTT",
            dependencies: ["CMosquitto", "GNSSHat", "GNSSProtocol", "GPSDProtocol", "LinuxSystem", "Signals"]
        ),
        // The NTRIP caster client over LinuxSystem's sockets and OpenSSL: RTCM frames as a signal. No
        // hardware, no GNSSHat: the Receiver sees corrections only as a signal handed to it.
        .target(name: "NTRIP", dependencies: ["COpenSSL", "GNSSProtocol", "LinuxSystem", "Signals"]),
        // The simulated receiver and hat, behind GNSSHat's hardware seam (GNSSHat never needs it).
        .target(
            name: "GNSSHatSimulator", dependencies: ["GNSSHat", "GNSSProtocol", "Signals", "LinuxSystem", "PiHardware"]
        ),
        // Test doubles for users of the library: GNSSHat's public API, the simulator, no Testing.
        .target(
            name: "GNSSHatTesting",
            dependencies: ["Signals", "GNSSHat", "GNSSHatSimulator", "GNSSProtocol", "LinuxSystem", "PiHardware"]
        ),

        // Executables.
        .executableTarget(
            name: "gnss-hat",
            dependencies: [
                "GNSSHat", "GNSSHatSimulator", "GPSD", "GPSDProtocol", "MQTT", "NTRIP", "GNSSProtocol", "Signals",
                "LinuxSystem", "PiHardware",
            ]
        ),
        // Emulated hardware-in-loop scenarios, built static and run inside QEMU by scripts/hil/run.sh.
        .executableTarget(
            name: "gnss-hat-hil",
            dependencies: [
                "GNSSHat", "GNSSHatSimulator", "GNSSProtocol", "Signals", "LinuxSystem", "PiHardware", "CGPIOD", "CI2C",
                "CLinuxShims",
            ],
            swiftSettings: gpiodV2 ? [.define("GNSSHAT_GPIOD_V2")] : []
        ),
        // Counts heap allocations for GNSSHatBench (interposes malloc; never linked into the product).
        .target(name: "CMallocCounter"),
        .executableTarget(
            name: "GNSSHatBench",
            dependencies: [
                "Signals", "GNSSProtocol", "GNSSHat", "GNSSHatSimulator", "GNSSHatTesting", "GPSD", "GPSDProtocol",
                "CMallocCounter", "LinuxSystem", "MQTT",
            ]
        ),

        // Paths, the built binary and captures for the test targets (Foundation; never shipped).
        .target(name: "TestSupport", path: "Tests/TestSupport"),

        // Tests: one target per module.
        .testTarget(name: "SignalsTests", dependencies: ["Signals", "GNSSHatTesting", "LinuxSystem"]),
        .testTarget(
            name: "GNSSProtocolTests", dependencies: ["GNSSProtocol", "GPSDProtocol", "TestSupport"],
            exclude: ["Oracles"]
        ),
        .testTarget(
            name: "LinuxSystemTests",
            dependencies: ["LinuxSystem", "CLinuxShims", "GNSSHatTesting", "TestSupport", "thread-executors-probe"]
        ),
        // Installs ThreadExecutors as gnss-hat does and reports where each kind of job ran (run by
        // LinuxSystemTests: the 6.3 factory and the 6.2 runtime hooks alike).
        .executableTarget(name: "thread-executors-probe", dependencies: ["LinuxSystem"], path: "Tests/ExecutorsProbe"),
        .testTarget(
            name: "PiHardwareTests",
            dependencies: ["PiHardware", "LinuxSystem", "CLinuxShims", "CI2C", "GNSSHatTesting", "TestSupport"]
        ),
        .testTarget(
            name: "GNSSHatTests",
            dependencies: [
                "GNSSHat", "GNSSHatSimulator", "GNSSHatTesting", "Signals", "GNSSProtocol", "LinuxSystem", "PiHardware",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "GNSSHatSimulatorTests",
            dependencies: ["GNSSHatSimulator", "GNSSHat", "GNSSHatTesting", "GNSSProtocol", "LinuxSystem", "PiHardware"]
        ),
        .testTarget(name: "GPSDProtocolTests", dependencies: ["GPSDProtocol", "GNSSProtocol"]),
        // CLinuxShims: the C declaration of chrony's sample, to check the layout GPSD spells out.
        .testTarget(
            name: "GPSDTests",
            dependencies: [
                "GPSD", "GPSDProtocol", "GNSSHat", "GNSSHatSimulator", "GNSSHatTesting", "GNSSProtocol", "Signals",
                "LinuxSystem", "PiHardware", "CLinuxShims", "TestSupport",
            ]
        ),
        .testTarget(
            name: "GNSSHatTestingTests",
            dependencies: ["GNSSHatTesting", "GNSSHat", "GNSSHatSimulator", "Signals", "LinuxSystem"]
        ),
        // Against a real Mosquitto broker each test starts on a free loopback port.
        .testTarget(
            name: "MQTTTests",
            dependencies: [
                "MQTT", "GNSSHat", "GNSSHatSimulator", "GNSSHatTesting", "GNSSProtocol", "GPSDProtocol", "LinuxSystem",
                "Signals", "TestSupport",
            ]
        ),
        // Against real casters each test starts: RTKLIB's str2str, pygnssutils' gnssserver, and a caster
        // of the tests' own (socat in front of it for TLS).
        .testTarget(
            name: "NTRIPTests",
            dependencies: [
                "NTRIP", "GNSSProtocol", "GNSSHat", "GNSSHatSimulator", "GNSSHatTesting", "LinuxSystem", "Signals",
                "TestSupport",
            ]
        ),
        // The command line: its parser through @testable import, its subcommands through the built binary.
        .testTarget(name: "GNSSHatCommandTests", dependencies: ["gnss-hat", "GNSSHat", "PiHardware", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer targets, one per input surface: only when scripts/fuzz.sh asks for them (`GNSSHAT_FUZZ=1`),
// since libFuzzer supplies their `main` and a normal build could not link them.
if ProcessInfo.processInfo.environment["GNSSHAT_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        // The receiver's bytes: framer, decoders, the GNSSDecoder pipeline.
        ("GNSSProtocolFuzz", ["GNSSProtocol"]),
        // A gpsd client's requests, through the server's per-client session.
        ("GPSDRequestsFuzz", ["GPSDProtocol"]),
        // The MQTT bridge's inbound topics and demand payloads.
        ("MQTTDemandFuzz", ["MQTT"]),
        // The MQTT journal's file.
        ("MQTTJournalFuzz", ["MQTT", "GNSSProtocol"]),
        // Board files, loaded and written back.
        ("BoardFileFuzz", ["GNSSHat"]),
        // NTRIP casters' answers and sourcetables.
        ("NTRIPResponseFuzz", ["NTRIP"]),
    ]
    for target in fuzzTargets {
        package.targets.append(.executableTarget(name: target.name, dependencies: target.dependencies))
        package.products.append(.executable(name: target.name, targets: [target.name]))
    }
}

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + upcoming
}
