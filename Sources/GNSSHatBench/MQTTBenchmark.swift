// `mqtt`: gnss-hat serve --mqtt beside a typical gpsd-to-MQTT bridge (scripts/bench/gpsd-mqtt-bridge.py:
// Debian's gps module reading Debian's gpsd, paho-mqtt publishing, under /usr/bin/python3), each fed
// the same NMEA stream on its own pseudo-terminal (10 Hz, paced as a 115200-baud UART, the service
// benchmark's stream; the peer's half an epoch after ours's, so that the two sides never handle an
// epoch's end at the same moment: see ServiceBenchmark.stagger), both publishing to one Mosquitto
// broker this benchmark starts, one mosquitto_sub subscribed to both TPV topics. Per run and side:
//   - latency: the last byte of an epoch (GLL, which ends the cycle for gpsd and for ours) written
//     to the terminal -> that epoch's TPV printed by the subscriber: p50, p99;
//   - CPU per published fix: CPU time (user and kernel, every thread, the scheduler's nanosecond
//     account: see ThreadCounters) of everything that turns the stream into messages
//     at the broker (ours: the one gnss-hat process, gpsd service, journal and bridge included;
//     the peer: gpsd plus the Python bridge), over the streaming, divided by the TPVs that arrived.
// Each run first measures the floor under both: a bridge that does nothing (MQTTRun.measureFloor).
// Ours publishes TPV, OwnTracks and SKY per epoch with QoS 1, TPV and OwnTracks through its journal;
// the peer publishes TPV and SKY as gpsd wrote them, QoS 1 (its cheapest form: no re-encoding).
// Both run at nice -10 (gpsd and ours set it themselves as root; the peer is started with it).
// Environment: GNSSHAT_BENCH_GNSS_HAT (the gnss-hat to measure; default: the one beside this program),
// GNSSHAT_BENCH_MQTT_PEER (the peer's script; default: scripts/bench/gpsd-mqtt-bridge.py),
// GNSSHAT_BENCH_RUNS (runs, medians reported, default 3), GNSSHAT_BENCH_MQTT_EPOCHS (epochs measured
// per run after 20 of warm-up, default 300), GNSSHAT_BENCH_STAGGER (milliseconds between the two
// sides' streams, default 50; 0 writes both at the same moments), GNSSHAT_BENCH_THREADS (set: print
// each process's CPU time and switches by thread name).

import Foundation
import LinuxSystem
import MQTT
import Synchronization

enum MQTTBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let runs = max(1, Int(environment["GNSSHAT_BENCH_RUNS"] ?? "") ?? 3)
    static let measured = max(50, Int(environment["GNSSHAT_BENCH_MQTT_EPOCHS"] ?? "") ?? 300)
    static let warmUp = 20

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One side's figures in one run.
    struct Measurement {
        var p50 = 0.0
        var p99 = 0.0
        /// Epochs whose TPV arrived, of those measured.
        var epochs = 0
        /// TPVs that arrived over the whole stream, and the CPU milliseconds each cost.
        var published = 0
        var cpuPerFix = 0.0
    }

    /// The floor in one run: a bridge that does nothing (see MQTTRun.measureFloor).
    typealias Floor = FloorLines.Figures

    static func run() async throws {
        let gnssHat = environment["GNSSHAT_BENCH_GNSS_HAT"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("gnss-hat")
        // scripts/bench.sh runs from the package root and names the peer; so does this default.
        let script = URL(fileURLWithPath: environment["GNSSHAT_BENCH_MQTT_PEER"]
            ?? FileManager.default.currentDirectoryPath + "/scripts/bench/gpsd-mqtt-bridge.py")
        for (path, what) in [
            (gnssHat.path, "scripts/bench.sh builds it (GNSSHAT_BENCH_GNSS_HAT names the binary to measure)"),
            ("/usr/sbin/gpsd", "install Debian's gpsd (scripts/setup.sh does)"),
            ("/usr/sbin/mosquitto", "install Debian's mosquitto (scripts/setup.sh does)"),
            ("/usr/bin/mosquitto_sub", "install Debian's mosquitto-clients (scripts/setup.sh does)"),
            ("/usr/bin/python3", "install Debian's python3-gps and python3-paho-mqtt (scripts/setup.sh does)"),
        ] where !FileManager.default.isExecutableFile(atPath: path) {
            throw Failure(description: "\(path) is missing: \(what)")
        }
        guard FileManager.default.fileExists(atPath: script.path) else {
            throw Failure(description: "the peer \(script.path) is missing (GNSSHAT_BENCH_MQTT_PEER names it)")
        }
        print("mqtt: ours is \(gnssHat.path); the peer is \(script.path) on gpsd")
        var results: [(ours: Measurement, peer: Measurement)] = []
        var floors: [Floor] = []
        for _ in 0..<runs {
            let result = try await MQTTRun(gnssHat: gnssHat, script: script).run()
            results.append((result.ours, result.peer))
            floors.append(result.floor)
        }
        func figure(_ key: KeyPath<Measurement, Double>) -> (Double, Double) {
            (median(results.map { $0.ours[keyPath: key] }), median(results.map { $0.peer[keyPath: key] }))
        }
        let coverage = results.map {
            "ours \($0.ours.epochs)/\(measured) bridge \($0.peer.epochs)/\(measured)"
        }
        print("mqtt: \(runs) runs of \(measured) epochs at 10 Hz, 115200 baud, NMEA; TPVs measured per run: "
            + coverage.joined(separator: "; "))
        // What any bridge pays besides its own work (see MQTTRun.measureFloor).
        print(String(format: "mqtt: the floor, a bridge that does nothing (read(2) on a pseudo-terminal -> "
            + "publish QoS 1; %d lines at %d Hz, both sides idle): p50 %.3f ms, p99 %.3f ms (medians of the "
            + "runs); arrived ", FloorLines.count, FloorLines.rate,
            median(floors.map(\.p50)), median(floors.map(\.p99)))
            + floors.map { "\($0.arrived)/\(FloorLines.count)" }.joined(separator: ", "))
        var (ours, peer) = figure(\.p50)
        Bench.report("mqtt.latency-p50", ours: ours, peer: "bridge", peerValue: peer, unit: "ms", target: "-")
        (ours, peer) = figure(\.p99)
        Bench.report("mqtt.latency-p99", ours: ours, peer: "bridge", peerValue: peer, unit: "ms",
                     target: "ratio<=0.5")
        (ours, peer) = figure(\.cpuPerFix)
        Bench.report("mqtt.cpu-per-fix", ours: ours, peer: "bridge", peerValue: peer, unit: "ms",
                     target: "ratio<=0.25")
    }
}

/// When each epoch's TPV reached the subscriber, per side, and how many arrived.
final class MQTTArrivals: Sendable {
    private struct State {
        var arrivals: [[Int: ContinuousClock.Instant]] = [[:], [:]]
        var counts = [0, 0]
        var ready: Set<String> = []
        var floor: [Int: ContinuousClock.Instant] = [:]
    }

    private let state = Lock(State())

    func record(side: Int, epoch: Int, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            state.counts[side] += 1
            if state.arrivals[side][epoch] == nil { state.arrivals[side][epoch] = instant }
        }
    }

    func recordFloor(_ number: Int, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            if state.floor[number] == nil { state.floor[number] = instant }
        }
    }

    func floor() -> [Int: ContinuousClock.Instant] { state.withLock { $0.floor } }

    func markReady(_ topic: String) {
        _ = state.withLock { $0.ready.insert(topic) }
    }

    func isReady(_ topics: Set<String>) -> Bool { state.withLock { topics.isSubset(of: $0.ready) } }
    func arrivals(_ side: Int) -> [Int: ContinuousClock.Instant] { state.withLock { $0.arrivals[side] } }
    func count(_ side: Int) -> Int { state.withLock { $0.counts[side] } }
}

/// One run: the broker, both sides and the subscriber, then the stream.
struct MQTTRun {
    let gnssHat: URL
    let script: URL

    /// The service benchmark's process and /proc helpers (launch, ports, percentiles).
    var tools: ServiceRun {
        ServiceRun(stream: .nmea, watchers: 1, gnssHat: gnssHat, gpsd: URL(fileURLWithPath: "/usr/sbin/gpsd"),
                   epochs: ServiceBenchmark.measured, profile: nil)
    }

    static let oursTopic = "gnss-hat/bench/tpv"
    static let peerTopic = "bridge/bench/tpv"
    static let floorTopic = "floor/bench"

    /// Index 0 is ours, 1 the peer.
    func run() async throws -> (ours: MQTTBenchmark.Measurement, peer: MQTTBenchmark.Measurement,
                                floor: MQTTBenchmark.Floor) {
        let tools = tools
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-bench-mqtt-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var processes: [Process] = []
        defer { for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // The broker, on a port of its own, anonymous, nothing kept.
        let brokerPort = try tools.freePort()
        let configuration = """
            user \(NSUserName())
            allow_anonymous true
            persistence false
            listener \(brokerPort) 127.0.0.1
            """
        let configurationPath = directory.appendingPathComponent("mosquitto.conf").path
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        processes.append(try tools.launch(URL(fileURLWithPath: "/usr/sbin/mosquitto"), ["-c", configurationPath]))
        try await waitForPort(brokerPort)

        // The subscriber: one mosquitto_sub on both TPV topics and both status topics, read on a thread
        // of its own that timestamps every line as it arrives.
        let arrivals = MQTTArrivals()
        let subscriber = Process()
        subscriber.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        subscriber.arguments = ["-h", "127.0.0.1", "-p", "\(brokerPort)", "-v",
                                "-t", Self.oursTopic, "-t", Self.peerTopic, "-t", Self.floorTopic,
                                "-t", "gnss-hat/bench/status", "-t", "bridge/bench/status"]
        let output = Pipe()
        subscriber.standardOutput = output
        subscriber.standardError = FileHandle.nullDevice
        subscriber.standardInput = FileHandle.nullDevice
        try subscriber.run()
        processes.append(subscriber)
        let reading = output.fileHandleForReading
        Thread.detachNewThread {
            var pending: [UInt8] = []
            while true {
                let chunk = reading.availableData
                let now = ContinuousClock.now
                if chunk.isEmpty { return }
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    Self.record(String(decoding: pending[..<newline], as: UTF8.self), at: now, into: arrivals)
                    pending.removeSubrange(...newline)
                }
            }
        }

        // Ours and the peer, each on its own pseudo-terminal.
        let terminals = [try PseudoTerminal(), try PseudoTerminal()]
        // Open to the end: released after its last use (the last write), a terminal would drop an epoch's
        // end its reader had not taken yet, and the service would see its line hang up.
        defer { withExtendedLifetime(terminals) {} }
        let boardPath = try ServiceRun.writeBoard(on: terminals[0].devicePath,
                                                  title: "the mqtt benchmark's pseudo-terminal", in: directory)
        let ours = try tools.launch(gnssHat, [
            "serve", "--board", boardPath, "--listen", "127.0.0.1:\(try tools.freePort())", "--keep-on",
            "--linger", "1", "--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--mqtt-device", "bench",
            "--state-dir", directory.appendingPathComponent("state").path,
        ])
        processes.append(ours)
        let gpsdPort = try tools.freePort()
        let gpsd = try tools.launch(URL(fileURLWithPath: "/usr/sbin/gpsd"),
                                    ["-N", "-n", "-b", "-S", "\(gpsdPort)", terminals[1].devicePath])
        processes.append(gpsd)
        try await waitForPort(gpsdPort)
        let peer = try tools.launch(URL(fileURLWithPath: "/usr/bin/nice"), [
            "-n", "-10", "/usr/bin/python3", script.path, "\(gpsdPort)", "\(brokerPort)", "bridge/bench",
        ])
        processes.append(peer)
        let pids = [ours.processIdentifier, gpsd.processIdentifier, peer.processIdentifier]
        try await tools.waitUntilOpen(pids[0], terminals[0].devicePath)
        try await tools.waitUntilOpen(pids[1], terminals[1].devicePath)
        for _ in 0..<400 where !arrivals.isReady(["gnss-hat/bench/status", "bridge/bench/status"]) {
            try await Task.sleep(for: .milliseconds(25))
        }
        guard arrivals.isReady(["gnss-hat/bench/status", "bridge/bench/status"]) else {
            throw MQTTBenchmark.Failure(description: "a side never said it was online at the broker")
        }
        try await Task.sleep(for: .milliseconds(200))
        let floor = try await measureFloor(brokerPort: brokerPort, arrivals: arrivals)

        // The stream: each sentence at its moment on a 115200-baud line, 10 Hz epochs, to both terminals.
        // CPU time: every thread's, as the scheduler accounts it, sampled at every epoch (see ThreadCounters).
        var counts: [ThreadCounters] = []
        let total = MQTTBenchmark.warmUp + MQTTBenchmark.measured
        let writes = try await ServiceRun.feed(.nmea, epochs: total, to: terminals,
                                               stagger: ServiceBenchmark.stagger) { side, epoch in
            guard side == 0 else { return }
            if epoch == 0 {
                counts = pids.map { ThreadCounters(pid: $0) }
            } else {
                for count in counts { count.sample() }
            }
        }
        let lastWrite = writes.last
        try await Task.sleep(for: .milliseconds(500))
        let cpu = counts.map { $0.stop().cpuSeconds }

        var measurements = [MQTTBenchmark.Measurement(), MQTTBenchmark.Measurement()]
        for side in 0..<2 {
            let arrived = arrivals.arrivals(side)
            var latencies: [Double] = []
            for epoch in MQTTBenchmark.warmUp..<total {
                if let arrival = arrived[epoch], let written = lastWrite[side][epoch] {
                    latencies.append(tools.milliseconds(written.duration(to: arrival)))
                }
            }
            measurements[side].epochs = latencies.count
            measurements[side].p50 = tools.percentile(latencies, 0.5)
            measurements[side].p99 = tools.percentile(latencies, 0.99)
            measurements[side].published = arrivals.count(side)
        }
        measurements[0].cpuPerFix = cpu[0] * 1000 / Double(max(measurements[0].published, 1))
        measurements[1].cpuPerFix = (cpu[1] + cpu[2]) * 1000 / Double(max(measurements[1].published, 1))
        print(String(format: "mqtt run: CPU ours %.3f s; peer gpsd %.3f s + bridge %.3f s; TPVs published "
            + "ours %d, bridge %d", cpu[0], cpu[1], cpu[2], measurements[0].published, measurements[1].published))
        for (side, name) in [(0, "ours"), (1, "bridge")] where measurements[side].epochs < MQTTBenchmark.measured / 2 {
            throw MQTTBenchmark.Failure(description: "\(name): only \(measurements[side].epochs) of "
                + "\(MQTTBenchmark.measured) TPVs arrived")
        }

        kill(ours.processIdentifier, SIGTERM)
        ours.waitUntilExit()
        if ours.terminationStatus != 0 {
            throw MQTTBenchmark.Failure(description: "gnss-hat serve exited \(ours.terminationStatus)")
        }
        return (measurements[0], measurements[1], floor)
    }

    /// The floor under both sides: a bridge that does nothing. With both sides connected and idle, a
    /// thread of this program (at nice -10, as both sides) blocked in read(2) on a pseudo-terminal of
    /// its own publishes each line it reads at once, QoS 1, through this program's libmosquitto client
    /// (the MQTT module, as ours); each line is timed as the sides' epochs are, from its write to the
    /// terminal to its line at the subscriber. No bridge reading a serial line and publishing through
    /// this broker to this subscriber can be faster.
    func measureFloor(brokerPort: UInt16, arrivals: MQTTArrivals) async throws -> MQTTBenchmark.Floor {
        let client = try MQTTClient(configuration: MQTTConfiguration(
            broker: BrokerAddress(host: "127.0.0.1", port: Int(brokerPort)), clientID: "gnsshat-bench-floor"
        )) { _ in }
        try client.start()
        defer { client.stop() }
        for _ in 0..<400 where !client.isConnected { try await Task.sleep(for: .milliseconds(25)) }
        guard client.isConnected else {
            throw MQTTBenchmark.Failure(description: "the floor's client never connected to the broker")
        }
        // Each whole line read goes out as a message (a read may end inside one: the rest waits).
        let pending = Lock<[UInt8]>([])
        return try await FloorLines.measure(settle: .milliseconds(500), tools: tools) {
            arrivals.floor()
        } forward: { bytes in
            let lines = pending.withLock { pending -> [String] in
                pending += bytes
                var lines: [String] = []
                while let newline = pending.firstIndex(of: 0x0A) {
                    lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
                return lines
            }
            for line in lines where line != "end" {
                _ = try? client.publish(OutgoingMessage(topic: Self.floorTopic, text: line))
            }
            return true
        }
    }

    /// Records a subscriber line (`TOPIC PAYLOAD`): a TPV's epoch (from its time), or a status.
    static func record(_ line: String, at instant: ContinuousClock.Instant, into arrivals: MQTTArrivals) {
        guard let space = line.firstIndex(of: " ") else { return }
        let topic = line[..<space]
        if topic == floorTopic {
            if let number = Int(line[line.index(after: space)...]) { arrivals.recordFloor(number, at: instant) }
            return
        }
        if topic.hasSuffix("/status") {
            if line.hasSuffix(" online") { arrivals.markReady(String(topic)) }
            return
        }
        let side = topic == oursTopic ? 0 : topic == peerTopic ? 1 : -1
        guard side >= 0, let range = line.range(of: "\"time\":\"") else { return }
        let rest = line[range.upperBound...]
        guard let end = rest.firstIndex(of: "\""), let epoch = ServiceStream.epochIndex(time: rest[..<end]) else {
            return
        }
        arrivals.record(side: side, epoch: epoch, at: instant)
    }

    func waitForPort(_ port: UInt16) async throws {
        for _ in 0..<200 {
            if let connection = try? SocketConnection.connect(to: .ipv4("127.0.0.1", port: port)) {
                connection.close()
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw MQTTBenchmark.Failure(description: "nothing listens on 127.0.0.1:\(port)")
    }
}
