extension DemandSignal {
    /// A signal of transformed values that is itself reference-counted: its first subscriber
    /// subscribes this signal (powering the producer on), its last one (after its own linger)
    /// releases it. It keeps its own latest value for replay. It starts when this signal
    /// runs, fails when this signal fails, and shares this signal's clock.
    ///
    /// It shares this signal's demand policy too: it subscribes this signal with its own
    /// aggregate demand, and changes that demand whenever its own aggregate changes, so a
    /// demand given to a derived signal reaches the producer.
    public func map<T: Sendable>(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ transform: @escaping @Sendable (Value) -> T
    ) -> DemandSignal<T, Demand> {
        derived(configuration: configuration) { transform($0) }
    }

    /// A derived signal of the non-`nil` transformed values (see ``map(configuration:_:)``).
    public func compactMap<T: Sendable>(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ transform: @escaping @Sendable (Value) -> T?
    ) -> DemandSignal<T, Demand> {
        derived(configuration: configuration, transform)
    }

    /// A derived signal of the values that pass `isIncluded` (see ``map(configuration:_:)``).
    public func filter(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ isIncluded: @escaping @Sendable (Value) -> Bool
    ) -> DemandSignal<Value, Demand> {
        derived(configuration: configuration) { isIncluded($0) ? $0 : nil }
    }

    /// A derived signal of the non-`nil` results of `transform`.
    private func derived<T: Sendable>(
        configuration: SignalConfiguration,
        _ transform: @escaping @Sendable (Value) -> T?
    ) -> DemandSignal<T, Demand> {
        // One upstream subscription per run of the derived signal; start, re-plan and stop
        // never overlap, so one slot suffices.
        let upstream = Lock<SignalToken?>(nil)
        return DemandSignal<T, Demand>(
            configuration: configuration,
            signalClock: core.clock,
            policy: policy,
            start: { [self] emitter, demand in
                let (token, id) = subscribeCallback(
                    demand: demand.map(AnyDemand.init),
                    call: { value in
                        if let transformed = transform(value) { emitter.send(transformed) }
                    },
                    callSample: nil,
                    onCompletion: { completion in
                        if case let .failure(error) = completion { emitter.fail(error) }
                    }
                )
                // Start and stop alternate, so the slot is empty; whatever it held is released
                // after unlocking all the same (a token's release cancels it).
                let previous = upstream.withLock { slot -> SignalToken? in
                    defer { slot = token }
                    return slot
                }
                previous?.cancel()
                try await core.waitUntilRunning(id)
            },
            replan: { [core] demand in
                // The derived signal's aggregate changed: so does its demand on this signal.
                guard let token = upstream.withLock({ $0 }) else { return }
                core.setDemand(token.id, to: demand.map(AnyDemand.init))
            },
            stop: {
                let token = upstream.withLock { token -> SignalToken? in
                    defer { token = nil }
                    return token
                }
                token?.cancel()
            },
            observeUpstream: { [self] onValue, onCompletion in
                observe(onValue: { value in
                    if let transformed = transform(value) { onValue(transformed) }
                }, onCompletion: onCompletion)
            }
        )
    }
}

extension DemandSignal {
    /// A count-only view of this signal whose every run subscribes this signal with one fixed
    /// `demand`: for subscribers that do not say their demand but imply one (a plain subscriber
    /// that needs every value, say), or a view made for one demand. Its subscribers are counted as
    /// in any ``RefCountedSignal``; while it has any, this signal counts it as one subscription
    /// carrying `demand`. Otherwise it is a derived signal as ``map(configuration:_:)`` describes:
    /// it starts when this signal runs, fails when this signal fails, keeps its own latest value.
    ///
    /// `transform` may keep state across values (it is called once per value, in the producer's
    /// context, never for an observer; a producer that sends from several threads calls it from
    /// them, so guard that state with a lock) and may throw: the view then fails with that error,
    /// its subscribers get it, and this signal is released; the next subscriber starts the view
    /// afresh. An observer of the view sees the values the view delivers while it runs.
    @inlinable
    public func withDemand<T: Sendable>(
        _ demand: Demand,
        configuration: SignalConfiguration = SignalConfiguration(),
        _ transform: @escaping @Sendable (Value) throws -> T?
    ) -> RefCountedSignal<T> {
        // The forwarding call is made here, inlined into the client: specialised for its types, a
        // value goes to the view's subscribers without a runtime lookup of generic metadata.
        demandView(demand, configuration: configuration, forward: { emitter in
            { value in
                do {
                    if let transformed = try transform(value) { emitter.send(transformed) }
                } catch {
                    emitter.fail(error)
                }
            }
        }, observeUpstream: nil)
    }

    /// This signal's values as a count-only view whose runs subscribe this signal with `demand`
    /// (see ``withDemand(_:configuration:_:)``). An observer of the view observes this signal: it
    /// sees every value, whoever keeps the producer running.
    @inlinable
    public func withDemand(
        _ demand: Demand, configuration: SignalConfiguration = SignalConfiguration()
    ) -> RefCountedSignal<Value> {
        demandView(demand, configuration: configuration, forward: { emitter in { emitter.send($0) } },
                   observeUpstream: { [self] onValue, onCompletion in
                       observe(onValue: onValue, onCompletion: onCompletion)
                   })
    }

    /// A view whose runs subscribe this signal with `demand`; `forward` makes, for each run, the
    /// call that hands it this signal's values.
    @usableFromInline
    func demandView<T: Sendable>(
        _ demand: Demand,
        configuration: SignalConfiguration,
        forward: @escaping @Sendable (SignalEmitter<T>) -> @Sendable (Value) -> Void,
        observeUpstream: (@Sendable (
            _ onValue: @escaping @Sendable (T) -> Void,
            _ onCompletion: @escaping @Sendable (SignalCompletion) -> Void
        ) -> SignalToken)?
    ) -> RefCountedSignal<T> {
        let upstream = Lock<SignalToken?>(nil)
        let fixed = AnyDemand(demand)
        return RefCountedSignal<T>(
            configuration: configuration,
            signalClock: core.clock,
            policy: nil,
            start: { [self] emitter, _ in
                let (token, id) = subscribeCallback(
                    demand: fixed,
                    call: forward(emitter),
                    callSample: nil,
                    onCompletion: { completion in
                        if case let .failure(error) = completion { emitter.fail(error) }
                    }
                )
                let previous = upstream.withLock { slot -> SignalToken? in
                    defer { slot = token }
                    return slot
                }
                previous?.cancel()
                try await core.waitUntilRunning(id)
            },
            replan: { _ in },
            stop: {
                let token = upstream.withLock { token -> SignalToken? in
                    defer { token = nil }
                    return token
                }
                token?.cancel()
            },
            observeUpstream: observeUpstream
        )
    }
}
