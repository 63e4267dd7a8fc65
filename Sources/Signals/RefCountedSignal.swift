public import Synchronization

/// A value stream backed by a costly side effect that runs only while somebody subscribes.
///
/// The first subscriber runs the `start` hook (power the receiver on), the last one — after
/// ``SignalConfiguration/linger`` — runs the `stop` hook (power it off), and a later subscriber
/// starts it again. Every new subscriber gets the latest value at once. Start and stop never
/// overlap; a failed start reaches every waiting subscriber; ``shutdown()`` stops and waits.
///
/// ```swift
/// let positions = RefCountedSignal<Fix>(configuration: .init(linger: .seconds(5))) { emitter in
///     try await receiver.powerOn { fix in emitter.send(fix) }   // start: first subscriber
/// } stop: {
///     await receiver.powerOff()                                 // stop: after the last one
/// }
/// for try await fix in positions { print(fix) }                 // powered while iterating
/// ```
///
/// Values are delivered to callback subscribers synchronously in the producer's context (keep
/// callbacks short), and to async subscribers through a per-subscriber buffer that never
/// blocks the producer. A producer sends from one task or thread at a time. A value already
/// on its way when a subscriber cancels may still reach it.
///
/// A `RefCountedSignal` is a ``DemandSignal`` whose subscribers say only *whether* they
/// listen: its demand type is `Never`, so no subscription can carry a demand.
public typealias RefCountedSignal<Value: Sendable> = DemandSignal<Value, Never>

/// A ``RefCountedSignal`` whose subscribers may also say *how much* they want: each
/// subscription (and hold) may carry a `Demand`, the signal keeps the aggregate of the live
/// subscriptions' demands (combined by its ``DemandPolicy``) and tells the producer whenever it
/// changes, through the `replan` hook.
///
/// ```swift
/// // Subscribers say how often they want a fix; the most frequent wins.
/// let fixes = DemandSignal<Fix, Duration>(demand: .minimum) { emitter, interval in
///     try await receiver.powerOn(every: interval) { emitter.send($0) }  // first subscriber
/// } replan: { interval in
///     await receiver.reconfigure(every: interval)                       // the aggregate changed
/// } stop: {
///     await receiver.powerOff()                                         // after the last one
/// }
/// let token = fixes.subscribe(demand: .seconds(600)) { fix in print(fix) }
/// token.setDemand(.seconds(60))                                         // re-plans at once
/// ```
///
/// Start, re-plan and stop run one at a time, never overlapping: a change during a start or a
/// re-plan is served by one more re-plan afterwards with the aggregate of that moment (changes
/// in between coalesce), a stop decided during a re-plan waits for it to return, and nothing is
/// re-planned once the stop began. The aggregate is `nil` while no live subscription carries a
/// demand (a subscription without one contributes nothing). The linger keeps the last plan:
/// the producer is not re-planned when the last subscriber leaves, and one that comes back
/// inside the linger re-plans only if the aggregate then differs from the plan.
public final class DemandSignal<Value: Sendable, Demand: Sendable & Equatable>: Sendable {
    /// Starts the producer; returns when it runs (values may be sent before it returns).
    /// Throwing fails every waiting subscriber (or retries, per ``RestartPolicy``); the stop
    /// hook then runs anyway, so it must undo a partial start.
    public typealias StartHook = @Sendable (SignalEmitter<Value>) async throws -> Void
    /// Starts the producer for the aggregate demand at this moment (`nil`: no live subscription
    /// carries a demand); otherwise like ``StartHook``.
    public typealias DemandStartHook = @Sendable (SignalEmitter<Value>, Demand?) async throws -> Void
    /// Tells the running producer the new aggregate demand. Never overlaps a start, a stop or
    /// another re-plan; a producer that cannot serve it can report a failure through its emitter.
    public typealias ReplanHook = @Sendable (Demand?) async -> Void
    /// Stops the producer. Never overlaps a start or a re-plan.
    public typealias StopHook = @Sendable () async -> Void

    @usableFromInline let core: SignalCore
    @usableFromInline let delivery: Delivery<Value>
    /// How demands combine (`nil` for a signal without demands); derived signals share it.
    let policy: DemandPolicy<Demand>?
    /// How a derived signal observes: through its base, with its transform (`nil`: observers
    /// are told by this signal's own delivery).
    let observeUpstream: ObserveUpstream?

    typealias ObserveUpstream = @Sendable (
        _ onValue: @escaping @Sendable (Value) -> Void,
        _ onCompletion: @escaping @Sendable (SignalCompletion) -> Void
    ) -> SignalToken

    init(
        configuration: SignalConfiguration,
        signalClock: SignalClock,
        policy: DemandPolicy<Demand>?,
        start: @escaping DemandStartHook,
        replan: @escaping ReplanHook,
        stop: @escaping StopHook,
        observeUpstream: ObserveUpstream? = nil
    ) {
        let delivery = Delivery<Value>(clock: signalClock, replay: configuration.replay)
        // The start hook gets the core from the core itself: a hook that held the core (say,
        // through a box filled after it was made) would keep the core, and whatever the hooks
        // capture, alive for ever.
        let core = SignalCore(
            configuration: configuration,
            clock: signalClock,
            delivery: delivery,
            combine: policy?.erased
        ) { core, epoch, demand in
            try await start(SignalEmitter(core: core, delivery: delivery, epoch: epoch), demand?.unwrap())
        } replan: { demand in
            await replan(demand?.unwrap())
        } stop: {
            await stop()
        }
        self.core = core
        self.delivery = delivery
        self.policy = policy
        self.observeUpstream = observeUpstream
    }

    // MARK: - Subscribing

    /// Subscribes with callbacks. `onValue` gets the latest value at once (when there is one
    /// and replay allows it), then every new value, in the producer's context. `onCompletion`
    /// is called once if the producer fails or the signal shuts down — not after `cancel()`.
    /// The subscription lasts until the token is cancelled or released.
    @inlinable
    public func subscribe(
        onValue: @escaping @Sendable (Value) -> Void,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> SignalToken {
        subscribeCallback(call: onValue, callSample: nil, onCompletion: onCompletion).token
    }

    /// Like ``subscribe(onValue:onCompletion:)``, with each value's age (zero for a live
    /// value, the time since it was sent for a replayed one).
    @inlinable
    public func subscribe(
        onSample: @escaping @Sendable (Sample<Value>) -> Void,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> SignalToken {
        subscribeCallback(
            call: { onSample(Sample(value: $0, age: .zero)) },
            callSample: onSample,
            onCompletion: onCompletion
        ).token
    }

    /// Subscribes as an async sequence: the subscription counts from now until it is
    /// cancelled, released, or the iterating task is cancelled. Iteration throws the
    /// producer's failure (or ``SignalError/shutDown``) once, after any buffered values.
    @inlinable
    public func subscribe(buffering: SubscriptionBuffering = .latest) -> SignalSubscription<Value> {
        subscribeStream(demand: nil, buffering: buffering)
    }

    /// Keeps the producer running without consuming values (pre-warm, or keep a receiver on
    /// for time service) until the token is cancelled or released. A hold ends like a
    /// subscription when the producer fails or the signal shuts down; `onCompletion` says so,
    /// so a holder that must keep the producer on can hold again.
    public func hold(onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }) -> SignalToken {
        makeHold(demand: nil, onCompletion: onCompletion)
    }

    // MARK: - Observing

    /// The producer's current lifecycle state.
    public var state: SignalState { core.state }

    /// The current state, then every change, until the signal shuts down.
    public func stateChanges() -> AsyncStream<SignalState> { core.stateChanges() }

    /// Counters: starts, stops, failures, time running and active, current subscribers.
    public var statistics: SignalStatistics { core.statistics }

    /// Current subscriptions and holds.
    public var subscriberCount: Int { core.subscriberCount }

    /// The latest value, if replay keeps one and it is not older than `maxAge`, with its age
    /// when the signal timed it (see ``Sample/age``).
    public var latest: Sample<Value>? {
        delivery.latestSample()
    }

    /// Stops the producer (at once, without linger, after any start in progress) and waits
    /// until it has stopped. Every subscriber gets ``SignalError/shutDown``; so does every
    /// later one. Calling it again waits for the same end.
    public func shutdown() async {
        await core.shutdown()
    }
}

extension DemandSignal where Demand == Never {
    /// Makes a signal whose timers run on `clock` (inject a manual clock in tests).
    public convenience init(
        configuration: SignalConfiguration = SignalConfiguration(),
        clock: some Clock<Duration>,
        start: @escaping StartHook,
        stop: @escaping StopHook
    ) {
        self.init(
            configuration: configuration,
            signalClock: SignalClock(clock),
            policy: nil,
            start: { emitter, _ in try await start(emitter) },
            replan: { _ in },
            stop: stop
        )
    }

    /// Makes a signal whose timers run on the continuous clock.
    public convenience init(
        configuration: SignalConfiguration = SignalConfiguration(),
        start: @escaping StartHook,
        stop: @escaping StopHook
    ) {
        self.init(configuration: configuration, clock: ContinuousClock(), start: start, stop: stop)
    }
}

extension DemandSignal {
    // MARK: - Internals used by derived signals and tests

    @inlinable
    func subscribeCallback(
        demand: AnyDemand? = nil,
        call: @escaping @Sendable (Value) -> Void,
        callSample: (@Sendable (Sample<Value>) -> Void)?,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void
    ) -> (token: SignalToken, id: SubscriberID) {
        let delivery = delivery
        let sink = CallbackSink(id: core.makeID(), call: call, callSample: callSample,
                                onCompletion: onCompletion, delivery: delivery)
        var replay: Sample<Value>?
        let accepted = if let demand {
            core.subscribe(sink.id, demand: demand, end: { sink.end($0) }) { replay = delivery.add(sink) }
        } else {
            core.subscribe(sink.id, end: { sink.end($0) }) { replay = delivery.add(sink) }
        }
        guard accepted else {
            onCompletion(.failure(SignalError.shutDown))
            return (SignalToken(), sink.id)
        }
        if let replay { delivery.completeReplay(sink, replay: replay) }
        return (SignalToken(core: core, id: sink.id), sink.id)
    }

    @inlinable
    func subscribeStream(demand: AnyDemand?, buffering: SubscriptionBuffering) -> SignalSubscription<Value> {
        let buffer = StreamBuffer<Value>(id: core.makeID(), buffering: buffering, delivery: delivery)
        let delivery = delivery
        let accepted = if let demand {
            core.subscribe(buffer.id, demand: demand, end: { buffer.end($0) }) { delivery.add(buffer) }
        } else {
            core.subscribe(buffer.id, end: { buffer.end($0) }) { delivery.add(buffer) }
        }
        if !accepted { buffer.finish(.failure(SignalError.shutDown)) }
        return SignalSubscription(core: core, buffer: buffer)
    }

    func makeHold(demand: AnyDemand?, onCompletion: @escaping @Sendable (SignalCompletion) -> Void) -> SignalToken {
        let id = core.makeID()
        let end: SubscriberEnd = { completion in
            if let completion { onCompletion(completion) }
        }
        let accepted = if let demand {
            core.subscribe(id, demand: demand, end: end, register: {})
        } else {
            core.subscribe(id, end: end, register: {})
        }
        guard accepted else {
            onCompletion(.failure(SignalError.shutDown))
            return SignalToken()
        }
        return SignalToken(core: core, id: id)
    }

    /// Whether a hook or a due timer is still to act (for tests).
    package var hasPendingTransition: Bool { core.hasPendingTransition }

    /// Suspends until no hook runs and no due timer is still to act (for tests: an explicit
    /// signal that the signal has done what it will do, instead of guessing).
    package func waitUntilSettled() async { await core.waitUntilSettled() }

    /// Whether a transition is due, which derived starts wait for this signal, and how often
    /// either changed: what a driver of a manual clock reads before it moves time.
    package var progress: SignalProgress { core.progress }

    /// Suspends until `progress.changes` is no longer `changes` (or the task is cancelled).
    package func waitForProgress(after changes: UInt64) async { await core.waitForChange(after: changes) }
}

/// The producer's handle on its signal, given to the start hook. It belongs to one run: once
/// that run stops, what it sends is ignored.
public struct SignalEmitter<Value: Sendable>: Sendable {
    @usableFromInline let core: SignalCore
    @usableFromInline let delivery: Delivery<Value>
    @usableFromInline let epoch: UInt64

    init(core: SignalCore, delivery: Delivery<Value>, epoch: UInt64) {
        self.core = core
        self.delivery = delivery
        self.epoch = epoch
    }

    /// Delivers a value to every subscriber and keeps it as the latest.
    @inlinable
    public func send(_ value: Value) {
        delivery.emit(value, epoch: epoch)
    }

    /// Reports that the producer failed while running: every subscriber gets `error` and the
    /// stop hook runs. (A failure during the start hook is better thrown from it.)
    public func fail(_ error: any Error) {
        core.producerFailed(epoch: epoch, error: error)
    }

    /// Whether this run still accepts values; a producer loop can end when it turns false.
    public var isActive: Bool {
        core.isAccepting(epoch: epoch)
    }
}

/// Keeps a subscription, hold or observation alive; cancelled by ``cancel()`` or when released.
public final class SignalToken: Sendable {
    @usableFromInline let core: SignalCore?
    @usableFromInline let id: SubscriberID
    /// Whether this is an observation's token (not counted by the lifecycle).
    @usableFromInline let observes: Bool
    @usableFromInline let cancelled = Atomic<Bool>(false)

    /// A token for a subscription that was refused (the signal is shut down).
    @inlinable
    init() {
        core = nil
        id = SubscriberID(raw: 0)
        observes = false
    }

    @inlinable
    init(core: SignalCore, id: SubscriberID, observes: Bool = false) {
        self.core = core
        self.id = id
        self.observes = observes
    }

    /// Ends the subscription. Calling it again does nothing.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if observes {
            endObservation()
        } else {
            core?.cancel(id)
        }
    }

    @inline(never)
    private func endObservation() {
        core?.endObservation(id, with: nil)
    }

    deinit {
        cancel()
    }
}
