// The clock every sleep of the package waits on. A sleep on the standard clocks (or `Task.sleep`)
// waits on libdispatch's timers wherever custom executors cannot take it (Swift 6.2), and a process
// that has once used libdispatch's workqueue wakes once a second for as long as it lives; this
// clock's sleeps wait on the timer thread of ``ThreadExecutors`` instead, so that an idle service
// never wakes, on either toolchain.

/// The continuous clock (``ContinuousClock``'s instants and time), whose sleeps end on the timer
/// thread of ``ThreadExecutors`` once they are installed, and on ``ContinuousClock``'s own before.
public struct TimerThreadClock: Clock, Sendable {
    public typealias Instant = ContinuousClock.Instant

    public init() {}

    public var now: Instant { .now }

    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps until `deadline`; a cancelled task's sleep ends at once with `CancellationError`, and
    /// its timer is withdrawn (no wake-up is left for it).
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        guard let timers = ThreadExecutors.timers else {
            try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
            return
        }
        let remaining = Instant.now.duration(to: deadline)
        guard remaining > .zero else { return try Task.checkCancellation() }
        let sleep = ClockSleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                sleep.begin(continuation, timers: timers, at: MonotonicInstant.now().advanced(by: remaining))
            }
        } onCancel: {
            sleep.cancel()
        }
    }
}

/// One sleep: resumed exactly once, by its timer or by its task's cancellation.
private final class ClockSleep: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Void, any Error>, timer: UInt64, timers: TimerThread)
        case cancelled
        case done
    }

    private let state = Lock(State.idle)

    func begin(_ continuation: CheckedContinuation<Void, any Error>, timers: TimerThread, at deadline: MonotonicInstant) {
        // The timer is set under this sleep's lock, so that it cannot end the sleep before the sleep
        // knows its continuation (the timer thread calls outside its own lock: no lock cycle).
        let cancelledFirst = state.withLock { state -> Bool in
            guard case .idle = state else { return true }
            let timer = timers.call(at: deadline) { [self] in finish(cancelled: false) }
            state = .waiting(continuation, timer: timer, timers: timers)
            return false
        }
        if cancelledFirst { continuation.resume(throwing: CancellationError()) }
    }

    func cancel() {
        finish(cancelled: true)
    }

    private func finish(cancelled: Bool) {
        let waiting = state.withLock { state -> (CheckedContinuation<Void, any Error>, UInt64, TimerThread)? in
            switch state {
            case .idle:
                if cancelled { state = .cancelled }
                return nil
            case .waiting(let continuation, let timer, let timers):
                state = .done
                return (continuation, timer, timers)
            case .cancelled, .done:
                return nil
            }
        }
        guard let (continuation, timer, timers) = waiting else { return }
        if cancelled {
            timers.cancelCall(timer)
            continuation.resume(throwing: CancellationError())
        } else {
            continuation.resume()
        }
    }
}
