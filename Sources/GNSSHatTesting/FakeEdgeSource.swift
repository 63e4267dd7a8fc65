// A fake GPIO input line: the edges a test emits, read the way a line's event descriptor is.
import GNSSHatSimulator  // EdgeQueue
public import LinuxSystem
public import PiHardware

/// An edge source a test drives with `emit`. `nextEdge(timeout:)` returns an emitted edge at
/// once, or waits for one up to its time-out (so a reader thread does not spin); tests that emit
/// before reading never wait. `nextEdge(until:)` waits with no time-out on an eventfd woken with
/// each edge, beside the caller's waker, as a GPIO line's event descriptor is waited on.
public final class FakeEdgeSource: EdgeEventSource {
    public let name: String
    /// The edges this source reports; others passed to `emit` are dropped, like the kernel does.
    public let edges: GPIOEdges

    private let queue = EdgeQueue()
    /// The last sequence number given.
    private let sequence = Lock<UInt64>(0)

    public init(name: String = "fake edges", edges: GPIOEdges = .rising) {
        self.name = name
        self.edges = edges
    }

    /// Emits an edge with the given timestamp; the sequence number counts up from 1.
    public func emit(_ kind: EdgeEvent.Kind, at timestamp: Duration, clock: EdgeClock = .monotonic) {
        let wanted = switch (edges, kind) {
        case (.both, _), (.rising, .rising), (.falling, .falling): true
        default: false
        }
        guard wanted else { return }
        // Numbered and queued in one step, so that edges emitted from two threads are read in
        // the order of their numbers.
        sequence.withLock { last in
            last += 1
            queue.push(EdgeEvent(kind: kind, timestamp: timestamp, clock: clock, sequence: last))
        }
    }

    /// Makes the next `nextEdge` throw `error`.
    public func fail(with error: any Error & Sendable) {
        queue.fail(with: error)
    }

    /// Edges emitted but not read yet.
    public var pendingCount: Int { queue.pendingCount }

    /// How many times `nextEdge(timeout:)` was called: a reader that waits with a waker never
    /// needs it.
    public var timedWaits: Int { queue.timedWaits }

    /// How many `nextEdge(until:)` calls ended woken, with no edge.
    public var wokenWaits: Int { queue.wokenWaits }

    public func nextEdge(timeout: Duration) throws -> EdgeEvent? {
        try queue.next(timeout: timeout)
    }

    /// Waits with no time-out for an edge or a failure, or until `waker` is woken (then returns
    /// nil).
    public func nextEdge(until waker: Waker) throws -> EdgeEvent? {
        try queue.next(until: waker)
    }
}
