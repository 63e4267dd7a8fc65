// `rtk`: the bytes an NTRIP caster sends in a simulated day, gnss-hat's NTRIP client against gpsd 3.22 given
// ntrip:// on the same caster, for the same watchers: (a) one that wants 2 cm every 10 minutes, (b) one that
// wants 2 cm for an hour and one that wants 5 m all day.
// The caster is RTKLIB's str2str, fed once a second with a 1005 and four MSM4 (RTKCaster); a counting
// relay (scripts/bench/counting-relay.py) sits between each client and the caster and records every
// connection's bytes and its open and close. A day cannot be run, so a day's bytes are the caster's rate
// (measured at gpsd's connection) times each client's connected time over the simulated day:
//   - ours runs on simulator-rtk at --speed 10 (its receiver, its duty cycle and its NTRIP client's timers
//     ten times faster); its connections' lengths at the relay, times 10, are simulated seconds.
//     (a): `gnss-hat watch --every 600 --accuracy 0.02` (a gpsd client's ?WATCH interval and accuracy do not
//     yet make one demand: its TPVs follow the interval alone), the mean of two measured duty cycles'
//     connected time, times 144 cycles a day; (b): `gnss-hat serve` with two gpsd clients, ?WATCH accuracy 5
//     and 0.02: an hour plus what the measured 2 cm watch added (the connection's length less the watch's),
//     and no connection while only the 5 m watcher is there (checked);
//   - gpsd runs in real time: shown to connect when its client watches and to stay connected while it
//     does. It has no duty cycle: a client that wants a fix every 10 minutes watches all day, and so does
//     (b)'s 5 m watcher, so in both scenarios gpsd's link is up all day.
// The caster's stream is in real time while ours's receiver runs ten times faster, so a wait for the
// caster (the next epoch, a second of real time) lasts ten simulated seconds for ours: its figures are
// upper bounds.
// Environment: GNSSHAT_BENCH_GNSS_HAT (the gnss-hat to measure; default: the one beside this program),
// GNSSHAT_BENCH_RTK_RELAY (the relay script; default scripts/bench/counting-relay.py).
import Foundation
import LinuxSystem

enum RTKBenchmark {
    static let speed = 10.0
    static let day = 86_400.0
    /// Real seconds of (b)'s 2 cm watch (ten times as many simulated).
    static let centimetreWatch = 20.0

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The processes and ports of one run.
    struct Rig {
        let caster: RTKCaster
        let relay: CountingRelay
        let oursPort: UInt16
        let gpsdPort: UInt16
        let gnssHat: URL
        let directory: URL
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let gnssHat = environment["GNSSHAT_BENCH_GNSS_HAT"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("gnss-hat")
        let script = URL(fileURLWithPath: environment["GNSSHAT_BENCH_RTK_RELAY"] ?? "scripts/bench/counting-relay.py")
        let needed = [(gnssHat.path, "gnss-hat (scripts/bench.sh builds it)"), ("/usr/sbin/gpsd", "Debian's gpsd"),
                      ("/usr/bin/str2str", "Debian's rtklib")]
        for (path, what) in needed
        where !FileManager.default.isExecutableFile(atPath: path) {
            throw Failure(description: "\(path) is missing: \(what); scripts/setup.sh installs the peers")
        }
        guard FileManager.default.fileExists(atPath: script.path) else {
            throw Failure(description: "\(script.path) is missing (GNSSHAT_BENCH_RTK_RELAY names the relay)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-bench-rtk-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var processes: [Process] = []
        defer { for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let rig = try await start(gnssHat: gnssHat, script: script, directory: directory, processes: &processes)
        defer {
            rig.relay.stop()
            rig.caster.stop()
        }
        print("rtk: ours is \(gnssHat.path) serve --speed \(Int(speed)) --board simulator-rtk; gpsd is "
            + "/usr/sbin/gpsd (\(gpsdVersion())) in real time; caster str2str, mountpoint \(RTKCaster.mountpoint)")
        // gpsd's client watches throughout; ours's scenarios run meanwhile.
        let log = directory.appendingPathComponent("serve.log")
        do {
            let gpsdWatcher = try RTKWatcher(port: rig.gpsdPort, watch: #"{"enable":true,"json":true}"#)
            let everyTen = try await everyTenMinutes(rig)
            let mixed = try await mixed(rig)
            gpsdWatcher.leave()
            try await Task.sleep(for: .seconds(3))
            let gpsd = try gpsdFigures(rig.relay.connections("gpsd"), watcher: gpsdWatcher)
            report(everyTen: everyTen, mixed: mixed, gpsd: gpsd)
        } catch {
            // What ours said about the caster (it logs the link's every change) tells why.
            print("rtk: ours's log:\n" + ((try? String(contentsOf: log, encoding: .utf8)) ?? "(none)"))
            throw error
        }
    }

    /// The caster, the feed, the relay, gpsd and ours, each listening.
    static func start(gnssHat: URL, script: URL, directory: URL, processes: inout [Process]) async throws -> Rig {
        let gpsd = URL(fileURLWithPath: "/usr/sbin/gpsd")
        let tools = ServiceRun(stream: .nmea, watchers: 1, gnssHat: gnssHat, gpsd: gpsd,
                               epochs: ServiceBenchmark.measured, profile: nil)
        let caster = try RTKCaster(port: try tools.freePort())
        try await waitForPort(caster.port)
        caster.startFeeding()
        let relay = try CountingRelay(script: script, casterPort: caster.port, names: ["ours", "gpsd", "watch"])
        var ports: [UInt16] = []
        for name in ["ours", "gpsd", "watch"] {
            for _ in 0..<200 where relay.port(name) == nil { try await Task.sleep(for: .milliseconds(25)) }
            guard let port = relay.port(name) else { throw Failure(description: "the relay never listened") }
            ports.append(port)
        }
        let gpsdPort = try tools.freePort()
        processes.append(try tools.launch(gpsd, [
            "-N", "-S", "\(gpsdPort)", "ntrip://127.0.0.1:\(ports[1])/\(RTKCaster.mountpoint)",
        ]))
        let oursPort = try tools.freePort()
        let serve = Process()
        serve.executableURL = gnssHat
        serve.arguments = [
            "serve", "--board", "simulator-rtk", "--listen", "127.0.0.1:\(oursPort)", "--speed", "\(Int(speed))",
            "--ntrip", "ntrip://127.0.0.1:\(ports[0])/\(RTKCaster.mountpoint)",
            "--state-dir", directory.appendingPathComponent("state").path,
        ]
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("serve.log").path, contents: nil)
        serve.standardError = try FileHandle(forWritingTo: directory.appendingPathComponent("serve.log"))
        serve.standardOutput = FileHandle.nullDevice
        serve.standardInput = FileHandle.nullDevice
        try serve.run()
        processes.append(serve)
        try await waitForPort(gpsdPort)
        try await waitForPort(oursPort)
        return Rig(caster: caster, relay: relay, oursPort: oursPort, gpsdPort: gpsdPort, gnssHat: gnssHat,
                   directory: directory)
    }

    static func waitForPort(_ port: UInt16) async throws {
        for _ in 0..<400 {
            if let connection = try? SocketConnection.connect(to: .ipv4("127.0.0.1", port: port)) {
                connection.close()
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw Failure(description: "nothing listens on 127.0.0.1:\(port)")
    }

    static func gpsdVersion() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/gpsd")
        process.arguments = ["-V"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        guard (try? process.run()) != nil else { return "version unknown" }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").first.map(String.init) ?? "version unknown"
    }
}
