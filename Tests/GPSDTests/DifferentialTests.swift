// Real gpsd and gnss-hat serve on the same capture bytes, each through its own pseudo-terminal, each
// watched by a client; their TPV and SKY streams are compared field by field, epoch by epoch.

import Foundation
import LinuxSystem
import Testing
import TestSupport

/// One capture from the corpus and what is asserted about it.
struct DifferentialCapture: Sendable, CustomStringConvertible {
    let file: String
    /// The board file's chip family (only the DEVICE driver name depends on it here).
    let family: String
    /// Whether the SKY satellite sets (PRN, elevation, azimuth) must agree: they do where both
    /// assemble GSV / NAV-SAT the same way.
    let satellitesAgree: Bool
    /// Whether the receiver's RMC carries a magnetic variation. Where it does, `magvar` and `magtrack` must
    /// agree with gpsd's; where it does not, gpsd 3.22 fills them from its own magnetic model and ours must
    /// report none (`magneticModelFields`).
    var receiverVariation = false
    var description: String { file }
}

/// TPV fields known to differ, and why (the list of differences in docs/protocols.md).
let knownTPVDifferences: [String: String] = [
    "ept": "time error: gpsd's UBX driver takes it from NAV-TIMEUTC tAcc, ours from NAV-PVT",
    "epx": "error estimates: gpsd and ours apply the UERE model to DOPs from different sentences of the cycle",
    "epy": "error estimates: gpsd and ours apply the UERE model to DOPs from different sentences of the cycle",
    "epv": "error estimates: gpsd and ours apply the UERE model to DOPs from different sentences of the cycle",
    "eph": "error estimates: gpsd and ours apply the UERE model to DOPs from different sentences of the cycle",
    "sep": "error estimates: gpsd and ours apply the UERE model to DOPs from different sentences of the cycle",
    "eps": "error estimates: gpsd derives them from successive fixes at other points of the cycle",
    "epc": "error estimates: gpsd derives them from successive fixes at other points of the cycle",
    "climb": "UBX: gpsd derives climb from successive altitudes, ours takes NAV-PVT's velD",
    "geoidSep": "UBX: gpsd computes the separation from its geoid model, ours is NAV-PVT's height minus hMSL",
    "velN": "UBX: ours reports NAV-PVT's NED velocity, gpsd 3.22 reports ECEF velocity instead",
    "velE": "UBX: ours reports NAV-PVT's NED velocity, gpsd 3.22 reports ECEF velocity instead",
    "velD": "UBX: ours reports NAV-PVT's NED velocity, gpsd 3.22 reports ECEF velocity instead",
]

/// magvar and magtrack: ours reports RMC's variation (and magtrack = track + variation) where the receiver
/// sends one, and gpsd 3.22 too; where the receiver sends none (or |variation| <= 0.09), gpsd 3.22 fills
/// every fix from its own magnetic model (libgpsd_core.c, mag_var()), which ours does not have. So on a
/// capture whose RMC carries a variation both must agree; on one without, ours must report none.
let magneticModelFields: Set<String> = ["magvar", "magtrack"]

/// The ECEF fields equal gpsd's regression `.chk` output in every epoch (GNSSProtocolTests'
/// ECEFCorpusTests), but live gpsd 3.22 never clears them between epochs: on the M10 (ublox-glo.log) it
/// reports each TPV on NAV-PVT, before that epoch's NAV-POSECEF and NAV-VELECEF, so each TPV carries the
/// previous second's ECEF (its TPV of 14:52:15 has the ECEF of 14:52:14); on ublox-lea-m8f.log it repeats
/// the last NAV-SOL's ECEF in epochs without one. Ours reports each epoch's own, or none. So gpsd's value
/// agrees when it is ours of the same epoch or of the epoch before. An epoch whose gpsd value is neither, after
/// an epoch where ours reported none (a 2D fix, or the first), is not compared: gpsd carries a solution there
/// that ours, like current gpsd, did not report.
let carriedOverTPVFields: Set<String> = [
    "ecefx", "ecefy", "ecefz", "ecefvx", "ecefvy", "ecefvz", "ecefpAcc", "ecefvAcc",
]

/// SKY fields known to differ, and why.
let knownSKYDifferences: [String: String] = [
    "time": "gpsd 3.22 gives NMEA SKY objects no time; ours gives the epoch's",
    "ss": "gpsd 3.22 writes 0.0 for a GSV satellite without an SNR; current gpsd and ours leave it out",
    "satellites": satelliteSetDifference,
    "nSat": satelliteSetDifference,
    "uSat": satelliteSetDifference,
    "xdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "ydop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "vdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "tdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "hdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "gdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
    "pdop": "DOPs: gpsd computes missing DOPs from its own satellite geometry; ours reports the receiver's",
]

/// Why the NMEA captures' satellite sets differ from gpsd 3.22's (current gpsd's agree with ours:
/// GNSSProtocolTests' corpus SKY test).
let satelliteSetDifference = "satellite sets: gpsd 3.22 writes elevation and azimuth 0 for a GSV satellite "
    + "without them, keeps a satellite the GSV no longer lists, and does not mark BeiDou satellites used from "
    + "the GSA (quectel-l76k-nmea.log); current gpsd and ours agree"

/// The fields that must agree in every compared epoch (allowing 5 % for the cycle's first epochs).
let coreTPVFields = ["mode", "status", "lat", "lon", "altHAE", "altMSL", "alt", "speed", "track"]

@Suite("Differential: real gpsd and gnss-hat serve on the same bytes", .serialized, .timeLimit(.minutes(5)))
struct DifferentialTests {
    static let captures = [
        DifferentialCapture(file: "ublox-8.log", family: "ublox-gen8", satellitesAgree: true),
        DifferentialCapture(file: "neo-m8n.log", family: "ublox-gen8", satellitesAgree: false),
        DifferentialCapture(file: "mt3339.log", family: "mtk", satellitesAgree: false),
        DifferentialCapture(file: "quectel-l76k-nmea.log", family: "mtk", satellitesAgree: false),
        DifferentialCapture(file: "ublox-glo.log", family: "ublox-m10", satellitesAgree: true),
        DifferentialCapture(file: "ublox-lea-m8f.log", family: "ublox-gen8", satellitesAgree: true),
        // NMEA receivers whose RMC carries a magnetic variation (the family only names the DEVICE driver).
        DifferentialCapture(file: "garmin15x.log", family: "mtk", satellitesAgree: false, receiverVariation: true),
        DifferentialCapture(file: "nmea-rtk.log", family: "mtk", satellitesAgree: false, receiverVariation: true),
    ]

    @Test("TPV and SKY agree field by field, but for the listed differences", arguments: captures)
    func sameBytes(capture: DifferentialCapture) async throws {
        let gpsdBinary = try TestPaths.tool("/usr/sbin/gpsd", package: "gpsd")
        let payload = try captureBytes(TestPaths.corpus().appendingPathComponent("gpsd/\(capture.file)"))
        let run = try await Self.run(payload, family: capture.family, gpsd: gpsdBinary)
        let gpsd = Epochs(run.gpsd)
        let ours = Epochs(run.ours)

        let tpvCommon = Set(gpsd.tpv.keys).intersection(ours.tpv.keys)
        #expect(gpsd.tpv.count >= 3, "gpsd reported too little to compare: \(gpsd.tpv.count) TPV epochs")
        #expect(Double(tpvCommon.count) >= 0.9 * Double(gpsd.tpv.count),
                "TPV epochs: gpsd \(gpsd.tpv.count), ours \(ours.tpv.count), common \(tpvCommon.count)")
        let tpvTable = Self.agreement(
            gpsd.tpv, ours.tpv, epochs: tpvCommon, carriedOver: carriedOverTPVFields,
            gpsdModelled: capture.receiverVariation ? [] : magneticModelFields)
        for (field, result) in tpvTable.sorted(by: { $0.key < $1.key }) {
            let mustAgree = coreTPVFields.contains(field) || knownTPVDifferences[field] == nil
            if mustAgree {
                #expect(result.rate >= 0.95, "\(capture.file) TPV \(field): \(result.agree)/\(result.total) agree")
            }
        }

        let skyCommon = Set(gpsd.sky.keys).intersection(ours.sky.keys)
        #expect(Double(skyCommon.count) >= 0.8 * Double(gpsd.sky.count),
                "SKY epochs: gpsd \(gpsd.sky.count), ours \(ours.sky.count), common \(skyCommon.count)")
        let skyTable = Self.agreement(gpsd.sky, ours.sky, epochs: skyCommon)
        for (field, result) in skyTable.sorted(by: { $0.key < $1.key }) where knownSKYDifferences[field] == nil {
            #expect(result.rate >= 0.95, "\(capture.file) SKY \(field): \(result.agree)/\(result.total) agree")
        }
        var satellitesMatch = 0
        for epoch in skyCommon where Self.satellites(gpsd.sky[epoch]) == Self.satellites(ours.sky[epoch]) {
            satellitesMatch += 1
        }
        if capture.satellitesAgree {
            #expect(Double(satellitesMatch) >= 0.8 * Double(skyCommon.count),
                    "\(capture.file): satellite sets agree in \(satellitesMatch)/\(skyCommon.count) epochs")
        }

        // The figures docs/protocols.md quotes: per field, epochs in agreement.
        let rows = tpvTable.sorted { $0.key < $1.key }.map { "TPV.\($0.key) \($0.value.agree)/\($0.value.total)" }
            + skyTable.sorted { $0.key < $1.key }.map { "SKY.\($0.key) \($0.value.agree)/\($0.value.total)" }
            + ["SKY.satellites(PRN,el,az) \(satellitesMatch)/\(skyCommon.count)"]
        print("differential \(capture.file): TPV epochs gpsd \(gpsd.tpv.count) ours \(ours.tpv.count) common "
            + "\(tpvCommon.count); SKY epochs gpsd \(gpsd.sky.count) ours \(ours.sky.count) common "
            + "\(skyCommon.count)\n  "
            + rows.joined(separator: ", "))
    }

    // MARK: - Running both services

    static func run(_ payload: [UInt8], family: String, gpsd gpsdBinary: URL) async throws
        -> (gpsd: [[String: Any]], ours: [[String: Any]])
    {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gpsdTerminal = try PseudoTerminal()
        let oursTerminal = try PseudoTerminal()
        let board = """
            {"name": "differential", "title": "a capture on a pseudo-terminal", "chip": {"family": "\(family)"},
             "link": {"type": "uart", "path": "\(oursTerminal.devicePath)", "baud": 38400, "detectSpeed": false},
             "power": {"strategies": [], "upTimeoutSeconds": 20},
             "configuration": {"enabled": false}, "notes": [], "sources": []}
            """
        let boardPath = directory.appendingPathComponent("differential.json").path
        try board.write(toFile: boardPath, atomically: true, encoding: .utf8)

        let port = UInt16(try freeLoopbackPort())
        let gpsd = try ChildProcess(gpsdBinary, ["-N", "-n", "-b", "-S", "\(port)", gpsdTerminal.devicePath])
        defer { gpsd.kill() }
        let serve = try await ServeProcess(["--board", boardPath, "--linger", "60"])
        defer { serve.child.terminate() }
        let hub = try ClientHub()
        defer { hub.stop() }
        let gpsdClient = try await connectWhenListening(hub, .ipv4("127.0.0.1", port: port), gpsd)
        let oursClient = try hub.connect(to: serve.address)
        for client in [gpsdClient, oursClient] {
            try client.send("?WATCH={\"enable\":true,\"json\":true};\n")
            _ = try await client.object(ofClass: "WATCH")
        }
        // Feed only once both have the device open (ours opens it for the first watcher).
        try await waitUntilOpen(gpsd.pid, gpsdTerminal.devicePath)
        try await waitUntilOpen(serve.child.pid, oursTerminal.devicePath)
        try await Task.sleep(for: .milliseconds(100))
        var offset = 0
        while offset < payload.count {
            let chunk = Array(payload[offset..<min(offset + 128, payload.count)])
            try gpsdTerminal.write(chunk)
            try oursTerminal.write(chunk)
            offset += chunk.count
            try await Task.sleep(for: .milliseconds(2))
        }
        await waitForQuiet([gpsdClient.received, oursClient.received])
        // gpsd ends on SIGTERM now that it starts with no signal blocked (it never unblocks one).
        gpsd.terminate()
        let gpsdStatus = await gpsd.waitForExit()
        #expect(gpsd.process.terminationReason == .exit || gpsdStatus == SIGTERM,
                "gpsd ended by \(gpsd.process.terminationReason) \(gpsdStatus)")
        _ = await serve.stop()
        return (objects(gpsdClient.received.all), objects(oursClient.received.all))
    }

    static func connectWhenListening(_ hub: ClientHub, _ address: SocketAddress, _ process: ChildProcess)
        async throws -> TestClient
    {
        for _ in 0..<200 {
            if let client = try? hub.connect(to: address) { return client }
            guard process.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestSetupError("gpsd did not listen on \(address): \(process.stderrLines)")
    }

    /// Waits until process `pid` has `path` open (`/proc/PID/fd`).
    static func waitUntilOpen(_ pid: Int32, _ path: String) async throws {
        for _ in 0..<400 {
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in descriptors {
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")
                if target == path { return }
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestSetupError("process \(pid) never opened \(path)")
    }

    /// Waits until no client has received a line for half a second (at most 15 s).
    static func waitForQuiet(_ logs: [LineLog]) async {
        var last = logs.map(\.count)
        var quietSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            let now = logs.map(\.count)
            if now != last {
                last = now
                quietSince = ContinuousClock.now
            } else if ContinuousClock.now - quietSince >= .milliseconds(500) {
                return
            }
        }
    }

    static func objects(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    // MARK: - Comparing

    /// TPV and SKY objects by epoch: the time of day of the TPV (dates may differ: gpsd 3.22 moves
    /// pre-2019 dates by 1024 weeks), the last object of each epoch (gpsd sends growing partial
    /// TPVs while it learns the cycle). A SKY without a time belongs to the last TPV's epoch.
    struct Epochs {
        var tpv: [String: [String: Any]] = [:]
        var sky: [String: [String: Any]] = [:]

        init(_ objects: [[String: Any]]) {
            var current: String?
            for object in objects {
                switch object["class"] as? String {
                case "TPV":
                    guard let time = object["time"] as? String else { continue }
                    let key = String(time.dropFirst(11))
                    current = key
                    tpv[key] = object
                case "SKY":
                    let key = (object["time"] as? String).map { String($0.dropFirst(11)) } ?? current
                    if let key { sky[key] = object }
                default:
                    continue
                }
            }
        }
    }

    struct Agreement {
        var agree = 0
        var total = 0
        var rate: Double { total == 0 ? 1 : Double(agree) / Double(total) }
    }

    /// For each field either side has in a common epoch: in how many such epochs both agree. A field of
    /// `carriedOver` also agrees when gpsd's is ours of the epoch before, and is not compared when it is
    /// neither ours of the epoch nor of the one before and ours had none there (`carriedOverTPVFields`); for a
    /// field of `gpsdModelled`, gpsd's value is its own model's and the epoch agrees when ours reports none.
    static func agreement(
        _ gpsd: [String: [String: Any]], _ ours: [String: [String: Any]], epochs: Set<String>,
        carriedOver: Set<String> = [], gpsdModelled: Set<String> = []
    ) -> [String: Agreement] {
        var table: [String: Agreement] = [:]
        var previous: [String: Any] = [:]  // ours's object of the epoch before
        // Epoch keys are times of day, "HH:MM:SS.sssZ": sorted as strings they are in time order.
        for epoch in ours.keys.sorted() {
            guard let b = ours[epoch] else { continue }
            defer { previous = b }
            guard epochs.contains(epoch), let a = gpsd[epoch] else { continue }
            for field in Set(a.keys).union(b.keys) where !["class", "device", "time", "satellites"].contains(field) {
                let agrees: Bool
                if gpsdModelled.contains(field) {
                    agrees = b[field] == nil
                } else if carriedOver.contains(field), !same(a[field], b[field]) {
                    guard previous[field] != nil else { continue }
                    agrees = a[field] != nil && same(a[field], previous[field])
                } else {
                    agrees = same(a[field], b[field])
                }
                table[field, default: Agreement()].total += 1
                if agrees { table[field, default: Agreement()].agree += 1 }
            }
            if a["time"] != nil || b["time"] != nil, a["class"] as? String == "SKY" {
                table["time", default: Agreement()].total += 1
                if same(a["time"], b["time"]) { table["time", default: Agreement()].agree += 1 }
            }
            if a["satellites"] != nil || b["satellites"] != nil {
                table["ss", default: Agreement()].total += 1
                if signalStrengths(a) == signalStrengths(b) { table["ss", default: Agreement()].agree += 1 }
            }
        }
        return table
    }

    /// Numbers agree to one unit of gpsd's ninth decimal (latitude and longitude): a value exactly halfway,
    /// as NMEA minutes with 8 decimals can give (09345.03336021 is 93.7505560035°), rounds either way by the
    /// arithmetic's last bit (gpsd 93.750556003, ours 93.750556004; nmea-rtk.log).
    static func same(_ a: Any?, _ b: Any?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let x as NSNumber, let y as NSNumber): return abs(x.doubleValue - y.doubleValue) < 1.5e-9
        case (let x as String, let y as String): return x == y
        default: return false
        }
    }

    /// PRN, elevation and azimuth of each satellite of a SKY object.
    /// PRN → elevation, azimuth (-999 for none). Azimuth 359 counts as none on both sides: gpsd
    /// 3.22's NAV-SAT decoder drops it (it takes 0 ≤ azimuth < 359); ours keeps it.
    static func satellites(_ sky: [String: Any]?) -> [Int: [Double]] {
        var result: [Int: [Double]] = [:]
        for satellite in sky?["satellites"] as? [[String: Any]] ?? [] {
            guard let prn = (satellite["PRN"] as? NSNumber)?.intValue else { continue }
            let elevation = (satellite["el"] as? NSNumber)?.doubleValue ?? -999
            let azimuth = (satellite["az"] as? NSNumber)?.doubleValue ?? -999
            result[prn] = [elevation, azimuth == 359 ? -999 : azimuth]
        }
        return result
    }

    static func signalStrengths(_ sky: [String: Any]) -> [Int: Double] {
        var result: [Int: Double] = [:]
        for satellite in sky["satellites"] as? [[String: Any]] ?? [] {
            guard let prn = (satellite["PRN"] as? NSNumber)?.intValue else { continue }
            result[prn] = (satellite["ss"] as? NSNumber)?.doubleValue ?? -1
        }
        return result
    }
}
