// The client's events in order: queued by libmosquitto's callbacks under the library lock, delivered
// by whichever thread releases it, one thread at a time, so no user code runs under a lock.
import LinuxSystem

/// A client's events, delivered in the order they were queued, by one thread at a time: callbacks
/// queue them while the library lock is held, and the thread that releases it delivers them
/// (``deliverQueued()``). A thread that finds another delivering leaves its events to it, so the
/// order holds across threads, and a delivery that calls back into the client (a handler that
/// publishes) only queues.
final class EventOutbox: Sendable {
    private struct State: Sendable {
        var queued: [MQTTEvent] = []
        var delivering = false
        var finished = false
    }

    private let state = Lock(State())
    private let handler: @Sendable (MQTTEvent) -> Void
    private let finisher: @Sendable () -> Void

    init(deliver: @escaping @Sendable (MQTTEvent) -> Void, finish: @escaping @Sendable () -> Void) {
        handler = deliver
        finisher = finish
    }

    /// Queues `event` for the next ``deliverQueued()``.
    func queue(_ event: MQTTEvent) {
        state.withLock { state in
            if !state.finished { state.queued.append(event) }
        }
    }

    /// Queues `event` and delivers.
    func deliver(_ event: MQTTEvent) {
        queue(event)
        deliverQueued()
    }

    /// Delivers what is queued, unless another thread is delivering (it will deliver these too).
    func deliverQueued() {
        while let events = state.withLock({ state -> [MQTTEvent]? in
            guard !state.delivering, !state.queued.isEmpty else { return nil }
            state.delivering = true
            defer { state.queued = [] }
            return state.queued
        }) {
            for event in events { handler(event) }
            state.withLock { $0.delivering = false }
        }
    }

    /// Delivers what is queued, then ends the stream; later events are dropped.
    func finish() {
        deliverQueued()
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { finisher() }
    }
}
