import Synchronization

/// What the lifecycle tells the value side of a signal, under the core's lock (never calls
/// user code).
@usableFromInline
protocol DeliveryControl: AnyObject, Sendable {
    /// Values of this run are accepted from now on (`nil`: none are).
    func setAcceptingEpoch(_ epoch: UInt64?)
    /// Forgets the latest value (the producer failed and replay says clear on failure).
    func clearLatest()
}

/// The end of one subscription, as the lifecycle sees it: called once when the subscription
/// ends — with `nil` after its own cancel, with a completion after a failure or a shutdown.
/// It is a closure made in the (inlinable, so specialised) subscribe call, so that ending a
/// subscription runs code specialised for the value type.
@usableFromInline
typealias SubscriberEnd = @Sendable (SignalCompletion?) -> Void

/// The lifecycle half of a ``RefCountedSignal``: the state machine under a lock, the hooks,
/// the timer, the state observers and the subscribers' completions. It knows nothing of the
/// value type, so none of it pays for generic code that the client cannot specialise.
@usableFromInline
final class SignalCore: Sendable {
    @usableFromInline let clock: SignalClock
    private let delivery: any DeliveryControl
    /// Runs the producer's start for a run (the epoch); it is handed this core rather than
    /// holding it, so that the core does not keep itself alive.
    private let startHook: @Sendable (SignalCore, UInt64) async throws -> Void
    private let stopHook: @Sendable () async -> Void
    private let locked: Lock<State>
    private let ids = Atomic<UInt64>(0)

    init(
        configuration: SignalConfiguration,
        clock: SignalClock,
        delivery: any DeliveryControl,
        start: @escaping @Sendable (SignalCore, UInt64) async throws -> Void,
        stop: @escaping @Sendable () async -> Void
    ) {
        self.clock = clock
        self.delivery = delivery
        startHook = start
        stopHook = stop
        locked = Lock(State(machine: LifecycleMachine(configuration: configuration)))
    }

    // MARK: - Subscribers

    @usableFromInline
    func makeID() -> SubscriberID {
        SubscriberID(raw: ids.add(1, ordering: .relaxed).newValue)
    }

    /// Counts `id` as a subscriber; `register` runs under the lock once it is accepted, so
    /// that a failure can never miss it. Returns false (and registers nothing) after shutdown.
    @usableFromInline
    func subscribe(_ id: SubscriberID, end: @escaping SubscriberEnd, register: () -> Void) -> Bool {
        let outcome = locked.withLock { state -> Work?? in
            guard let effects = state.machine.subscribe(id, now: clock.now()) else { return .none }
            state.ends[id] = end
            register()
            return .some(collect(&state, effects))
        }
        guard case let .some(work) = outcome else { return false }
        if let work { perform(work) }
        return true
    }

    /// Ends `id`'s subscription: it stops counting at once and its finisher is told.
    @usableFromInline
    func cancel(_ id: SubscriberID) {
        let (end, waiter, work) = locked.withLock { state in
            let effects = state.machine.cancel(id, now: clock.now())
            let end = state.ends.removeValue(forKey: id)
            let waiter = state.runningWaiters.isEmpty ? nil : state.runningWaiters.removeValue(forKey: id)
            return (end, waiter, collect(&state, effects))
        }
        end?(nil)
        waiter?.resume(throwing: CancellationError())
        if let work { perform(work) }
    }

    func producerFailed(epoch: UInt64, error: any Error) {
        transition { $0.producerFailed(epoch: epoch, error: error, now: $1) }
    }

    func isAccepting(epoch: UInt64) -> Bool {
        locked.withLock { $0.machine.acceptsValues(from: epoch) }
    }

    /// Suspends until the producer runs while `id` is subscribed; throws the failure that
    /// ended `id`'s subscription, or `CancellationError` if it was cancelled first.
    func waitUntilRunning(_ id: SubscriberID) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result = locked.withLock { state -> Result<Void, any Error>? in
                guard state.machine.subscribers.contains(id) else {
                    return .failure(state.machine.lastFailure ?? CancellationError())
                }
                if state.machine.isRunning { return .success(()) }
                state.runningWaiters[id] = continuation
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }

    // MARK: - Observing

    var state: SignalState {
        locked.withLock { $0.machine.state }
    }

    var subscriberCount: Int {
        locked.withLock { $0.machine.subscribers.count }
    }

    var statistics: SignalStatistics {
        let now = clock.now()
        return locked.withLock { state in
            let machine = state.machine
            return SignalStatistics(
                starts: machine.starts,
                stops: machine.stops,
                failures: machine.failures,
                timeRunning: machine.timeRunning(now: now),
                timeActive: machine.timeActive(now: now),
                subscribers: machine.subscribers.count,
                lastFailure: machine.lastFailure.map { String(describing: $0) }
            )
        }
    }

    func stateChanges() -> AsyncStream<SignalState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SignalState.self)
        let key = makeID()
        let accepted = locked.withLock { state -> Bool in
            continuation.yield(state.machine.state)
            guard state.machine.state != .shutDown else { return false }
            state.stateObservers[key] = continuation
            return true
        }
        guard accepted else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            // The removed continuation is released after the lock is dropped.
            let removed = self?.locked.withLock { $0.stateObservers.removeValue(forKey: key) }
            _ = removed
        }
        return stream
    }

    /// Whether a transition is still due: a hook is in progress, or an armed timer's deadline
    /// has passed but it has not acted yet. Tests wait for this to clear before checking.
    var hasPendingTransition: Bool {
        let now = clock.now()
        return locked.withLock { state in
            switch state.machine.state {
            case .starting, .stopping: return true
            default: return state.machine.timerArmed && (state.timerDeadline ?? .zero) <= now
            }
        }
    }

    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = clock.now()
            let work = locked.withLock { state -> Work? in
                state.shutdownWaiters.append(continuation)
                return collect(&state, state.machine.shutdown(now: now))
            }
            if let work { perform(work) }
        }
    }

    // MARK: - Transitions and their effects

    private struct State {
        var machine: LifecycleMachine
        var ends: [SubscriberID: SubscriberEnd] = [:]
        var acceptingEpoch: UInt64?
        var timer: (generation: UInt64, task: Task<Void, Never>)?
        var timerDeadline: Duration?
        var stateObservers: [SubscriberID: AsyncStream<SignalState>.Continuation] = [:]
        var publishedState: SignalState = .idle
        var runningWaiters: [SubscriberID: CheckedContinuation<Void, any Error>] = [:]
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// What to do after unlocking.
    private struct Work {
        var failure: (any Error)?
        var failed: [SubscriberEnd] = []
        var runningWaiters: [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] = []
        var start: UInt64?
        var stop: UInt64?
        var timer: (generation: UInt64, deadline: Duration)?
        var cancelledTimer: Task<Void, Never>?
        var finishedObservers: [AsyncStream<SignalState>.Continuation] = []
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private func transition(_ event: (inout LifecycleMachine, Duration) -> LifecycleMachine.Effects) {
        let now = clock.now()
        let work = locked.withLock { state in collect(&state, event(&state.machine, now)) }
        if let work { perform(work) }
    }

    /// Applies a transition's bookkeeping under the lock and returns what must be done after
    /// unlocking (`nil`: nothing). State observers are told here, in transition order
    /// (yielding to an `AsyncStream` only enqueues; it never calls back).
    private func collect(_ state: inout State, _ effects: LifecycleMachine.Effects) -> Work? {
        if effects.isEmpty && state.machine.state == state.publishedState { return nil }
        var work = Work()
        work.start = effects.start
        work.stop = effects.stop
        work.timer = effects.timer
        if let armed = effects.timer { state.timerDeadline = armed.deadline }
        if effects.clearLatest { delivery.clearLatest() }
        let accepting = state.machine.acceptingEpoch
        if accepting != state.acceptingEpoch {
            state.acceptingEpoch = accepting
            delivery.setAcceptingEpoch(accepting)
        }
        if let failure = effects.failure, !effects.failedSubscribers.isEmpty {
            work.failure = failure
            for id in effects.failedSubscribers {
                if let end = state.ends.removeValue(forKey: id) { work.failed.append(end) }
                if let waiter = state.runningWaiters.removeValue(forKey: id) {
                    work.runningWaiters.append((waiter, .failure(failure)))
                }
            }
        }
        if effects.becameRunning {
            for waiter in state.runningWaiters.values { work.runningWaiters.append((waiter, .success(()))) }
            state.runningWaiters.removeAll()
        }
        if let current = state.timer, effects.timerCancelled || effects.timer != nil,
           current.generation != state.machine.timerGeneration || !state.machine.timerArmed {
            work.cancelledTimer = current.task
            state.timer = nil
        }
        let newState = state.machine.state
        if newState != state.publishedState {
            state.publishedState = newState
            for observer in state.stateObservers.values { observer.yield(newState) }
        }
        if effects.shutdownFinished {
            work.shutdownWaiters = state.shutdownWaiters
            state.shutdownWaiters.removeAll()
            work.finishedObservers = Array(state.stateObservers.values)
            state.stateObservers.removeAll()
        }
        return work
    }

    private func perform(_ work: Work) {
        if let failure = work.failure {
            for end in work.failed { end(.failure(failure)) }
        }
        for (waiter, result) in work.runningWaiters { waiter.resume(with: result) }
        work.cancelledTimer?.cancel()
        if let epoch = work.start { runStart(epoch: epoch) }
        if let epoch = work.stop { runStop(epoch: epoch) }
        if let (generation, deadline) = work.timer { armTimer(generation: generation, deadline: deadline) }
        for observer in work.finishedObservers { observer.finish() }
        for waiter in work.shutdownWaiters { waiter.resume() }
    }

    private func runStart(epoch: UInt64) {
        Task { [self] in
            do {
                try await startHook(self, epoch)
                transition { $0.startSucceeded(epoch: epoch, now: $1) }
            } catch {
                transition { $0.startFailed(epoch: epoch, error: error, now: $1) }
            }
        }
    }

    private func runStop(epoch: UInt64) {
        Task { [self] in
            await stopHook()
            transition { $0.stopFinished(epoch: epoch, now: $1) }
        }
    }

    private func armTimer(generation: UInt64, deadline: Duration) {
        let task = Task { [self] in
            do {
                try await clock.sleepUntil(deadline)
            } catch {
                return  // cancelled: superseded by a newer timer or a transition
            }
            transition { $0.timerFired(generation: generation, now: $1) }
        }
        let keep = locked.withLock { state -> Bool in
            guard state.machine.timerArmed, state.machine.timerGeneration == generation else { return false }
            state.timer = (generation, task)
            return true
        }
        if !keep { task.cancel() }
    }
}
