// The rtk benchmark's scenarios, measured at the counting relay, and the day's figures made of them
// (see RTKBenchmark for the method).
import Foundation

extension RTKBenchmark {
    /// (a) on ours: the duty cycles of one watcher of 2 cm every 10 minutes.
    struct EveryTenFigures {
        /// Each measured cycle's connected time, simulated seconds, and its connections.
        var cycles: [Double]
        var connections: Int
        /// Each power-on to the RTK-fixed TPV after it, simulated seconds (the first a cold start).
        var powerOnToFixed: [Double]
        var bytesCounted: Int
    }

    /// (b) on ours: what a 2 cm watch adds to the connected time, with a 5 m watcher throughout.
    struct MixedFigures {
        /// Connected less watched, simulated seconds (the linger less the wait for a fix and the caster).
        var overhead: Double
        var watched: Double
        var connected: Double
        /// Connections while only the 5 m watcher watched (before and after the 2 cm watch).
        var connectionsWithoutRTK: Int
        /// The 2 cm watch (on a receiver already on, with a 3D fix) to its first RTK-fixed TPV.
        var demandToFixed: Double?
    }

    struct GPSDFigures {
        /// Bytes a second from the caster (the stream connection's steady rate).
        var rate: Double
        var openLag: Double
        var watched: Double
        var stayedConnected: Bool
        var stillConnectedAfterLeaving: Bool
        var connections: Int
    }

    static func everyTenMinutes(_ rig: Rig) async throws -> EveryTenFigures {
        // `watch --every 600 --accuracy 0.02`: a subscriber of that demand (a gpsd client's ?WATCH interval and
        // accuracy do not make one demand yet: its TPVs come from the interval's subscription, see docs/benchmarks.md).
        guard let port = rig.relay.port("watch") else { throw Failure(description: "no relay port for watch") }
        let watch = try RTKWatchProcess(rig.gnssHat, [
            "watch", "--board", "simulator-rtk", "--every", "600", "--accuracy", "0.02", "--speed", "\(Int(speed))",
            "--json", "--ntrip", "ntrip://127.0.0.1:\(port)/\(RTKCaster.mountpoint)",
            "--state-dir", rig.directory.appendingPathComponent("watch-state").path,
        ], log: rig.directory.appendingPathComponent("watch.log"))
        defer { watch.stop() }
        // Two cycles: the first from a power-on by the watch, the second at the learned time before it is due.
        let deadline = ContinuousClock.now.advanced(by: .seconds(600 / speed + 40))
        func closed() -> [CountingRelay.Connection] {
            rig.relay.connections("watch").filter { $0.closed != nil }
        }
        while ContinuousClock.now < deadline && closed().count < 2 {
            try await Task.sleep(for: .milliseconds(100))
        }
        let connections = closed()
        let fixes = watch.received.filter { $0.status == 3 }
        print("rtk every-10min: ours: \(fixes.count) RTK-fixed TPVs (eph "
            + fixes.compactMap { $0.eph.map { String(format: "%.3f m", $0) } }.joined(separator: ", ")
            + "), \(watch.poweredOn.count) power-ons, \(connections.count) connections of "
            + connections.map { String(format: "%.1f", $0.elapsed * speed) }.joined(separator: ", ") + " s simulated")
        guard !fixes.isEmpty, !watch.poweredOn.isEmpty, !connections.isEmpty else {
            let seen = watch.received.map { "mode \($0.mode) status \($0.status) eph \($0.eph ?? -1)" }
            let log = (try? String(contentsOf: rig.directory.appendingPathComponent("watch.log"), encoding: .utf8))
            throw Failure(description: "every-10min: no RTK-fixed TPV or no connection (TPVs: "
                + seen.joined(separator: "; ") + ")\n" + (log ?? ""))
        }
        return EveryTenFigures(
            cycles: connections.map { $0.elapsed * speed }, connections: connections.count,
            powerOnToFixed: watch.poweredOn.compactMap { on in
                fixes.first { $0.at > on }.map { seconds(on.duration(to: $0.at)) * speed }
            },
            bytesCounted: connections.reduce(0) { $0 + $1.down })
    }

    static func mixed(_ rig: Rig) async throws -> MixedFigures {
        let base = rig.relay.connections("ours").count
        let metres = try RTKWatcher(port: rig.oursPort, watch: #"{"enable":true,"json":true,"accuracy":5}"#)
        for _ in 0..<300 where !metres.received.contains(where: { $0.mode == 3 }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        guard metres.received.contains(where: { $0.mode == 3 }) else {
            throw Failure(description: "mixed: the 5 m watcher never got a 3D fix")
        }
        try await Task.sleep(for: .seconds(3))
        let before = rig.relay.connections("ours").count - base
        let centimetres = try RTKWatcher(port: rig.oursPort, watch: #"{"enable":true,"json":true,"accuracy":0.02}"#)
        try await Task.sleep(for: .seconds(centimetreWatch))
        centimetres.leave()
        let during = rig.relay.connections("ours").count - base
        // The link closes within the linger (30 s simulated); then the 5 m watcher alone, for as long again.
        for _ in 0..<150 where rig.relay.connections("ours").dropFirst(base).contains(where: { $0.closed == nil }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(3))
        metres.leave()
        let connections = Array(rig.relay.connections("ours").dropFirst(base))
        guard let left = centimetres.left, !connections.isEmpty, connections.allSatisfy({ $0.closed != nil }) else {
            throw Failure(description: "mixed: ours's 2 cm watch opened no connection, or it never closed")
        }
        let watched = seconds(centimetres.joined.duration(to: left))
        let connected = connections.reduce(0) { $0 + $1.elapsed }
        let fixed = centimetres.received.first { $0.status == 3 }
        return MixedFigures(
            overhead: (connected - watched) * speed, watched: watched * speed, connected: connected * speed,
            connectionsWithoutRTK: before + (connections.count - during),
            demandToFixed: fixed.map { seconds(centimetres.joined.duration(to: $0.at)) * speed })
    }

    static func gpsdFigures(_ connections: [CountingRelay.Connection], watcher: RTKWatcher) throws -> GPSDFigures {
        // gpsd fetches the sourcetable on a connection of its own first: the stream is the longest one.
        guard let left = watcher.left, let stream = connections.max(by: { $0.elapsed < $1.elapsed }),
              let first = stream.samples.first, let last = stream.samples.last, last.elapsed > first.elapsed
        else {
            throw Failure(description: "gpsd never streamed from the caster")
        }
        let rate = Double(last.down - first.down) / (last.elapsed - first.elapsed)
        return GPSDFigures(
            rate: rate, openLag: seconds(watcher.joined.duration(to: stream.opened)),
            watched: seconds(watcher.joined.duration(to: left)),
            stayedConnected: stream.closed.map { $0 > left } ?? true,
            stillConnectedAfterLeaving: stream.closed == nil, connections: connections.count)
    }

    static func report(everyTen: EveryTenFigures, mixed: MixedFigures, gpsd: GPSDFigures) {
        let mega = 1e6
        let stayed = gpsd.stayedConnected ? "stayed connected" : "DISCONNECTED"
        let after = gpsd.stillConnectedAfterLeaving ? ", still connected 3 s after the client left" : ""
        print(String(format: "rtk: caster rate %.0f B/s (measured at gpsd's connection); gpsd connected %.1f s "
            + "after its client's watch and \(stayed) for the %.0f s watch (%d connections, the first for the "
            + "sourcetable)\(after)", gpsd.rate, gpsd.openLag, gpsd.watched, gpsd.connections))
        let cycle = everyTen.cycles.reduce(0, +) / Double(everyTen.cycles.count)
        print(String(format: "rtk every-10min: ours connected %.1f s simulated per duty cycle (mean of %d cycles, "
            + "%d B counted at the relay), 144 cycles a day: %.0f s a day; gpsd all day (86400 s)",
            cycle, everyTen.cycles.count, everyTen.bytesCounted, cycle * 144))
        Bench.report("rtk.bytes-per-day.every-10min", ours: gpsd.rate * cycle * 144 / mega, peer: "gpsd",
                     peerValue: gpsd.rate * day / mega, unit: "MB", target: "<=0.1", ratioDigits: 3)
        let hour = 3600 + mixed.overhead
        print(String(format: "rtk mixed: ours connected %.0f s simulated for a %.0f s 2 cm watch (%+.1f s), "
            + "%d connections while only the 5 m watcher watched: %.0f s a day for the hour's watch; gpsd all day",
            mixed.connected, mixed.watched, mixed.overhead, mixed.connectionsWithoutRTK, hour))
        Bench.report("rtk.bytes-per-day.mixed", ours: gpsd.rate * hour / mega, peer: "gpsd",
                     peerValue: gpsd.rate * day / mega, unit: "MB", target: "<=0.1", ratioDigits: 3)
        let fixed = everyTen.powerOnToFixed.map { String(format: "%.1f s", $0) }.joined(separator: ", ")
        let onDemand = mixed.demandToFixed.map { String(format: "%.1f s", $0) } ?? "none"
        print("rtk: simulated time from power-on to RTK fixed: \(fixed) (every-10min's duty cycles, the first a "
            + "cold start); from a 2 cm demand on a receiver with a 3D fix: \(onDemand)")
    }
}
