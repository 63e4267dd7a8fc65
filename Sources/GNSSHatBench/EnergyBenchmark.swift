import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import Signals

/// `bench energy`: one simulated day of clients on the `simulator` board — a client that wants a
/// fix for 5 seconds every 10 minutes, and a burst of clients around noon — run through the
/// whole stack (Receiver, pseudo-terminal, simulated u-blox) on a manual clock that jumps from
/// one event to the next, so a day takes seconds. The receiver's time in each mode comes from
/// the simulated receiver itself; energy is that time at the board's current figures.
///
/// The peer is what gpsd does: it never powers a receiver down, so the receiver is on all day
/// (one start, then tracking). It is computed from the same board figures and the cold start the
/// simulation measured, not simulated epoch by epoch.
enum EnergyBenchmark {
    static let day: Duration = .seconds(86_400)

    /// What a client does at a moment of the day.
    enum Action {
        /// Subscribes to fixes; with `holdAfterFix`, waits for a current fix and leaves that long after it.
        case join(String, holdAfterFix: Duration?)
        case leave(String)
    }

    /// A 5-second fix every 10 minutes, and 20 clients arriving over a minute at noon, each
    /// staying 20 to 60 seconds (seeded, so every run has the same day).
    static func schedule() -> [(at: Duration, action: Action)] {
        var actions: [(at: Duration, action: Action)] = []
        for index in 0..<144 {
            actions.append((.seconds(index * 600 + 30), .join("periodic-\(index)", holdAfterFix: .seconds(5))))
        }
        var random = SeededGenerator(seed: 2947)
        for index in 0..<20 {
            let start = Duration.seconds(43_200 + 3 * index)
            actions.append((start, .join("noon-\(index)", holdAfterFix: nil)))
            actions.append((start + .seconds(Int.random(in: 20...60, using: &random)), .leave("noon-\(index)")))
        }
        return actions
    }

    static func run() async throws {
        guard let board = try BoardCatalog.builtIn("simulator") else {
            throw BenchmarkFailure("the simulator board is not built in")
        }
        let clock = ManualClock()
        let hat = try SimulatedHat(board: board, clock: clock, connection: .pseudoTerminal, timing: .driven)
        let receiver = Receiver(on: hat)
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let started = ContinuousClock.now

        // The clients' actions run in this task, in time order, so nothing acts behind the
        // driver's back: time moves only through the driver.
        var pending = schedule()
        var subscriptions: [String: SignalSubscription<Fix>] = [:]
        while let index = pending.indices.min(by: { pending[$0].at < pending[$1].at }) {
            let (at, action) = pending.remove(at: index)
            let now = Duration.zero + ManualClock.Instant(offset: .zero).duration(to: clock.now)
            if at > now { await driver.advance(by: at - now) }
            switch action {
            case .join(let name, let hold):
                let fixes = receiver.fixes.subscribe()
                subscriptions[name] = fixes
                guard let hold else { continue }
                try await driver.run(limit: .seconds(600)) {
                    // A replayed fix from an earlier session is not the current position.
                    for try await sample in fixes.samples where sample.value.hasPosition {
                        if let age = sample.age, age < .seconds(1) { return }
                    }
                }
                let fixedAt = ManualClock.Instant(offset: .zero).duration(to: clock.now)
                pending.append((fixedAt + hold, .leave(name)))
            case .leave(let name):
                subscriptions.removeValue(forKey: name)?.cancel()
            }
        }
        try await driver.run(limit: .seconds(3600)) { await receiver.waitForPower { !$0.isPowered } }
        let remaining = clock.now.duration(to: ManualClock.Instant(offset: day))
        if remaining > .zero { await driver.advance(by: remaining) }
        let elapsed = started.duration(to: ContinuousClock.now)

        let times = hat.receiver.timeInModes
        let statistics = receiver.statistics
        await receiver.shutdown()
        await hat.shutdown()

        let current = board.current
        let acquisition = current.acquisition ?? 0
        let tracking = current.tracking ?? acquisition
        let backup = current.backup ?? 0
        func hours(_ duration: Duration?) -> Double { seconds(duration ?? .zero) / 3600 }
        let acquiring = (times[.booting] ?? .zero) + (times[.acquiring] ?? .zero)
        let onTime = acquiring + (times[.tracking] ?? .zero)
        let offTime = day - onTime
        // mWh = mA × h × V; the backup supply keeps the ephemeris while the main supply is cut.
        let ours = (hours(acquiring) * acquisition + hours(times[.tracking]) * tracking + hours(offTime) * backup)
            * current.volts

        // gpsd's receiver starts once, cold (the simulation's model: boot, then the cold start).
        let simulation = board.simulation ?? Board.Simulation()
        let coldStart = simulation.boot + simulation.coldStart
        let gpsd = (hours(coldStart) * acquisition + hours(day - coldStart) * tracking) * current.volts

        Bench.report("energy", ours: ours, peer: "gpsd", peerValue: gpsd, unit: "mWh", target: "ratio<0.10")
        Bench.report("energy-on-time", ours: seconds(onTime), peer: "gpsd", peerValue: seconds(day), unit: "s",
                     target: "ratio<0.10")
        let ttffs = statistics.timesToFirstFix.compactMap { $0 }.map(seconds).sorted()
        let medianTTFF = ttffs.isEmpty ? 0 : ttffs[ttffs.count / 2]
        let starts = hat.receiver.starts
        FileHandle.standardError.write(Data((
            "energy: \(statistics.powerOns) power-ons (\(starts.filter { $0 == .cold }.count) cold, "
                + "\(starts.filter { $0 == .hot }.count) hot), median TTFF of the last \(ttffs.count) "
                + "\(Bench.format(medianTTFF)) s, receiver on \(Bench.format(seconds(onTime))) s of the day; "
                + "simulated in \(Bench.format(seconds(elapsed))) s\n").utf8))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
