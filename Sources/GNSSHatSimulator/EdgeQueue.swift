// The edges (and failures) an in-process edge source hands its reader: the simulator's PPS line
// (`SimulatedEdgeSource`) and the tests' `FakeEdgeSource` are both a queue like this one.

import Dispatch
public import LinuxSystem
public import PiHardware
import Signals

/// Edges queued by a feeder and taken by one reader, with both of `EdgeEventSource`'s waits: a
/// timed one (a semaphore counting what is queued) and one with no time-out that a `Waker` ends
/// (`poll` on an eventfd woken with each item, beside the caller's waker, as a GPIO line's event
/// descriptor is waited on). A failure queued with ``fail(with:)`` is thrown by the next wait,
/// before any queued edge.
public final class EdgeQueue: Sendable {
    private struct State {
        var edges: [EdgeEvent] = []
        var failure: (any Error & Sendable)?
        var timedWaits = 0
        var wokenWaits = 0
    }

    private let state = Lock(State())
    /// Counts queued edges and failures, for ``next(timeout:)``.
    private let signal = DispatchSemaphore(value: 0)
    /// Woken with each edge and failure, for ``next(until:)``; nil when no eventfd was to be had
    /// (then that wait looks at the waker every `edgeWakeCheckInterval`).
    private let ready: Waker?

    /// `eventfd`: false makes ``next(until:)`` wait in steps, as it does when no eventfd can be
    /// had (tests of that path).
    public init(eventfd: Bool = true) {
        ready = eventfd ? try? Waker() : nil
    }

    /// Queues an edge for the reader.
    public func push(_ edge: EdgeEvent) {
        state.withLock { state in
            state.edges.append(edge)
            // Under the lock, so that a reader taking the edge finds the count it takes too.
            signal.signal()
        }
        ready?.wake()
    }

    /// Makes the next wait throw `error`; a second failure before that wait replaces the first.
    public func fail(with error: any Error & Sendable) {
        state.withLock { state in
            if state.failure == nil { signal.signal() }
            state.failure = error
        }
        ready?.wake()
    }

    /// Edges queued but not taken yet.
    public var pendingCount: Int { state.withLock { $0.edges.count } }
    /// How many times ``next(timeout:)`` was called: a reader that waits with a waker never
    /// needs it.
    public var timedWaits: Int { state.withLock { $0.timedWaits } }
    /// How many ``next(until:)`` calls ended woken, with no edge.
    public var wokenWaits: Int { state.withLock { $0.wokenWaits } }

    /// The pending failure (thrown) or the first queued edge, waiting up to `timeout` for one;
    /// nil on time-out.
    public func next(timeout: Duration) throws -> EdgeEvent? {
        state.withLock { $0.timedWaits += 1 }
        // The semaphore counts queued edges and failures, so a wait succeeds once per item.
        guard signal.wait(timeout: dispatchDeadline(after: timeout)) == .success else { return nil }
        return try take(counted: false)
    }

    /// Waits with no time-out for an edge or a failure, or until `waker` is woken (then returns
    /// nil).
    public func next(until waker: Waker) throws -> EdgeEvent? {
        while true {
            if let edge = try take(counted: true) { return edge }
            let woken: Bool
            if let ready {
                woken = try !ready.wait(until: waker)
            } else {
                if let edge = try nextEdgeInSteps(until: waker, { try next(timeout: $0) }) { return edge }
                woken = true
            }
            if woken {
                state.withLock { $0.wokenWaits += 1 }
                return nil
            }
        }
    }

    /// Takes the pending failure (thrown) or the first queued edge. `counted`: the item's count
    /// is still on the semaphore, and is taken with it.
    private func take(counted: Bool) throws -> EdgeEvent? {
        let (edge, failure) = state.withLock { state -> (EdgeEvent?, (any Error & Sendable)?) in
            if let failure = state.failure {
                state.failure = nil
                if counted { _ = signal.wait(timeout: .now()) }
                return (nil, failure)
            }
            guard !state.edges.isEmpty else { return (nil, nil) }
            if counted { _ = signal.wait(timeout: .now()) }
            return (state.edges.removeFirst(), nil)
        }
        if let failure { throw failure }
        return edge
    }
}

/// A Dispatch deadline `timeout` from now (a negative one is now), capped at a day: for the
/// semaphore waits of the simulator and the test doubles.
func dispatchDeadline(after timeout: Duration) -> DispatchTime {
    .now() + .nanoseconds(Int(min(timeout.clampedNanoseconds, 86_400_000_000_000)))
}
