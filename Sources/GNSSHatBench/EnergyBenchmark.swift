import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Signals

/// `bench energy`: simulated days of clients, each run through the whole stack (Receiver,
/// pseudo-terminal, simulated u-blox) on a manual clock that jumps from one event to the next, so a
/// day takes about a second. The receiver's time in each mode comes from the simulated receiver
/// itself; energy is that time at the board's current figures (``EnergyModel``).
///
/// The scenarios (issue 16, item 6), 24 simulated hours each:
/// - *every-10min.cut-supply*: one subscriber of `fixes(every: 600 s, accuracy: 10 m)` on
///   `simulator-cut-supply` with a state directory (aiding saved before each cut, restored after).
///   Peers: *always-on* (gpsd: on all day, computed), *gpsd-device-hook* (a client every 600 s
///   subscribing plain `fixes` until its fix, linger 60 s, no state: cold at every start) and
///   *count-only* (today's GNSSHat: the same client, the board's linger, no state directory).
/// - *every-60s.backup*: `fixes(every: 60 s, accuracy: 10 m)` on `simulator`; peer continuous (computed).
/// - *mixed-day.backup*: a `fixes(every: 600 s)` subscriber and the noon clients of ``noonVisits()``
///   (continuous) on `simulator`; peer always-on (computed).
/// - *ttff.aided-after-cut*: the median time to first fix of the aided starts of every-10min.cut-supply
///   against the median of the cold starts of its count-only run.
enum EnergyBenchmark {
    static let day: Duration = .seconds(86_400)
    static let accuracy = 10.0

    /// 20 clients arriving over a minute at noon, each staying 20 to 60 seconds (seeded, so every run
    /// has the same day).
    static func noonVisits() -> [(join: Duration, leave: Duration)] {
        var random = SeededGenerator(seed: 2947)
        return (0..<20).map { index in
            let join = Duration.seconds(43_200 + 3 * index)
            return (join, join + .seconds(Int.random(in: 20...60, using: &random)))
        }
    }

    static func run() async throws {
        let started = ContinuousClock.now
        let cutSupply = try builtIn("simulator-cut-supply")
        let backup = try builtIn("simulator")
        // The simulated Pi keeps its clock with NTP (time aiding after a cut is sent only then),
        // whatever this machine's own clock discipline says.
        let synchronisation = SystemClock.synchronisation()
        progress("energy: the simulated Pi's clock is taken as synchronised (this machine's: \(synchronisation))")

        let stateDirectory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        let everyTenMinutes = SimulatedDay.Client.scheduled(every: .seconds(600), accuracy: accuracy)
        let aClientEveryTenMinutes = SimulatedDay.Client.periodic(
            every: .seconds(600), offset: .zero, accuracy: accuracy)

        let ours = try await scenario("every-10min.cut-supply", SimulatedDay(
            board: cutSupply, options: ReceiverOptions(stateDirectory: stateDirectory, aidingTime: .synchronised()),
            clients: [everyTenMinutes]))
        let deviceHook = try await scenario("every-10min.cut-supply gpsd-device-hook", SimulatedDay(
            board: cutSupply, options: ReceiverOptions(linger: .seconds(60)), clients: [aClientEveryTenMinutes]))
        let countOnly = try await scenario("every-10min.cut-supply count-only", SimulatedDay(
            board: cutSupply, options: ReceiverOptions(), clients: [aClientEveryTenMinutes]))
        let everyMinute = try await scenario("every-60s.backup", SimulatedDay(
            board: backup, options: ReceiverOptions(),
            clients: [.scheduled(every: .seconds(60), accuracy: accuracy)]))
        let mixed = try await scenario("mixed-day.backup", SimulatedDay(
            board: backup, options: ReceiverOptions(), clients: [everyTenMinutes, .continuous(noonVisits())]))

        let cut = EnergyModel(board: cutSupply)
        let kept = EnergyModel(board: backup)
        let oursCut = cut.milliwattHours(ours.times)
        Bench.report(
            "energy.every-10min.cut-supply", ours: oursCut, peer: "always-on", peerValue: cut.alwaysOn(for: day),
            unit: "mWh", target: "ratio<=0.015", ratioDigits: 3)
        Bench.report(
            "energy.every-10min.cut-supply.vs-device-hook", ours: oursCut, peer: "gpsd-device-hook",
            peerValue: cut.milliwattHours(deviceHook.times), unit: "mWh", target: "ratio<=0.2", ratioDigits: 3)
        Bench.report(
            "energy.every-10min.cut-supply.vs-count-only", ours: oursCut, peer: "count-only",
            peerValue: cut.milliwattHours(countOnly.times), unit: "mWh", target: "ratio<1", ratioDigits: 3)
        Bench.report(
            "energy.every-60s.backup", ours: kept.milliwattHours(everyMinute.times), peer: "continuous",
            peerValue: kept.alwaysOn(for: day), unit: "mWh", target: "ratio<=0.33", ratioDigits: 3)
        Bench.report(
            "energy.mixed-day.backup", ours: kept.milliwattHours(mixed.times), peer: "always-on",
            peerValue: kept.alwaysOn(for: day), unit: "mWh", target: "ratio<=0.025", ratioDigits: 3)

        let aided = medianTimeToFirstFix(of: ours, kind: .aided)
        let cold = medianTimeToFirstFix(of: countOnly, kind: .cold)
        if aided == nil {
            progress(
                "ttff.aided-after-cut: no aided start in every-10min.cut-supply (starts: \(census(ours.starts)));"
                    + " ours is the median time to first fix of all its power-ons after a cut")
        }
        Bench.report(
            "ttff.aided-after-cut", ours: aided ?? medianTimeToFirstFix(of: ours, after: 1) ?? .nan, peer: "cold",
            peerValue: cold ?? .nan, unit: "s", target: "ours<=5", ratioDigits: 3)
        progress("energy: done in \(Bench.format(seconds(started.duration(to: ContinuousClock.now)))) s")
    }

    /// Runs `day` and prints a progress line to stderr: its fixes, starts, plan and the time it took.
    static func scenario(_ name: String, _ day: SimulatedDay) async throws -> SimulatedDay.Outcome {
        let outcome = try await day.run()
        let statistics = outcome.plan.statistics
        var line = "energy: \(name): \(outcome.fixes.count) fixes taken, \(outcome.noFixes) noFix, "
            + "\(outcome.statistics.powerOns) power-ons (\(census(outcome.starts))), "
            + "receiver on \(Bench.format(seconds(onTime(outcome.times)))) s"
        if statistics.dutyCycles > 0 || statistics.aidingSaves > 0 || statistics.aidingRestores > 0 {
            line += ", \(statistics.dutyCycles) duty cycles, aiding saved \(statistics.aidingSaves)"
                + " restored \(statistics.aidingRestores) skipped \(statistics.aidingSkipped)"
        }
        let aiding = outcome.aiding
        if aiding != SimulatedReceiver.AidingCounts() {
            line += ", receiver took time aiding \(aiding.time)×, position \(aiding.position)×,"
                + " \(aiding.recordsAccepted) database records (\(aiding.recordsRefused) refused)"
        }
        let plans = statistics.timeInPlan.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Bench.format(seconds($0.value))) s" }
        if !plans.isEmpty { line += ", plans: " + plans.joined(separator: ", ") }
        line += "; simulated in \(Bench.format(seconds(outcome.elapsed))) s"
        progress(line)
        return outcome
    }

    /// The median time to first fix (seconds) of the power-ons of `kind` that gave a client its fix.
    static func medianTimeToFirstFix(of outcome: SimulatedDay.Outcome, kind: SimulatedReceiver.Start) -> Double? {
        median(outcome.fixes.filter { $0.start == kind }.compactMap(\.timeToFirstFix))
    }

    /// The median time to first fix (seconds) of the fixes after the first `skipping`.
    static func medianTimeToFirstFix(of outcome: SimulatedDay.Outcome, after skipping: Int) -> Double? {
        median(outcome.fixes.dropFirst(skipping).compactMap(\.timeToFirstFix))
    }

    static func median(_ durations: [Duration]) -> Double? {
        durations.isEmpty ? nil : GNSSHatBench.median(durations.map(seconds))
    }

    /// "143 hot, 1 cold": the starts by kind.
    static func census(_ starts: [SimulatedReceiver.Start]) -> String {
        let counts = Dictionary(grouping: starts, by: \.rawValue).mapValues(\.count)
        return counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            .joined(separator: ", ")
    }

    static func onTime(_ times: [SimulatedReceiver.Mode: Duration]) -> Duration {
        times.filter { $0.key != .off }.values.reduce(.zero, +)
    }

    static func builtIn(_ name: String) throws -> Board {
        guard let board = try BoardCatalog.builtIn(name) else {
            throw BenchmarkFailure("the \(name) board is not built in")
        }
        return board
    }

    /// A fresh, empty directory for the aiding state.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "gnss-hat-bench-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
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
