/// Everyone a value goes to, as an immutable snapshot: sending a value copies one reference
/// under the lock; subscribing or cancelling builds a new snapshot (rare next to sending).
@usableFromInline
final class Targets<Value: Sendable>: Sendable {
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let id: SubscriberID
        @usableFromInline let call: @Sendable (Value) -> Void

        @inlinable
        init(id: SubscriberID, call: @escaping @Sendable (Value) -> Void) {
            self.id = id
            self.call = call
        }
    }

    /// Live callback subscribers, called in order.
    @usableFromInline let calls: ContiguousArray<Entry>
    /// Callback subscribers still being handed the replayed value; they stash live values.
    @usableFromInline let replaying: ContiguousArray<CallbackSink<Value>>
    @usableFromInline let streams: ContiguousArray<StreamBuffer<Value>>
    /// How many subscribers want values timestamped (async and sample subscribers).
    @usableFromInline let timestamped: Int

    @inlinable
    init(
        calls: ContiguousArray<Entry> = [],
        replaying: ContiguousArray<CallbackSink<Value>> = [],
        streams: ContiguousArray<StreamBuffer<Value>> = [],
        timestamped: Int = 0
    ) {
        self.calls = calls
        self.replaying = replaying
        self.streams = streams
        self.timestamped = timestamped
    }

    @inlinable
    func adding(live sink: CallbackSink<Value>) -> Targets {
        var calls = calls
        calls.append(Entry(id: sink.id, call: sink.call))
        return Targets(calls: calls, replaying: replaying, streams: streams,
                       timestamped: timestamped + (sink.timestamped ? 1 : 0))
    }

    /// An observer: a live call like a callback subscriber's, never replayed to, never timed.
    @inlinable
    func adding(observer id: SubscriberID, call: @escaping @Sendable (Value) -> Void) -> Targets {
        var calls = calls
        calls.append(Entry(id: id, call: call))
        return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
    }

    @inlinable
    func adding(replaying sink: CallbackSink<Value>) -> Targets {
        var replaying = replaying
        replaying.append(sink)
        return Targets(calls: calls, replaying: replaying, streams: streams,
                       timestamped: timestamped + (sink.timestamped ? 1 : 0))
    }

    @inlinable
    func adding(stream buffer: StreamBuffer<Value>) -> Targets {
        var streams = streams
        streams.append(buffer)
        return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped + 1)
    }

    /// The sink moves from the replaying list to the live calls.
    @inlinable
    func promoting(_ sink: CallbackSink<Value>) -> Targets {
        guard let index = replaying.firstIndex(where: { $0 === sink }) else { return self }
        var replaying = replaying
        replaying.remove(at: index)
        var calls = calls
        calls.append(Entry(id: sink.id, call: sink.call))
        return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
    }

    /// This snapshot without `id`; `empty` when nobody is left (the last subscriber leaving, a
    /// client's usual disconnect, then allocates nothing).
    @inlinable
    func removing(_ id: SubscriberID, timestamped wasTimestamped: Bool, empty: Targets) -> Targets {
        if calls.count + replaying.count + streams.count == 1,
           (calls.first?.id ?? replaying.first?.id ?? streams.first?.id) == id {
            return empty
        }
        let timestamped = timestamped - (wasTimestamped ? 1 : 0)
        if let index = calls.firstIndex(where: { $0.id == id }) {
            var calls = calls
            calls.remove(at: index)
            return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
        }
        if let index = replaying.firstIndex(where: { $0.id == id }) {
            var replaying = replaying
            replaying.remove(at: index)
            return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
        }
        if let index = streams.firstIndex(where: { $0.id == id }) {
            var streams = streams
            streams.remove(at: index)
            return Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
        }
        return self
    }
}

/// The value half of a ``RefCountedSignal``: the latest value and the subscribers' delivery
/// ends. Its hot paths are inlinable so that they are specialised for the client's value type.
@usableFromInline
final class Delivery<Value: Sendable>: DeliveryControl {
    @usableFromInline
    struct State {
        /// The run whose values are accepted (set by the lifecycle).
        @usableFromInline var acceptingEpoch: UInt64?
        @usableFromInline var latest: Value?
        /// When the latest value was sent, when the signal was timing values then.
        @usableFromInline var latestAt: Duration?
        @usableFromInline var targets: Targets<Value>

        @inlinable
        init(targets: Targets<Value>) {
            self.targets = targets
        }
    }

    @usableFromInline let state: Lock<State>
    @usableFromInline let clock: SignalClock
    @usableFromInline let replay: ReplayPolicy
    /// The snapshot of nobody, made once: the state goes back to it when the last target leaves.
    @usableFromInline let noTargets = Targets<Value>()

    @inlinable
    init(clock: SignalClock, replay: ReplayPolicy) {
        self.clock = clock
        self.replay = replay
        state = Lock(State(targets: noTargets))
    }

    /// Sends a value of run `epoch` to every subscriber (nothing if that run is over).
    @inlinable
    func emit(_ value: Value, epoch: UInt64) {
        let keepLatest = replay.isEnabled
        let timeLatest = replay.maxAge != nil
        let sent = state.withLock { state -> (Targets<Value>, Duration?)? in
            // Lock order (see SignalCore.locked): the clock is read under this lock.
            guard state.acceptingEpoch == epoch else { return nil }
            // Reading the clock costs as much as the rest of a delivery: only when needed.
            let at: Duration? = timeLatest || state.targets.timestamped > 0 ? clock.now() : nil
            if keepLatest {
                state.latest = value
                state.latestAt = at
            }
            return (state.targets, at)
        }
        guard let (targets, at) = sent else { return }
        for entry in targets.calls { entry.call(value) }
        if !targets.replaying.isEmpty {
            for sink in targets.replaying { sink.deliverDuringReplay(value) }
        }
        if !targets.streams.isEmpty {
            for buffer in targets.streams { buffer.push(value, at: at) }
        }
    }

    /// Registers a callback subscriber and returns the value to replay to it, if any. With a
    /// replay, the sink stashes live values until ``completeReplay(_:replay:)`` has run.
    @inlinable
    func add(_ sink: CallbackSink<Value>) -> Sample<Value>? {
        // Called under the core's lock; takes the sink's (lock order: see SignalCore.locked).
        state.withLock { state in
            guard let replayed = replayable(state) else {
                sink.goLive()
                state.targets = state.targets.adding(live: sink)
                return nil
            }
            state.targets = state.targets.adding(replaying: sink)
            return replayed
        }
    }

    /// Registers an async subscriber, with the value to replay already in its buffer.
    @inlinable
    func add(_ buffer: StreamBuffer<Value>) {
        // Called under the core's lock; takes the buffer's (lock order: see SignalCore.locked).
        // The buffer is new, so nobody waits on it yet and the push resumes nothing.
        state.withLock { state in
            if let replayed = replayable(state) {
                buffer.push(replayed.value, at: state.latestAt)
            }
            state.targets = state.targets.adding(stream: buffer)
        }
    }

    /// Hands the replayed value to a new callback subscriber, then whatever arrived meanwhile,
    /// then makes it a live target — in that order, so it never sees an older value last.
    @inlinable
    func completeReplay(_ sink: CallbackSink<Value>, replay: Sample<Value>) {
        sink.deliverReplay(replay)
        while true {
            let pending = state.withLock { state -> [Value] in
                // Takes the sink's lock under this one (lock order: see SignalCore.locked).
                let (pending, live) = sink.takeStashOrGoLive()
                if live { state.targets = state.targets.promoting(sink) }
                return pending
            }
            if pending.isEmpty { return }
            for value in pending { sink.call(value) }
        }
    }

    /// Registers an observer: it gets the values sent from now on, none replayed.
    func addObserver(_ id: SubscriberID, call: @escaping @Sendable (Value) -> Void) {
        // Called under the core's lock (lock order: see SignalCore.locked).
        state.withLock { $0.targets = $0.targets.adding(observer: id, call: call) }
    }

    @inlinable
    func remove(_ id: SubscriberID, timestamped: Bool) {
        state.withLock { $0.targets = $0.targets.removing(id, timestamped: timestamped, empty: noTargets) }
    }

    @inlinable
    func latestSample() -> Sample<Value>? {
        state.withLock { replayable($0) }
    }

    /// The latest value with its age, if replay hands it out now. The clock is read only when
    /// the value was timed.
    @inlinable
    func replayable(_ state: State) -> Sample<Value>? {
        guard replay.isEnabled, let latest = state.latest else { return nil }
        let age = state.latestAt.map { clock.now() - $0 }
        if let maxAge = replay.maxAge, let age, age > maxAge { return nil }
        return Sample(value: latest, age: age)
    }

    @usableFromInline
    func setAcceptingEpoch(_ epoch: UInt64?) {
        state.withLock { $0.acceptingEpoch = epoch }
    }

    @usableFromInline
    func clearLatest() {
        state.withLock { state in
            state.latest = nil
            state.latestAt = nil
        }
    }
}
