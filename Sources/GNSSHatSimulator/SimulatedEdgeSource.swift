// The simulated receiver's PPS line as the host reads it: an edge source fed by the simulator.
public import LinuxSystem
public import PiHardware

/// An edge source fed by the simulator: the PPS line of a simulated hat.
public final class SimulatedEdgeSource: EdgeEventSource {
    public let name: String
    private let queue = EdgeQueue()

    public init(name: String) {
        self.name = name
    }

    /// Queues an edge for the reader.
    public func emit(_ edge: EdgeEvent) {
        queue.push(edge)
    }

    /// How many times ``nextEdge(timeout:)`` was called (tests: a reader that can be woken
    /// never needs it).
    public var timedWaits: Int { queue.timedWaits }
    /// How many ``nextEdge(until:)`` calls ended woken, with no edge.
    public var wokenWaits: Int { queue.wokenWaits }

    public func nextEdge(timeout: Duration) throws -> EdgeEvent? {
        try queue.next(timeout: timeout)
    }

    /// Waits with no time-out for an edge, or until `waker` is woken (then returns nil): `poll`
    /// on an eventfd woken with each edge beside the waker's.
    public func nextEdge(until waker: Waker) throws -> EdgeEvent? {
        try queue.next(until: waker)
    }
}
