// A blocking read loop on a thread of its own (a UART's, the PPS line's) and the tasks that stop
// it: the loop reads while it is running and says when it has ended; stopping waits for that.
import LinuxSystem
import Signals

/// Whether a read loop should go on, and who waits for it to end.
final class LoopControl: Sendable {
    private struct State {
        var running = false
        var ended = true
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())

    /// The loop is about to start.
    func begin() {
        state.withLock { state in
            state.running = true
            state.ended = false
        }
    }

    /// Whether the loop should go on reading.
    var isRunning: Bool { state.withLock { $0.running } }

    /// The loop has ended (or could not start): whoever waits in ``stop(waking:)`` goes on.
    func ended() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.ended = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Tells the loop to stop, then calls `wake` (to cut a blocking read short); returns once the
    /// loop has ended (at once if it is not running).
    func stop(waking wake: () -> Void = {}) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                state.running = false
                if state.ended { return true }
                state.waiters.append(continuation)
                return false
            }
            wake()
            if ended { continuation.resume() }
        }
    }
}
