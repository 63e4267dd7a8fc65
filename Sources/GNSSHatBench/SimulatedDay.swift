import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Signals

/// One simulated day of clients on one board, through the whole stack (Receiver, pseudo-terminal,
/// simulated u-blox) on a manual clock that the driver moves from one deadline to the next: every
/// client runs as a child of one driver operation, sleeping on the manual clock between its actions,
/// so nothing acts behind the driver's back and a run is the same every time.
struct SimulatedDay {
    /// What one client does all day.
    enum Client: Sendable {
        /// One subscriber of ``Receiver/fixes(every:maximumAge:accuracy:)`` from the start to the end of the day,
        /// subscribing again after a `noFix` error.
        case scheduled(every: Duration, accuracy: Double)
        /// A client at `offset`, `offset + every`, ... that subscribes plain `fixes` until it has a current fix
        /// with a position at least as accurate as `accuracy`, then leaves (a count-only user of the same need).
        case periodic(every: Duration, offset: Duration, accuracy: Double)
        /// Continuous subscribers of plain `fixes`, each joining and leaving at the given times.
        case continuous([(join: Duration, leave: Duration)])
    }

    /// A fix a client took, with the start of the power-on that gave it.
    struct TakenFix: Sendable {
        var at: Duration
        var start: SimulatedReceiver.Start?
        /// Time to first fix of that power-on (boot included), as the Receiver measured it.
        var timeToFirstFix: Duration?
    }

    /// What a day measured.
    struct Outcome {
        var times: [SimulatedReceiver.Mode: Duration]
        var starts: [SimulatedReceiver.Start]
        /// The aiding the simulated receiver took over the day.
        var aiding: SimulatedReceiver.AidingCounts
        var fixes: [TakenFix]
        var noFixes: Int
        var statistics: ReceiverStatistics
        var plan: PowerPlanStatus
        /// Wall-clock time the simulation took.
        var elapsed: Duration
    }

    var board: Board
    var options: ReceiverOptions
    var clients: [Client]
    var length: Duration = EnergyBenchmark.day

    func run() async throws -> Outcome {
        let clock = ManualClock()
        let hat = try SimulatedHat(board: board, clock: clock, connection: .pseudoTerminal, timing: .driven)
        let receiver = Receiver(on: hat, options: options)
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let log = DayLog()
        let started = ContinuousClock.now
        let end = ManualClock.Instant(offset: length)
        let clients = clients
        let length = length

        try await driver.run(limit: length) {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for client in clients {
                    group.addTask {
                        try await Self.act(client, until: length, receiver: receiver, hat: hat, clock: clock, log: log)
                        return false
                    }
                }
                group.addTask {
                    try await clock.sleep(until: end)
                    return true
                }
                // The day ends when its own sleeper wakes; clients still subscribed leave then.
                for try await dayEnded in group where dayEnded { break }
                log.cancelSubscriptions()
                group.cancelAll()
            }
        }
        let times = hat.receiver.timeInModes
        let outcome = Outcome(
            times: times, starts: hat.receiver.starts, aiding: hat.receiver.aidingReceived, fixes: log.fixes,
            noFixes: log.noFixes, statistics: receiver.statistics, plan: receiver.powerPlan,
            elapsed: started.duration(to: ContinuousClock.now))
        await receiver.shutdown()
        await hat.shutdown()
        return outcome
    }

    private static func act(
        _ client: Client, until length: Duration, receiver: Receiver, hat: SimulatedHat, clock: ManualClock, log: DayLog
    ) async throws {
        func taken() -> TakenFix {
            TakenFix(
                at: ManualClock.Instant(offset: .zero).duration(to: clock.now), start: hat.receiver.starts.last,
                timeToFirstFix: receiver.statistics.timesToFirstFix.last ?? nil)
        }
        switch client {
        case .scheduled(let interval, let accuracy):
            while !Task.isCancelled {
                let fixes = receiver.fixes(every: interval, accuracy: accuracy).subscribe()
                guard log.keep(fixes) else { return }
                do {
                    for try await _ in fixes { log.took(taken()) }
                    return
                } catch ReceiverError.noFix {
                    log.missed()
                }
            }
        case .periodic(let interval, let offset, let accuracy):
            var next = offset
            while next < length {
                try await clock.sleep(until: ManualClock.Instant(offset: next))
                let fixes = receiver.fixes.subscribe()
                guard log.keep(fixes) else { return }
                // A replayed fix from an earlier session is not the current position.
                for try await sample in fixes.samples where sample.value.hasPosition {
                    guard let age = sample.age, age < .seconds(1) else { continue }
                    guard let eph = sample.value.eph, eph <= accuracy else { continue }
                    log.took(taken())
                    break
                }
                log.drop(fixes)
                next += interval
            }
        case .continuous(let visits):
            try await withThrowingTaskGroup(of: Void.self) { group in
                for visit in visits {
                    group.addTask {
                        try await clock.sleep(until: ManualClock.Instant(offset: visit.join))
                        let fixes = receiver.fixes.subscribe()
                        guard log.keep(fixes) else { return }
                        try await clock.sleep(until: ManualClock.Instant(offset: visit.leave))
                        log.drop(fixes)
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}

/// What the clients of a day took, and their live subscriptions (so the day's end can cancel them).
private final class DayLog: Sendable {
    private struct State {
        var fixes: [SimulatedDay.TakenFix] = []
        var noFixes = 0
        var subscriptions: [ObjectIdentifier: SignalSubscription<Fix>] = [:]
        var ended = false
    }

    private let state = Lock(State())

    var fixes: [SimulatedDay.TakenFix] { state.withLock { $0.fixes } }
    var noFixes: Int { state.withLock { $0.noFixes } }

    func took(_ fix: SimulatedDay.TakenFix) { state.withLock { $0.fixes.append(fix) } }
    func missed() { state.withLock { $0.noFixes += 1 } }

    /// Keeps `subscription` until it is dropped or the day ends; false (and cancelled) when the day has ended.
    func keep(_ subscription: SignalSubscription<Fix>) -> Bool {
        let kept = state.withLock { state in
            guard !state.ended else { return false }
            state.subscriptions[ObjectIdentifier(subscription)] = subscription
            return true
        }
        if !kept { subscription.cancel() }
        return kept
    }

    func drop(_ subscription: SignalSubscription<Fix>) {
        state.withLock { _ = $0.subscriptions.removeValue(forKey: ObjectIdentifier(subscription)) }
        subscription.cancel()
    }

    /// Ends the day: every live subscription is cancelled (outside the lock), later ones at once.
    func cancelSubscriptions() {
        let live = state.withLock { state in
            state.ended = true
            defer { state.subscriptions = [:] }
            return Array(state.subscriptions.values)
        }
        for subscription in live { subscription.cancel() }
    }
}
