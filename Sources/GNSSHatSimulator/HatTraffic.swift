// What is in flight between the host and a simulated hat's receiver, counted both ways, so that a
// driver of a manual clock can tell when nothing is.
public import GNSSHat
import LinuxSystem
import Signals

/// Counts the bytes between host and simulated receiver, and the PPS edges on their way to the
/// host's reader, to tell when none is in flight.
public final class HatTraffic: ActivityReporting {
    private struct State {
        var receiverWrote = 0
        var hostConsumed = 0
        var hostOpen = false
        var hostWrote = 0
        var receiverConsumed = 0
        /// PPS edges the host reads but has not processed yet (see ``SimulatedEdgeSource``).
        var edgesInFlight = 0
        var changes: UInt64 = 0

        var isSettled: Bool {
            (!hostOpen || hostConsumed >= receiverWrote) && receiverConsumed >= hostWrote && edgesInFlight == 0
        }
    }

    private let state = Lock(State())
    private let waiters = ConditionWaiters()

    public init() {}

    /// Whether nothing is in flight.
    public var isSettled: Bool { state.withLock { $0.isSettled } }

    /// The counts behind `isSettled`, for a test's diagnostics.
    public var counts: String {
        state.withLock { s in
            "receiver wrote \(s.receiverWrote), host consumed \(s.hostConsumed) (open: \(s.hostOpen)); "
                + "host wrote \(s.hostWrote), receiver consumed \(s.receiverConsumed); "
                + "PPS edges in flight \(s.edgesInFlight)"
        }
    }

    /// Whether nothing is in flight, with the count of changes of the counts.
    package var activity: Activity {
        state.withLock { Activity(isIdle: $0.isSettled, changes: $0.changes) }
    }

    /// Suspends until the counts change from `changes`, or until the task is cancelled.
    package func waitForActivity(after changes: UInt64) async {
        await waiters.wait { state.withLock { $0.changes } != changes }
    }

    /// Suspends until nothing is in flight, or until the task is cancelled (a test's time limit
    /// then ends a wait for bytes that never come, rather than leaving it hanging).
    public func waitUntilSettled() async {
        await waiters.wait { isSettled }
    }

    private func update(_ change: (inout State) -> Void) {
        state.withLock { state in
            change(&state)
            state.changes &+= 1
        }
        waiters.resumeAll()
    }

    /// How many PPS edges are on their way to the host's reader now.
    func edgesInFlight(_ count: Int) {
        update { $0.edgesInFlight = count }
    }

    /// The receiver is about to write bytes: the host must read them, if it listens.
    func receiverWriting(_ count: Int) {
        update { state in if state.hostOpen { state.receiverWrote += count } }
    }

    /// The host (re)opened its port, dropping what was sent before.
    func hostOpened() {
        update { state in
            state.hostOpen = true
            state.hostConsumed = state.receiverWrote
        }
    }

    /// The host has processed bytes it read.
    func hostConsumed(_ count: Int) {
        update { $0.hostConsumed += count }
    }

    /// The host closed its port: what it did not read is dropped.
    func hostClosed() {
        update { state in
            state.hostOpen = false
            state.hostConsumed = state.receiverWrote
        }
    }

    func hostWriting(_ count: Int) {
        update { $0.hostWrote += count }
    }

    func hostWriteFailed(_ count: Int) {
        update { $0.hostWrote -= count }
    }

    /// The receiver has processed bytes the host wrote.
    func receiverConsumed(_ count: Int) {
        update { $0.receiverConsumed += count }
    }
}
