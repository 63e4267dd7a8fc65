// Tells a test when objects it cannot see into are gone: each owns a marker, whose deinit
// reports to the watch. Waiting for the last release needs no clock and no polling.
import LinuxSystem
import Signals  // ConditionWaiters

/// Counts the ``ReleaseWatch/Marker``s still alive. Give a marker to what should be released
/// (capture it in a hook, keep it in a fake the object owns), drop your own references, then
/// wait for ``waitUntilAllReleased()``: it returns once every marker has been released. An
/// object that is never released keeps the wait going until the task is cancelled (by a test's
/// time limit), so the test can then say what is still alive.
public final class ReleaseWatch: Sendable {
    /// Reports its own release to the watch that made it.
    public final class Marker: Sendable {
        /// What the marker stands for, for messages.
        public let name: String
        private let watch: ReleaseWatch

        fileprivate init(name: String, watch: ReleaseWatch) {
            self.name = name
            self.watch = watch
        }

        deinit {
            watch.released(name)
        }
    }

    private struct State {
        var alive: [String: Int] = [:]
        var made = 0
    }

    private let state = Lock(State())
    private let waiters = ConditionWaiters()

    public init() {}

    /// A new marker, counted as alive until it is released.
    public func marker(_ name: String) -> Marker {
        state.withLock { state in
            state.alive[name, default: 0] += 1
            state.made += 1
        }
        return Marker(name: name, watch: self)
    }

    /// How many markers were made.
    public var made: Int { state.withLock { $0.made } }

    /// How many markers are alive, by name (names with none alive are left out).
    public var alive: [String: Int] { state.withLock { $0.alive } }

    /// Suspends until no marker is alive, or until the task is cancelled.
    public func waitUntilAllReleased() async {
        await waiters.wait { state.withLock { $0.alive.isEmpty } }
    }

    private func released(_ name: String) {
        let none = state.withLock { state -> Bool in
            let left = (state.alive[name] ?? 1) - 1
            state.alive[name] = left > 0 ? left : nil
            return state.alive.isEmpty
        }
        if none { waiters.resumeAll() }
    }
}
