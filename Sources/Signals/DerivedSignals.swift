extension RefCountedSignal {
    /// A signal of transformed values that is itself reference-counted: its first subscriber
    /// subscribes this signal (powering the producer on), its last one (after its own linger)
    /// releases it. It keeps its own latest value for replay. It starts when this signal
    /// runs, fails when this signal fails, and shares this signal's clock.
    public func map<T: Sendable>(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ transform: @escaping @Sendable (Value) -> T
    ) -> RefCountedSignal<T> {
        derived(configuration: configuration) { value, emitter in emitter.send(transform(value)) }
    }

    /// A derived signal of the non-`nil` transformed values (see ``map(configuration:_:)``).
    public func compactMap<T: Sendable>(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ transform: @escaping @Sendable (Value) -> T?
    ) -> RefCountedSignal<T> {
        derived(configuration: configuration) { value, emitter in
            if let mapped = transform(value) { emitter.send(mapped) }
        }
    }

    /// A derived signal of the values that pass `isIncluded` (see ``map(configuration:_:)``).
    public func filter(
        configuration: SignalConfiguration = SignalConfiguration(),
        _ isIncluded: @escaping @Sendable (Value) -> Bool
    ) -> RefCountedSignal<Value> {
        derived(configuration: configuration) { value, emitter in
            if isIncluded(value) { emitter.send(value) }
        }
    }

    private func derived<T: Sendable>(
        configuration: SignalConfiguration,
        forward: @escaping @Sendable (Value, SignalEmitter<T>) -> Void
    ) -> RefCountedSignal<T> {
        // One upstream subscription per run of the derived signal; start and stop never
        // overlap, so one slot suffices.
        let upstream = Lock<SignalToken?>(nil)
        return RefCountedSignal<T>(
            configuration: configuration,
            signalClock: core.clock,
            start: { [self] emitter in
                let (token, id) = subscribeCallback(
                    call: { value in forward(value, emitter) },
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
            stop: {
                let token = upstream.withLock { token -> SignalToken? in
                    defer { token = nil }
                    return token
                }
                token?.cancel()
            }
        )
    }
}
