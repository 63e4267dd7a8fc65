public import GNSSHat
import LinuxSystem
import Signals

/// A clock that moves only when told to, for deterministic tests of anything that takes a
/// `Clock<Duration>`: timers armed on it fire when a test calls ``advance(by:)`` past their
/// deadline. Sleepers are resumed outside the clock's lock, in deadline order.
///
/// Its ``activity`` is idle unless a sleeper it resumed has not yet taken its wake-up (returned
/// from `sleep`): once it has, what its task does next is its own part's to report (a Receiver's
/// session, a signal's timer, a driver's operation).
public final class ManualClock: Clock, ActivityReporting {
    public struct Instant: InstantProtocol, Sendable, CustomStringConvertible {
        /// Time since the clock was made.
        public var offset: Duration

        public init(offset: Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        public var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: UnsafeContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        /// Sleepers cancelled before they registered.
        var cancelled: Set<UInt64> = []
        /// Sleepers resumed by an advance whose task has not yet returned from `sleep`.
        var woken: Set<UInt64> = []
        var changes: UInt64 = 0
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func readySleeperWaiters() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let ready = sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
            sleeperWaiters.removeAll { $0.count <= count }
            return ready
        }
    }

    private let state = Lock(State())
    private let activityWaiters = ConditionWaiters()

    public init() {}

    public var now: Instant {
        state.withLock { $0.now }
    }

    public var minimumResolution: Duration { .zero }

    /// Suspends until the clock has been advanced to `deadline`; returns at once if it already
    /// has. Throws `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        // The wake-up is taken here, in the woken task, whether it came from an advance or not.
        defer { tookWakeUp(id) }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let (outcome, ready) = state.withLock { state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, state.readySleeperWaiters())
                }
                if let outcome { continuation.resume(with: outcome) }
                for waiter in ready { waiter.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                // Not registered yet, or resumed by an advance already (then the wake-up stands).
                if !state.woken.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    private func tookWakeUp(_ id: UInt64) {
        let took = state.withLock { state -> Bool in
            guard state.woken.remove(id) != nil else { return false }
            state.changes &+= 1
            return true
        }
        if took { activityWaiters.resumeAll() }
    }

    /// Moves the clock forward and resumes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves the clock to `instant` (never backwards) and resumes the due sleepers; each counts as
    /// awake (the clock not idle) until its task has taken the wake-up.
    public func advance(to instant: Instant) {
        let due = state.withLock { state -> [Sleeper] in
            if instant > state.now { state.now = instant }
            let now = state.now
            let dueIDs = state.sleepers.filter { $0.value.deadline <= now }
                .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
                .map(\.key)
            if !dueIDs.isEmpty {
                state.woken.formUnion(dueIDs)
                state.changes &+= 1
            }
            return dueIDs.compactMap { state.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Idle when every sleeper it resumed has taken its wake-up.
    package var activity: Activity {
        state.withLock { Activity(isIdle: $0.woken.isEmpty, changes: $0.changes) }
    }

    package func waitForActivity(after changes: UInt64) async {
        await activityWaiters.wait { state.withLock { $0.changes } != changes }
    }

    /// How many tasks sleep on this clock now.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// The earliest deadline any sleeper waits for.
    public var nextDeadline: Instant? {
        state.withLock { $0.sleepers.values.map(\.deadline).min() }
    }

    /// Suspends until at least `count` tasks sleep on this clock: lets a test advance the
    /// clock only once the timers it expects are armed.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
