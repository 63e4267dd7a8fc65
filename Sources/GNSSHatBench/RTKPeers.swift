// The rtk benchmark's peers: RTKLIB's str2str as the caster, fed a steady RTCM 3 stream; the counting
// relay (scripts/bench/counting-relay.py) between each client under test and the caster; and a gpsd
// protocol watcher that records the TPVs it gets.
import Foundation
import GNSSProtocol
import LinuxSystem

/// str2str as an NTRIP 1 caster of one open mountpoint, `BENCH`, fed on its standard input once a second
/// with what a base station sends: a 1005 (station position) and an MSM4 of each of four systems.
final class RTKCaster: @unchecked Sendable {
    static let mountpoint = "BENCH"
    static let stationID = 2001
    let port: UInt16
    private let process = Process()
    private let input: FileHandle
    private let stopped = Lock(false)

    init(port: UInt16) throws {
        self.port = port
        let line = "Bench;RTCM 3.3;1005(1),1074(1),1084(1),1094(1),1124(1);2;GPS+GLO+GAL+BDS;BENCH;GBR;51.48;0.00;"
            + "0;0;RTKLIB;none;N;N;1200;"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/str2str")
        process.arguments = ["-out", "ntripc://:\(port)/\(Self.mountpoint):\(line)"]
        let pipe = Pipe()
        process.standardInput = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        input = pipe.fileHandleForWriting
    }

    /// One epoch's frames: the station, then GPS, GLONASS, Galileo and BeiDou MSM4, 12 satellites of three
    /// signals each (about 1.2 kB a second in all).
    static func epoch(_ second: Int) -> [UInt8] {
        let station = RTCM3StationARP(
            stationID: stationID, x: 3_980_581.2, y: -111.2, z: 4_966_824.5, antennaHeight: nil,
            gps: true, glonass: true, galileo: true, itrfYear: 0)
        var bytes = station.frame
        for (index, number) in [1074, 1084, 1094, 1124].enumerated() {
            let cells = (1...12).flatMap { satellite in
                [2, 9, 16].map { RTCM3MSM.Cell(satellite: satellite + index, signal: $0,
                                               finePseudorange: (second * 37 + satellite * 11) % 16_000,
                                               finePhaseRange: (second * 113 + satellite * 7) % 2_000_000) }
            }
            let msm = RTCM3MSM(messageNumber: number, stationID: stationID,
                               epochTime: UInt32((second * 1000) % 604_800_000), cells: cells,
                               multipleMessage: index < 3)
            bytes += msm.frame
        }
        return bytes
    }

    /// Feeds one epoch a second, on a thread of its own, until `stop()`.
    func startFeeding() {
        Thread.detachNewThread { [self] in
            var second = 0
            let start = ContinuousClock.now
            while !stopped.withLock({ $0 }) {
                try? input.write(contentsOf: Data(Self.epoch(second)))
                second += 1
                let remaining = ContinuousClock.now.duration(to: start.advanced(by: .seconds(second)))
                if remaining > .zero { Thread.sleep(forTimeInterval: RTKBenchmark.seconds(remaining)) }
            }
        }
    }

    func stop() {
        stopped.withLock { $0 = true }
        try? input.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The counting relay: one listening port per client under test, and every connection's bytes and times.
final class CountingRelay: @unchecked Sendable {
    struct Connection: Sendable {
        let id: Int
        /// When this program read the relay's `open` and `close` lines.
        let opened: ContinuousClock.Instant
        var closed: ContinuousClock.Instant?
        /// Bytes from the caster to the client so far, and seconds open (the relay's own clock).
        var down = 0
        var elapsed = 0.0
        /// The relay's once-a-second counts while open: (seconds open, bytes down).
        var samples: [(elapsed: Double, down: Int)] = []
    }

    private struct State {
        var ports: [String: UInt16] = [:]
        var connections: [String: [Connection]] = [:]
    }

    private let process = Process()
    private let state = Lock(State())

    init(script: URL, casterPort: UInt16, names: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, "\(casterPort)"] + names
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reading = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            while true {
                let chunk = reading.availableData
                let now = ContinuousClock.now
                if chunk.isEmpty { return }
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    record(String(decoding: pending[..<newline], as: UTF8.self), at: now)
                    pending.removeSubrange(...newline)
                }
            }
        }
    }

    private func record(_ line: String, at now: ContinuousClock.Instant) {
        let fields = line.split(separator: " ").map(String.init)
        guard fields.count >= 3 else { return }
        let name = fields[1]
        state.withLock { state in
            switch fields[0] {
            case "listen":
                state.ports[name] = UInt16(fields[2])
            case "open":
                state.connections[name, default: []].append(Connection(id: Int(fields[2]) ?? 0, opened: now))
            case "bytes", "close":
                guard fields.count >= 5, let id = Int(fields[2]),
                      let index = state.connections[name]?.lastIndex(where: { $0.id == id }) else { return }
                let down = Int(fields[3]) ?? 0
                let elapsed = Double(fields[fields[0] == "bytes" ? 4 : 5]) ?? 0
                state.connections[name]?[index].down = down
                state.connections[name]?[index].elapsed = elapsed
                if fields[0] == "bytes" {
                    state.connections[name]?[index].samples.append((elapsed, down))
                } else {
                    state.connections[name]?[index].closed = now
                }
            default:
                break
            }
        }
    }

    func port(_ name: String) -> UInt16? { state.withLock { $0.ports[name] } }
    func connections(_ name: String) -> [Connection] { state.withLock { $0.connections[name] ?? [] } }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A gpsd-protocol client that watches with a `?WATCH` of its own and records each TPV as it arrives.
final class RTKWatcher: @unchecked Sendable {
    struct Report: Sendable {
        let at: ContinuousClock.Instant
        let mode: Int
        /// gpsd's TPV status (3: RTK fixed), and `eph` in metres.
        let status: Int
        let eph: Double?
    }

    let joined: ContinuousClock.Instant
    private(set) var left: ContinuousClock.Instant?
    private let leaving = Lock(false)
    private let reports = Lock<[Report]>([])

    /// Connects to the service on `port` and sends `?WATCH=` with `watch` (its JSON object).
    init(port: UInt16, watch: String) throws {
        let connection = try SocketConnection.connect(to: .ipv4("127.0.0.1", port: port))
        try connection.sendAll(Array("?WATCH=\(watch)\n".utf8))
        joined = ContinuousClock.now
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            while !leaving.withLock({ $0 }) {
                guard let chunk = try? connection.receive(timeout: .milliseconds(50)) else { break }
                let now = ContinuousClock.now
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    if let report = Self.report(line, at: now) { reports.withLock { $0.append(report) } }
                }
            }
            connection.close()
        }
    }

    static func report(_ line: String, at now: ContinuousClock.Instant) -> Report? {
        guard line.contains("\"class\":\"TPV\"") else { return nil }
        func number(_ key: String) -> Double? {
            guard let range = line.range(of: "\"\(key)\":") else { return nil }
            let rest = line[range.upperBound...].prefix { "0123456789.-e".contains($0) }
            return Double(rest)
        }
        return Report(at: now, mode: Int(number("mode") ?? 0), status: Int(number("status") ?? 1), eph: number("eph"))
    }

    var received: [Report] { reports.withLock { $0 } }

    /// Closes the connection (the reading thread closes it within 50 ms).
    func leave() {
        left = ContinuousClock.now
        leaving.withLock { $0 = true }
    }
}

/// `gnss-hat watch --json` as a subscriber of its own receiver: its TPVs and its power-ons, timed as they arrive.
final class RTKWatchProcess: @unchecked Sendable {
    let started: ContinuousClock.Instant
    private let process = Process()
    private let reports = Lock<[RTKWatcher.Report]>([])
    private let powerOns = Lock<[ContinuousClock.Instant]>([])

    init(_ executable: URL, _ arguments: [String], log: URL) throws {
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        started = ContinuousClock.now
        let reading = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            while true {
                let chunk = reading.availableData
                let now = ContinuousClock.now
                if chunk.isEmpty { return }
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    if let report = RTKWatcher.report(line, at: now) { reports.withLock { $0.append(report) } }
                    if line.contains("\"class\":\"POWER\""), line.contains("\"state\":\"powering on\"") {
                        powerOns.withLock { $0.append(now) }
                    }
                }
            }
        }
    }

    var received: [RTKWatcher.Report] { reports.withLock { $0 } }
    var poweredOn: [ContinuousClock.Instant] { powerOns.withLock { $0 } }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }
}
