// The session's clock, and what the session does on it: each line of work (the power sequence, the
// DDC poller, a command, a request's wait) either works or waits until a deadline, so that a driver
// of a manual clock can tell when the session only waits for time, and for how long.
import LinuxSystem
import Signals

/// Any `Clock<Duration>`, with instants as offsets from when it was wrapped, and a record of the
/// session's work: a driver of a manual clock reads it to know whether the session works or only
/// waits for time, and until when.
final class ReceiverClock: Sendable {
    /// One line of the session's work, working or waiting until a deadline.
    struct Worker: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    /// What the session's work looks like now.
    struct Work: Sendable {
        /// The power sequence's worker, if one runs: nil, or whether it waits for time (a deadline
        /// still to come) rather than works.
        var sequenceWaits: Bool?
        /// Whether every other worker waits for time.
        var othersWait: Bool
        /// The earliest deadline of the waits in progress, due or not.
        var nextDeadline: Duration?
        var changes: UInt64
    }

    private enum Phase {
        case working
        case waiting(until: Duration)
    }

    private struct State {
        var workers: [UInt64: Phase] = [:]
        var sequence: UInt64?
        var lastID: UInt64 = 0
        var changes: UInt64 = 0
    }

    /// Time since the reference instant.
    let now: @Sendable () -> Duration
    /// Sleeps until the given offset; throws `CancellationError` when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async throws -> Void
    private let state = Lock(State())
    private let changed = ConditionWaiters()

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let reference = clock.now
        now = { reference.duration(to: clock.now) }
        sleepUntil = { offset in try await clock.sleep(until: reference.advanced(by: offset), tolerance: nil) }
    }

    // MARK: - Workers

    /// A new worker, working; `sequence`: the power sequence's (one at a time).
    func beginWork(sequence: Bool = false) -> Worker {
        update { state in
            state.lastID += 1
            state.workers[state.lastID] = .working
            if sequence { state.sequence = state.lastID }
            return Worker(id: state.lastID)
        }
    }

    /// The worker's work is over.
    func endWork(_ worker: Worker) {
        update { state in
            state.workers[worker.id] = nil
            if state.sequence == worker.id { state.sequence = nil }
        }
    }

    /// The worker waits until `deadline` at the latest (the wait counts as work once it is due).
    func wait(_ worker: Worker, until deadline: Duration) {
        update { state in
            if state.workers[worker.id] != nil { state.workers[worker.id] = .waiting(until: deadline) }
        }
    }

    /// The worker works again: called by whoever ends its wait before it resumes the worker's
    /// task, so the work is never unaccounted for on its way.
    func resume(_ worker: Worker) {
        update { state in
            if state.workers[worker.id] != nil { state.workers[worker.id] = .working }
        }
    }

    /// Sleeps for `duration` as `worker`'s wait (nil: as a worker of its own for the sleep).
    func sleep(for duration: Duration, as worker: Worker? = nil) async throws {
        let deadline = now() + duration
        let sleeper = worker ?? beginWork()
        wait(sleeper, until: deadline)
        defer { worker == nil ? endWork(sleeper) : resume(sleeper) }
        try await sleepUntil(deadline)
    }

    // MARK: - For a driver

    var work: Work {
        let now = now()
        return state.withLock { state in
            func waits(_ phase: Phase) -> Bool {
                if case .waiting(let deadline) = phase { deadline > now } else { false }
            }
            var othersWait = true
            var nextDeadline: Duration?
            for (id, phase) in state.workers {
                if case .waiting(let deadline) = phase { nextDeadline = min(nextDeadline ?? deadline, deadline) }
                if id != state.sequence && !waits(phase) { othersWait = false }
            }
            let sequence = state.sequence.flatMap { state.workers[$0] }.map(waits)
            return Work(sequenceWaits: sequence, othersWait: othersWait, nextDeadline: nextDeadline,
                        changes: state.changes)
        }
    }

    /// Suspends until the work's `changes` is no longer `changes`, or until the task is cancelled.
    func waitForChange(after changes: UInt64) async {
        await changed.wait { state.withLock { $0.changes } != changes }
    }

    private func update<T>(_ change: (inout State) -> T) -> T {
        let result = state.withLock { state in
            state.changes &+= 1
            return change(&state)
        }
        changed.resumeAll()
        return result
    }
}
