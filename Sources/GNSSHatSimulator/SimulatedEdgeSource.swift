// The simulated receiver's PPS line as the host reads it: an edge source fed by the simulator,
// which tells its hat's traffic how many edges are on their way to a reader.
public import LinuxSystem
public import PiHardware

/// An edge source fed by the simulator: the PPS line of a simulated hat.
///
/// While the host reads it (between its `readingStarted()` and `readingEnded()`), an edge is in
/// flight from the moment it is emitted until the reader comes back for the next one (its loop
/// handles an edge completely before it waits again); the count goes to the hat's traffic.
public final class SimulatedEdgeSource: EdgeEventSource {
    public let name: String
    private let queue = EdgeQueue()

    private struct Accounting {
        var traffic: HatTraffic?
        var reading = false
        /// Edges queued and not yet handed to a reader.
        var queued = 0
        /// An edge was handed to the reader, which has not come back for another yet.
        var handedOut = false

        var inFlight: Int { reading ? queued + (handedOut ? 1 : 0) : 0 }
    }

    private let accounting = Lock(Accounting())

    public init(name: String) {
        self.name = name
    }

    /// Counts the edges in flight in `traffic` from now on.
    public func countInFlight(in traffic: HatTraffic) {
        change { $0.traffic = traffic }
    }

    /// Queues an edge for the reader.
    public func emit(_ edge: EdgeEvent) {
        // Counted and queued in one step, so that a reader starting meanwhile counts it once.
        change { accounting in
            accounting.queued += 1
            queue.push(edge)
        }
    }

    /// How many times ``nextEdge(timeout:)`` was called (tests: a reader that can be woken
    /// never needs it).
    public var timedWaits: Int { queue.timedWaits }
    /// How many ``nextEdge(until:)`` calls ended woken, with no edge.
    public var wokenWaits: Int { queue.wokenWaits }

    public func nextEdge(timeout: Duration) throws -> EdgeEvent? {
        try reading { try queue.next(timeout: timeout) }
    }

    /// Waits with no time-out for an edge, or until `waker` is woken (then returns nil): `poll`
    /// on an eventfd woken with each edge beside the waker's.
    public func nextEdge(until waker: Waker) throws -> EdgeEvent? {
        try reading { try queue.next(until: waker) }
    }

    public func readingStarted() {
        change { $0.reading = true }
    }

    public func readingEnded() {
        change { accounting in
            accounting.reading = false
            accounting.handedOut = false
        }
    }

    /// A wait of the reader: the edge it had is processed once it comes back; the one it takes is
    /// in flight until it comes back again.
    private func reading(_ wait: () throws -> EdgeEvent?) throws -> EdgeEvent? {
        change { $0.handedOut = false }
        guard let edge = try wait() else { return nil }
        change { accounting in
            accounting.queued = max(accounting.queued - 1, 0)
            accounting.handedOut = true
        }
        return edge
    }

    /// Changes the accounting and tells the traffic, under the accounting's lock (the traffic's
    /// comes after it), so that the counts reach it in order.
    private func change(_ body: (inout Accounting) -> Void) {
        accounting.withLock { accounting in
            let before = accounting.inFlight
            body(&accounting)
            if accounting.inFlight != before { accounting.traffic?.edgesInFlight(accounting.inFlight) }
        }
    }
}
