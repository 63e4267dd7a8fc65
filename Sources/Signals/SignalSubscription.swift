import Synchronization

/// An async-sequence subscription of a ``RefCountedSignal``. It counts as a subscriber from
/// its creation until ``cancel()``, its release, or the cancellation of the task iterating it.
/// One task iterates it at a time.
public final class SignalSubscription<Value: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = any Error

    @usableFromInline let core: SignalCore
    @usableFromInline let buffer: StreamBuffer<Value>
    private let cancelled = Atomic<Bool>(false)

    @usableFromInline
    init(core: SignalCore, buffer: StreamBuffer<Value>) {
        self.core = core
        self.buffer = buffer
    }

    deinit {
        cancel()
    }

    /// Ends the subscription; iteration then ends (returns `nil`). Calling it again does nothing.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        core.cancel(buffer.id)
    }

    /// Values this subscriber lost because it was slower than the producer (with
    /// ``SubscriptionBuffering/latest``, every value replaced before it was read).
    public var droppedCount: Int { buffer.dropped }

    /// The same subscription, with each value's age when it was read.
    public var samples: Samples { Samples(subscription: self) }

    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: self)
    }

    func nextItem() async throws -> StreamBuffer<Value>.Item? {
        try await buffer.next { [self] in cancel() }
    }

    public struct Iterator: AsyncIteratorProtocol {
        let subscription: SignalSubscription<Value>

        public mutating func next() async throws -> Value? {
            try await subscription.nextItem()?.value
        }
    }

    /// The subscription's values with their ages.
    public struct Samples: AsyncSequence, Sendable {
        public typealias Element = Sample<Value>
        public typealias Failure = any Error

        let subscription: SignalSubscription<Value>

        public func makeAsyncIterator() -> Iterator {
            Iterator(subscription: subscription)
        }

        public struct Iterator: AsyncIteratorProtocol {
            let subscription: SignalSubscription<Value>

            public mutating func next() async throws -> Sample<Value>? {
                guard let item = try await subscription.nextItem() else { return nil }
                return Sample(value: item.value, age: subscription.age(of: item))
            }
        }
    }

    func age(of item: StreamBuffer<Value>.Item) -> Duration? {
        item.emittedAt.map { core.clock.now() - $0 }
    }
}

extension DemandSignal: AsyncSequence {
    public typealias Element = Value
    public typealias Failure = any Error

    /// Iterating the signal itself subscribes it (latest-only buffering) for as long as the
    /// iteration lasts.
    public func makeAsyncIterator() -> SignalSubscription<Value>.Iterator {
        subscribe().makeAsyncIterator()
    }
}
