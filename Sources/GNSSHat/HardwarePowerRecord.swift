// The session's record of its hardware power: the current HardwarePowerChange and the observers of
// every change, under one lock so that a new observer gets the current value and then exactly the
// changes after it. The plan's jobs make the changes, one job at a time; a failure noted on the way
// (a power-on, the link, a plan's job) says why the signal's stop then powers the receiver off.
import LinuxSystem

final class HardwarePowerRecord: Sendable {
    private struct State {
        var current = HardwarePowerChange(power: .off, reason: .initial, at: .zero)
        /// The failure the next stop powers off for (nil: none since the last stop).
        var failure: String?
        var shuttingDown = false
        var next = 0
        var observers: [Int: AsyncStream<HardwarePowerChange>.Continuation] = [:]
        var finished = false
    }

    private let state = Lock(State())

    /// The hardware's power now, with why and when it last changed.
    var current: HardwarePowerChange { state.withLock { $0.current } }

    /// Records `power` for `reason` at `at` and tells the observers; nothing when the power and the
    /// reason are unchanged.
    func record(_ power: HardwarePower, _ reason: HardwarePowerChange.Reason, at: Duration) {
        state.withLock { state in
            guard power != state.current.power || reason != state.current.reason else { return }
            let change = HardwarePowerChange(power: power, reason: reason, at: at)
            state.current = change
            // An AsyncStream's yield only buffers or resumes: no observer's code runs under the lock.
            for observer in state.observers.values { observer.yield(change) }
        }
    }

    /// The current value, then every change, until ``finish()``. A consumer more than 1,024 changes
    /// behind loses the oldest.
    func changes() -> AsyncStream<HardwarePowerChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HardwarePowerChange.self, bufferingPolicy: .bufferingNewest(1024))
        let added = state.withLock { state -> Int? in
            continuation.yield(state.current)
            guard !state.finished else { return nil }
            state.next += 1
            state.observers[state.next] = continuation
            return state.next
        }
        guard let added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: added) }
        }
        return stream
    }

    /// A failure that ends the session (the signal stops next): the power-off is for it.
    func noteFailure(_ error: any Error) {
        guard !(error is CancellationError) else { return }
        state.withLock { state in state.failure = state.failure ?? "\(error)" }
    }

    /// The Receiver shuts down: the power-off that follows is for that.
    func noteShutdown() {
        state.withLock { $0.shuttingDown = true }
    }

    /// Why the signal's stop powers off: a failure noted since the last stop (then forgotten), the
    /// shutdown, or else the end of the linger after the last subscriber.
    func takeStopReason() -> HardwarePowerChange.Reason {
        state.withLock { state in
            defer { state.failure = nil }
            if let failure = state.failure { return .failure(failure) }
            return state.shuttingDown ? .shutdown : .lingerEnded
        }
    }

    /// Ends every observer's sequence (the Receiver shut down).
    func finish() {
        let observers = state.withLock { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }
}
