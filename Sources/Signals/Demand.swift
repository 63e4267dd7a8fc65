/// How the demands of a signal's subscriptions combine into the one demand its producer
/// serves: "how much" is wanted, where the subscriber count only says "whether".
///
/// `combine` must be associative and commutative (the signal combines the live demands in any
/// order and any grouping, and must get the same aggregate): the shortest interval, the
/// tightest accuracy, the larger of two rates. It need not be idempotent or invertible: when a
/// demand leaves, the signal combines the remaining ones afresh. It and the demand type's `==`
/// are called under the signal's lock, so they must be pure: no calls into the signal.
///
/// ```swift
/// // Subscribers say how often they want a value; the most frequent wins.
/// let policy = DemandPolicy<Duration>.minimum
/// ```
public struct DemandPolicy<Demand: Sendable & Equatable>: Sendable {
    /// Combines two demands into one that serves both.
    public let combine: @Sendable (Demand, Demand) -> Demand

    /// A policy that combines demands with `combine`, which must be associative and commutative.
    public init(combine: @escaping @Sendable (Demand, Demand) -> Demand) {
        self.combine = combine
    }
}

extension DemandPolicy where Demand: Comparable {
    /// The smallest demand wins (the shortest interval between values, say).
    public static var minimum: DemandPolicy { DemandPolicy { Swift.min($0, $1) } }

    /// The largest demand wins (the highest rate, say).
    public static var maximum: DemandPolicy { DemandPolicy { Swift.max($0, $1) } }
}

/// A demand as the signal's lifecycle holds it: the lifecycle is not generic over the demand
/// type (so that none of it runs unspecialised generic code), and two demands are equal when
/// the signal's own demand type says so.
@usableFromInline
struct AnyDemand: Sendable, Equatable {
    @usableFromInline let value: any Sendable & Equatable

    @inlinable
    init(_ value: some Sendable & Equatable) {
        self.value = value
    }

    /// The demand as the type the signal was made with; any other is a bug in Signals.
    @inlinable
    func unwrap<Demand>(as type: Demand.Type = Demand.self) -> Demand {
        guard let demand = value as? Demand else {
            preconditionFailure("a signal holds a demand of type \(Swift.type(of: value)), not \(Demand.self)")
        }
        return demand
    }

    @usableFromInline
    static func == (lhs: AnyDemand, rhs: AnyDemand) -> Bool {
        lhs.value.isEqual(to: rhs.value)
    }
}

extension Equatable {
    /// Whether `other` is a value of this type equal to this one.
    fileprivate func isEqual(to other: any Equatable) -> Bool {
        (other as? Self) == self
    }
}

extension DemandPolicy {
    /// The policy over demands as the lifecycle holds them.
    var erased: @Sendable (AnyDemand, AnyDemand) -> AnyDemand {
        let combine = combine
        return { lhs, rhs in AnyDemand(combine(lhs.unwrap(), rhs.unwrap())) }
    }
}

extension DemandSignal {
    /// Makes a signal whose subscriptions may carry a demand, combined by `policy`, with
    /// timers on `clock` (inject a manual clock in tests). `start` gets the aggregate demand
    /// at the moment the start begins, `replan` every later change while the producer runs.
    public convenience init(
        configuration: SignalConfiguration = SignalConfiguration(),
        demand policy: DemandPolicy<Demand>,
        clock: some Clock<Duration>,
        start: @escaping DemandStartHook,
        replan: @escaping ReplanHook,
        stop: @escaping StopHook
    ) {
        self.init(
            configuration: configuration,
            signalClock: SignalClock(clock),
            policy: policy,
            start: start,
            replan: replan,
            stop: stop
        )
    }

    /// Makes a signal with a demand policy whose timers run on the continuous clock.
    public convenience init(
        configuration: SignalConfiguration = SignalConfiguration(),
        demand policy: DemandPolicy<Demand>,
        start: @escaping DemandStartHook,
        replan: @escaping ReplanHook,
        stop: @escaping StopHook
    ) {
        self.init(
            configuration: configuration,
            demand: policy,
            clock: ContinuousClock(),
            start: start,
            replan: replan,
            stop: stop
        )
    }

    // MARK: - Subscribing with a demand
    //
    // A ``RefCountedSignal``'s demand type is `Never`: there is no demand to pass, so none of
    // these can be called on one.

    /// Like ``subscribe(onValue:onCompletion:)``, counting `demand` in the aggregate until the
    /// subscription ends or its demand is changed (``DemandToken/setDemand(_:)``).
    @inlinable
    public func subscribe(
        demand: Demand,
        onValue: @escaping @Sendable (Value) -> Void,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> DemandToken<Demand> {
        DemandToken(subscribeCallback(
            demand: AnyDemand(demand), call: onValue, callSample: nil, onCompletion: onCompletion
        ).token)
    }

    /// Like ``subscribe(onSample:onCompletion:)``, counting `demand` in the aggregate.
    @inlinable
    public func subscribe(
        demand: Demand,
        onSample: @escaping @Sendable (Sample<Value>) -> Void,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> DemandToken<Demand> {
        DemandToken(subscribeCallback(
            demand: AnyDemand(demand),
            call: { onSample(Sample(value: $0, age: .zero)) },
            callSample: onSample,
            onCompletion: onCompletion
        ).token)
    }

    /// Like ``subscribe(buffering:)``, counting `demand` in the aggregate.
    @inlinable
    public func subscribe(
        demand: Demand,
        buffering: SubscriptionBuffering = .latest
    ) -> DemandSubscription<Value, Demand> {
        DemandSubscription(subscribeStream(demand: AnyDemand(demand), buffering: buffering))
    }

    /// Like ``hold(onCompletion:)``, counting `demand` in the aggregate.
    public func hold(
        demand: Demand,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> DemandToken<Demand> {
        DemandToken(makeHold(demand: AnyDemand(demand), onCompletion: onCompletion))
    }

    /// The aggregate demand of the live subscriptions and holds now (`nil`: none carries a
    /// demand). While the producer runs with subscribers it has been, or is about to be, told
    /// this; see ``SignalStatistics/replans``.
    public var demand: Demand? {
        core.demand?.unwrap()
    }
}

/// A subscription or hold that carries a demand: cancel it as its ``token``, or change its
/// demand while it lasts. Released (every copy), it cancels like a ``SignalToken``.
public struct DemandToken<Demand: Sendable & Equatable>: Sendable {
    /// The token that keeps the subscription alive; keep it with other signals' tokens if need be.
    public let token: SignalToken

    @usableFromInline
    init(_ token: SignalToken) {
        self.token = token
    }

    /// Replaces the subscription's demand (`nil`: it no longer carries one); the producer is
    /// re-planned if the aggregate changes. Does nothing once the subscription has ended, so a
    /// change that races a cancel lands in order.
    public func setDemand(_ demand: Demand?) {
        token.core?.setDemand(token.id, to: demand.map(AnyDemand.init))
    }

    /// Ends the subscription (``SignalToken/cancel()``).
    public func cancel() {
        token.cancel()
    }
}

/// An async-sequence subscription that carries a demand: a ``SignalSubscription`` whose demand
/// can be changed while it lasts.
public struct DemandSubscription<Value: Sendable, Demand: Sendable & Equatable>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = any Error

    /// The subscription itself: iterate, cancel or release it as any other.
    public let subscription: SignalSubscription<Value>

    @usableFromInline
    init(_ subscription: SignalSubscription<Value>) {
        self.subscription = subscription
    }

    /// Replaces the subscription's demand (see ``DemandToken/setDemand(_:)``).
    public func setDemand(_ demand: Demand?) {
        subscription.core.setDemand(subscription.buffer.id, to: demand.map(AnyDemand.init))
    }

    /// Ends the subscription; iteration then ends (``SignalSubscription/cancel()``).
    public func cancel() {
        subscription.cancel()
    }

    /// Values this subscriber lost because it was slower than the producer.
    public var droppedCount: Int { subscription.droppedCount }

    /// The same subscription, with each value's age when it was read.
    public var samples: SignalSubscription<Value>.Samples { subscription.samples }

    public func makeAsyncIterator() -> SignalSubscription<Value>.Iterator {
        subscription.makeAsyncIterator()
    }
}
