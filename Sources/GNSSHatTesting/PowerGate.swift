// Where a FakePowerSwitch's power-on or power-off waits until the test lets it through.
import LinuxSystem

/// A gate a power-on or power-off waits at until the test opens it; the test can first wait until the
/// power-on has reached it.
public final class PowerGate: Sendable {
    private struct State {
        var reached = false
        var open = false
        var passer: CheckedContinuation<Void, Never>?
        var reachWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())

    init() {}

    /// Suspends until a power-on (or power-off) waits at this gate.
    public func waitUntilReached() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.reached { return true }
                state.reachWaiters.append(continuation)
                return false
            }
            if reached { continuation.resume() }
        }
    }

    /// Lets the waiting (or next) transition through.
    public func open() {
        let passer = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.open = true
            defer { state.passer = nil }
            return state.passer
        }
        passer?.resume()
    }

    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (open, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                state.reached = true
                let waiters = state.reachWaiters
                state.reachWaiters.removeAll()
                if !state.open { state.passer = continuation }
                return (state.open, waiters)
            }
            for waiter in waiters { waiter.resume() }
            if open { continuation.resume() }
        }
    }
}
