/// Everyone a value goes to, as a snapshot: sending a value copies one reference under the lock and
/// calls the targets outside it. Subscribing or cancelling changes the snapshot in place when no send
/// holds it (the lock's holder then has the only reference), and otherwise changes a copy, so that a
/// send in progress keeps the targets it started with.
@usableFromInline
final class Targets<Value: Sendable>: @unchecked Sendable {
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

    // Changed only by the holder of the delivery's lock, and only while nobody else holds a
    // reference (see `Delivery.State.changeTargets`): that is why the class may be Sendable.
    /// Live callback subscribers, called in order.
    @usableFromInline var calls: ContiguousArray<Entry>
    /// Callback subscribers still being handed the replayed value; they stash live values.
    @usableFromInline var replaying: ContiguousArray<CallbackSink<Value>>
    @usableFromInline var streams: ContiguousArray<StreamBuffer<Value>>
    /// How many subscribers want values timestamped (async and sample subscribers).
    @usableFromInline var timestamped: Int

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

    /// A copy to change while a send still holds this one.
    @inlinable
    func copy() -> Targets {
        Targets(calls: calls, replaying: replaying, streams: streams, timestamped: timestamped)
    }

    @inlinable
    func add(live sink: CallbackSink<Value>) {
        calls.append(Entry(id: sink.id, call: sink.call))
        if sink.timestamped { timestamped += 1 }
    }

    /// An observer: a live call like a callback subscriber's, never replayed to, never timed.
    @inlinable
    func add(observer id: SubscriberID, call: @escaping @Sendable (Value) -> Void) {
        calls.append(Entry(id: id, call: call))
    }

    @inlinable
    func add(replaying sink: CallbackSink<Value>) {
        replaying.append(sink)
        if sink.timestamped { timestamped += 1 }
    }

    @inlinable
    func add(stream buffer: StreamBuffer<Value>) {
        streams.append(buffer)
        timestamped += 1
    }

    /// Whether `sink` is in the replaying list (then ``promote(_:)`` moves it).
    @inlinable
    func isReplaying(_ sink: CallbackSink<Value>) -> Bool {
        replaying.contains { $0 === sink }
    }

    /// The sink moves from the replaying list to the live calls.
    @inlinable
    func promote(_ sink: CallbackSink<Value>) {
        guard let index = replaying.firstIndex(where: { $0 === sink }) else { return }
        replaying.remove(at: index)
        calls.append(Entry(id: sink.id, call: sink.call))
    }

    /// Whether a subscriber with `id` is among the targets (then ``remove(_:timestamped:)`` removes it).
    @inlinable
    func contains(_ id: SubscriberID) -> Bool {
        calls.contains { $0.id == id } || replaying.contains { $0.id == id } || streams.contains { $0.id == id }
    }

    @inlinable
    func remove(_ id: SubscriberID, timestamped wasTimestamped: Bool) {
        if let index = calls.firstIndex(where: { $0.id == id }) {
            calls.remove(at: index)
        } else if let index = replaying.firstIndex(where: { $0.id == id }) {
            replaying.remove(at: index)
        } else if let index = streams.firstIndex(where: { $0.id == id }) {
            streams.remove(at: index)
        } else {
            return
        }
        if wasTimestamped { timestamped -= 1 }
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
        @usableFromInline var targets = Targets<Value>()

        @inlinable
        init() {}

        /// Changes the targets in place, or a copy of them while a send holds them (it took its
        /// reference under the lock, so under the lock a unique reference means no send holds it).
        @inlinable
        mutating func changeTargets(_ change: (Targets<Value>) -> Void) {
            if !isKnownUniquelyReferenced(&targets) { targets = targets.copy() }
            change(targets)
        }
    }

    @usableFromInline let state = Lock(State())
    @usableFromInline let clock: SignalClock
    @usableFromInline let replay: ReplayPolicy

    @inlinable
    init(clock: SignalClock, replay: ReplayPolicy) {
        self.clock = clock
        self.replay = replay
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
                state.changeTargets { $0.add(live: sink) }
                return nil
            }
            state.changeTargets { $0.add(replaying: sink) }
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
            state.changeTargets { $0.add(stream: buffer) }
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
                if live, state.targets.isReplaying(sink) { state.changeTargets { $0.promote(sink) } }
                return pending
            }
            if pending.isEmpty { return }
            for value in pending { sink.call(value) }
        }
    }

    /// Registers an observer: it gets the values sent from now on, none replayed.
    func addObserver(_ id: SubscriberID, call: @escaping @Sendable (Value) -> Void) {
        // Called under the core's lock (lock order: see SignalCore.locked).
        state.withLock { $0.changeTargets { $0.add(observer: id, call: call) } }
    }

    @inlinable
    func remove(_ id: SubscriberID, timestamped: Bool) {
        state.withLock { state in
            // Nothing to copy when the subscriber is already gone (a second end, a failed start).
            guard state.targets.contains(id) else { return }
            state.changeTargets { $0.remove(id, timestamped: timestamped) }
        }
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
