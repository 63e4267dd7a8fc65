/// What a ``CallbackSink`` keeps under its lock while the replayed value is handed over. It is not
/// generic: the sink's `deinit`, like every generic class's, is never specialised, and a generic
/// stash would have it look up the stash's type metadata (a hashed cache) at every cancel. The live
/// values it holds are boxed instead (`any Sendable`); there are values only when one is sent while
/// a replay is being handed over.
@usableFromInline
struct CallbackStash {
    @usableFromInline var live = false
    @usableFromInline var finished = false
    @usableFromInline var values: [any Sendable] = []

    @inlinable
    init() {}
}

/// The delivery end of a callback subscription. Live values go straight to `call` from the
/// delivery snapshot; the sink itself only matters while the replayed latest value is being
/// handed over (live values that arrive meanwhile are stashed, so none overtakes the replay)
/// and at the end.
@usableFromInline
final class CallbackSink<Value: Sendable>: Sendable {
    @usableFromInline let id: SubscriberID
    /// Delivers a live value.
    @usableFromInline let call: @Sendable (Value) -> Void
    /// Delivers a value with its age, for subscribers that read ages (`nil`: `call` it).
    @usableFromInline let callSample: (@Sendable (Sample<Value>) -> Void)?
    @usableFromInline let onCompletion: @Sendable (SignalCompletion) -> Void
    @usableFromInline let delivery: Delivery<Value>
    @usableFromInline let stash = Lock(CallbackStash())

    @inlinable
    init(
        id: SubscriberID,
        call: @escaping @Sendable (Value) -> Void,
        callSample: (@Sendable (Sample<Value>) -> Void)?,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void,
        delivery: Delivery<Value>
    ) {
        self.id = id
        self.call = call
        self.callSample = callSample
        self.onCompletion = onCompletion
        self.delivery = delivery
    }

    /// Whether this subscriber wants values timestamped (it reads their ages).
    @inlinable
    var timestamped: Bool { callSample != nil }

    @inlinable
    func deliverReplay(_ sample: Sample<Value>) {
        if let callSample { callSample(sample) } else { call(sample.value) }
    }

    /// The subscription ended: finished first, so a replay in progress cannot make it live
    /// again, then out of the delivery snapshot.
    @inlinable
    func end(_ completion: SignalCompletion?) {
        finish(completion)
        delivery.remove(id, timestamped: timestamped)
    }

    @inlinable
    func goLive() {
        stash.withLock { $0.live = true }
    }

    /// A live value sent while this sink was still in the replaying list.
    @inlinable
    func deliverDuringReplay(_ value: Value) {
        let deliverNow = stash.withLock { stash -> Bool in
            if stash.finished { return false }
            if stash.live { return true }
            stash.values.append(value)
            return false
        }
        if deliverNow { call(value) }
    }

    /// The stashed values, or — when there are none — goes live (returns `live == true`).
    @inlinable
    func takeStashOrGoLive() -> (pending: [Value], live: Bool) {
        stash.withLock { stash in
            if stash.finished { return ([], false) }
            if stash.values.isEmpty {
                stash.live = true
                return ([], true)
            }
            defer { stash.values.removeAll() }
            return (stash.values.compactMap { $0 as? Value }, false)
        }
    }

    /// Ends the subscription; `completion` is reported unless the subscriber cancelled.
    @inlinable
    func finish(_ completion: SignalCompletion?) {
        let first = stash.withLock { stash -> Bool in
            defer {
                stash.finished = true
                stash.values.removeAll()
            }
            return !stash.finished
        }
        if first, let completion { onCompletion(completion) }
    }
}

/// The per-subscriber buffer of an async subscription: latest-only or bounded, never blocking
/// the producer. One consumer task at a time calls `next()`.
@usableFromInline
final class StreamBuffer<Value: Sendable>: Sendable {
    @usableFromInline
    typealias Item = (value: Value, emittedAt: Duration?)

    @usableFromInline
    enum Ending {
        case cancelled
        case failed(any Error)
        /// The error has been thrown to the consumer; it now sees the end.
        case reported
    }

    @usableFromInline
    struct State {
        @usableFromInline var items: [Item] = []
        @usableFromInline var head = 0
        @usableFromInline var dropped = 0
        @usableFromInline var waiter: UnsafeContinuation<Item?, any Error>?
        @usableFromInline var ending: Ending?

        @inlinable
        init() {}

        @inlinable
        var count: Int { items.count - head }

        @inlinable
        mutating func push(_ item: Item, capacity: Int) {
            if count >= capacity {
                head += 1
                dropped += 1
            }
            if head > 0 && head >= capacity {
                items.removeFirst(head)
                head = 0
            }
            items.append(item)
        }

        @inlinable
        mutating func pop() -> Item? {
            guard head < items.count else { return nil }
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return item
        }
    }

    @usableFromInline let id: SubscriberID
    @usableFromInline let capacity: Int
    @usableFromInline let delivery: Delivery<Value>
    @usableFromInline let state = Lock(State())

    @inlinable
    init(id: SubscriberID, buffering: SubscriptionBuffering, delivery: Delivery<Value>) {
        self.id = id
        capacity = buffering.capacity
        self.delivery = delivery
    }

    @inlinable
    func end(_ completion: SignalCompletion?) {
        delivery.remove(id, timestamped: true)
        finish(completion)
    }

    /// Values dropped because the consumer was slower than the producer.
    var dropped: Int { state.withLock { $0.dropped } }

    @inlinable
    func push(_ value: Value, at time: Duration?) {
        let waiter = state.withLock { state -> UnsafeContinuation<Item?, any Error>? in
            guard state.ending == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.push((value, time), capacity: capacity)
            return nil
        }
        waiter?.resume(returning: (value, time))
    }

    /// Ends the buffer: a failure is thrown after the buffered values; `nil` (a cancel) ends
    /// at once.
    @inlinable
    func finish(_ completion: SignalCompletion?) {
        let waiter = state.withLock { state -> UnsafeContinuation<Item?, any Error>? in
            guard state.ending == nil else { return nil }
            let waiter = state.waiter
            state.waiter = nil
            if case let .failure(error) = completion {
                // A waiting consumer has an empty buffer: it gets the error now.
                state.ending = waiter == nil ? .failed(error) : .reported
            } else {
                state.ending = .cancelled
                state.items.removeAll()
                state.head = 0
            }
            return waiter
        }
        guard let waiter else { return }
        if case let .failure(error) = completion {
            waiter.resume(throwing: error)
        } else {
            waiter.resume(returning: nil)
        }
    }

    /// The next value, or `nil` at the end; throws the producer's failure once.
    func next(onCancel: @escaping @Sendable () -> Void) async throws -> Item? {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Item?, any Error>) in
                let result = state.withLock { state -> Result<Item?, any Error>? in
                    if let item = state.pop() { return .success(item) }
                    switch state.ending {
                    case .cancelled, .reported:
                        return .success(nil)
                    case let .failed(error):
                        state.ending = .reported
                        return .failure(error)
                    case nil:
                        state.waiter = continuation
                        return nil
                    }
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            onCancel()
        }
    }
}
