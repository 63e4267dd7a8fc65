extension DemandSignal {
    /// Observes the values the producer sends while it runs for others, without being one of
    /// its subscribers: an observation never starts the producer, never keeps it running, never
    /// delays its stop (or its linger), carries no demand and is not counted in
    /// ``subscriberCount``. It lasts until its token is cancelled or released, across stops and
    /// restarts of the producer.
    ///
    /// `onValue` is called, in the producer's context like a callback subscriber, with every
    /// value sent from now on; the latest value is not replayed (read ``latest`` for it), so an
    /// observer never sees a value twice because it observed again. A failure of the producer
    /// does not end an observation (the next run's values reach it too); the shutdown of the
    /// signal does, and `onCompletion` is then called once with ``SignalError/shutDown``
    /// (at once if the signal is shut down already).
    ///
    /// A derived signal (``map(configuration:_:)`` and the like) is observed through its base,
    /// with its transform: the observer sees the derived values whenever the base runs, whether
    /// or not the derived signal has subscribers of its own, and starts neither. It ends when
    /// either signal shuts down.
    public func observe(
        onValue: @escaping @Sendable (Value) -> Void,
        onCompletion: @escaping @Sendable (SignalCompletion) -> Void = { _ in }
    ) -> SignalToken {
        let id = core.makeID()
        guard let observeUpstream else {
            let delivery = delivery
            let end: SubscriberEnd = { completion in
                delivery.remove(id, timestamped: false)
                if let completion { onCompletion(completion) }
            }
            guard core.observe(id, end: end, register: { delivery.addObserver(id, call: onValue) }) else {
                onCompletion(.failure(SignalError.shutDown))
                return SignalToken()
            }
            return SignalToken(core: core, id: id, observes: true)
        }
        // The observation of the base is made after this one is registered here (so that this
        // signal's shutdown cannot miss it): the slot says whether it ended meanwhile.
        let upstream = Lock(UpstreamObservation.waiting)
        let end: SubscriberEnd = { completion in
            upstream.withLock { $0.end() }?.cancel()
            if let completion { onCompletion(completion) }
        }
        guard core.observe(id, end: end, register: {}) else {
            onCompletion(.failure(SignalError.shutDown))
            return SignalToken()
        }
        let core = core
        let token = observeUpstream(onValue) { [weak core] completion in
            core?.endObservation(id, with: completion)
        }
        if upstream.withLock({ $0.keep(token) }) { token.cancel() }
        return SignalToken(core: core, id: id, observes: true)
    }
}

/// A derived signal's observation of its base, as it is made and ended.
enum UpstreamObservation {
    case waiting
    case observing(SignalToken)
    case ended

    /// Ends it; returns the base's token to cancel (after unlocking), if there is one.
    mutating func end() -> SignalToken? {
        defer { self = .ended }
        if case let .observing(token) = self { return token }
        return nil
    }

    /// Keeps the base's token; returns true when the observation already ended, so the token
    /// must be cancelled instead.
    mutating func keep(_ token: SignalToken) -> Bool {
        guard case .waiting = self else { return true }
        self = .observing(token)
        return false
    }
}
