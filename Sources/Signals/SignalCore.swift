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

/// A ``SubscriberEnd`` as the core's dictionaries keep it. Wrapped in a struct, the closure is
/// stored as it is; a closure stored as a dictionary's value directly is re-wrapped in a thunk
/// on the way in and again on the way out, a heap allocation each (two of the ten a subscribe
/// and a cancel made).
struct StoredEnd: Sendable {
    let call: SubscriberEnd
}

/// The lifecycle half of a ``RefCountedSignal``: the state machine under a lock, the hooks,
/// the timer, the state observers and the subscribers' completions. It knows nothing of the
/// value type or the demand type (it holds demands as ``AnyDemand``), so none of it pays for
/// generic code that the client cannot specialise.
@usableFromInline
final class SignalCore: Sendable {
    typealias Machine = LifecycleMachine<AnyDemand>


    @usableFromInline let clock: SignalClock
    private let delivery: any DeliveryControl
    /// Runs the producer's start for a run (the epoch) with the aggregate demand; it is handed
    /// this core rather than holding it, so that the core does not keep itself alive.
    private let startHook: @Sendable (SignalCore, UInt64, AnyDemand?) async throws -> Void
    private let replanHook: @Sendable (AnyDemand?) async -> Void
    private let stopHook: @Sendable () async -> Void
    /// The lifecycle's state, under the signal's first lock.
    ///
    /// **Lock order** (written here once; every place where locks nest refers to it). A thread
    /// holding one of these locks takes only locks further down the list:
    /// 1. this lock (the lifecycle: the machine, the subscribers' ends, waiters, the timer);
    /// 2. the value side's lock, ``Delivery/state`` (the latest value and who values go to),
    ///    taken under this one to register a subscriber and to mirror a transition;
    /// 3. a subscriber's own lock (``CallbackSink/stash``, ``StreamBuffer/state``), taken under
    ///    the value side's lock to register or replay;
    /// 4. leaves that take no lock of ours: the clock's `now` (read under 1 and 2; a clock
    ///    must not call back into the signal), the state observers' lock (``StateObservers``)
    ///    and their `AsyncStream`s.
    ///
    /// No user code runs while any of them is held: subscribers' values and completions, the
    /// hooks, resumed continuations, state observers and errors' descriptions are all called
    /// after unlocking. The exceptions are pure functions, which must not call back into the
    /// signal: the clock's `now`, and a demand policy's `combine` and the demand type's `==`
    /// (the aggregate is computed under this lock, so that it is exact).
    private let locked: Lock<State>
    private let ids = Atomic<UInt64>(0)
    /// Tasks waiting for ``hasPendingTransition`` to clear; woken after every transition that
    /// did something.
    private let settledWaiters = ConditionWaiters()
    /// The continuations of ``stateChanges()``, told under ``locked`` (their own lock comes
    /// after it).
    private let stateObservers = StateObservers()

    init(
        configuration: SignalConfiguration,
        clock: SignalClock,
        delivery: any DeliveryControl,
        combine: (@Sendable (AnyDemand, AnyDemand) -> AnyDemand)?,
        start: @escaping @Sendable (SignalCore, UInt64, AnyDemand?) async throws -> Void,
        replan: @escaping @Sendable (AnyDemand?) async -> Void,
        stop: @escaping @Sendable () async -> Void
    ) {
        self.clock = clock
        self.delivery = delivery
        startHook = start
        replanHook = replan
        stopHook = stop
        locked = Lock(State(machine: Machine(configuration: configuration, combine: combine)))
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
        // Apart from the one with a demand: the count-only hot path passes none, not even nil.
        admit(id, end: end, register: register) { machine, now in machine.subscribe(id, now: now()) }
    }

    /// Counts `id` as a subscriber with `demand` (see ``subscribe(_:end:register:)``).
    @usableFromInline
    func subscribe(
        _ id: SubscriberID,
        demand: AnyDemand,
        end: @escaping SubscriberEnd,
        register: () -> Void
    ) -> Bool {
        admit(id, end: end, register: register) { machine, now in
            machine.subscribe(id, demand: demand, now: now())
        }
    }

    @inline(__always)
    private func admit(
        _ id: SubscriberID,
        end: @escaping SubscriberEnd,
        register: () -> Void,
        subscribe: (inout Machine, () -> Duration) -> Machine.Actions?
    ) -> Bool {
        let outcome = locked.withLock { state -> (steps: Steps, changed: Bool)? in
            guard let actions = subscribe(&state.machine, clock.now) else { return nil }
            state.ends[id] = StoredEnd(call: end)
            register()
            let changes = state.changes
            return (resolve(actions, in: &state), state.changes != changes)
        }
        guard let outcome else { return false }
        if outcome.changed { performThenWake(outcome.steps) }
        return true
    }

    /// Ends `id`'s subscription: it stops counting at once and its finisher is told.
    @usableFromInline
    func cancel(_ id: SubscriberID) {
        let (end, waiter, steps, changed) = locked.withLock { state in
            let actions = state.machine.cancel(id, now: clock.now())
            let end = state.ends.removeValue(forKey: id)?.call
            let waiter = state.runningWaiters.isEmpty ? nil : state.runningWaiters.removeValue(forKey: id)
            // A derived start that stops waiting changes what a driver sees as much as a transition.
            if waiter != nil { state.changes &+= 1 }
            let changes = state.changes
            let steps = resolve(actions, in: &state)
            return (end, waiter, steps, waiter != nil || state.changes != changes)
        }
        end?(nil)
        waiter?.resume(throwing: CancellationError())
        if changed { performThenWake(steps) }
    }

    /// Registers the observation `id`, which the lifecycle does not count; `register` runs
    /// under the lock once it is accepted, so that a shutdown can never miss it. Returns false
    /// (and registers nothing) once the signal shuts down.
    func observe(_ id: SubscriberID, end: @escaping SubscriberEnd, register: () -> Void) -> Bool {
        locked.withLock { state in
            guard !state.machine.shutdownRequested else { return false }
            state.observations[id] = StoredEnd(call: end)
            register()
            return true
        }
    }

    /// Ends the observation `id` (once): `completion` is `nil` after its own cancel.
    func endObservation(_ id: SubscriberID, with completion: SignalCompletion?) {
        let end = locked.withLock { $0.observations.removeValue(forKey: id)?.call }
        end?(completion)
    }

    /// Changes the demand of `id`'s subscription, if it is still live.
    @usableFromInline
    func setDemand(_ id: SubscriberID, to demand: AnyDemand?) {
        transition { machine, _ in machine.setDemand(id, to: demand) }
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
                state.changes &+= 1
                return nil
            }
            if let result {
                continuation.resume(with: result)
            } else {
                // A start that now waits for this signal: a driver waiting for it to settle looks again.
                settledWaiters.resumeAll()
            }
        }
    }

    // MARK: - Observing

    var state: SignalState {
        locked.withLock { $0.machine.state }
    }

    var subscriberCount: Int {
        locked.withLock { $0.machine.subscribers.count }
    }

    /// The aggregate demand of the live subscriptions.
    var demand: AnyDemand? {
        locked.withLock { $0.machine.aggregate }
    }

    var statistics: SignalStatistics {
        let now = clock.now()
        let (statistics, lastFailure) = locked.withLock { state in
            (SignalStatistics(
                starts: state.machine.starts,
                stops: state.machine.stops,
                failures: state.machine.failures,
                timeRunning: state.machine.timeRunning(now: now),
                timeActive: state.machine.timeActive(now: now),
                subscribers: state.machine.subscribers.count,
                replans: state.machine.replans,
                lastFailure: nil
            ), state.machine.lastFailure)
        }
        // Described after unlocking: describing an error runs the error's own code.
        var described = statistics
        described.lastFailure = lastFailure.map { String(describing: $0) }
        return described
    }

    func stateChanges() -> AsyncStream<SignalState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SignalState.self)
        let key = makeID()
        let accepted = locked.withLock { state -> Bool in
            continuation.yield(state.machine.state)
            guard state.machine.state != .shutDown else { return false }
            stateObservers.insert(continuation, for: key)
            return true
        }
        guard accepted else {
            continuation.finish()
            return stream
        }
        // Weakly, and not the core: a weak reference gives its object a side table, which
        // makes every later retain and release of it slower (the core's are on the hot path).
        continuation.onTermination = { [weak stateObservers] _ in
            stateObservers?.remove(key)
        }
        return stream
    }

    /// Whether a transition is still due: a hook is in progress, or an armed timer's deadline
    /// has passed but it has not acted yet. Tests wait for this to clear before checking.
    package var hasPendingTransition: Bool { progress.isPending }

    /// The signal's progress for a driver of a manual clock (see ``SignalProgress``).
    package var progress: SignalProgress {
        let now = clock.now()
        return locked.withLock { state in
            let pending = switch state.machine.state {
            case .starting, .stopping: true
            default:
                state.machine.replanning != nil
                    || state.machine.timerArmed && (state.timerDeadline ?? .zero) <= now
            }
            let timer = state.machine.timerArmed ? state.timerDeadline.map { max($0 - now, .zero) } : nil
            return SignalProgress(state: state.machine.state, isPending: pending,
                                  isReplanning: state.machine.replanning != nil,
                                  startsWaitingForRunning: state.runningWaiters.count, timeToTimer: timer,
                                  changes: state.changes)
        }
    }

    /// Suspends until ``progress``'s `changes` is no longer `changes`, or until the task is
    /// cancelled.
    package func waitForChange(after changes: UInt64) async {
        await settledWaiters.wait { self.locked.withLock { $0.changes } != changes }
    }

    /// Suspends until no transition is due (``hasPendingTransition`` is false), or until the
    /// task is cancelled.
    package func waitUntilSettled() async {
        while hasPendingTransition && !Task.isCancelled {
            await settledWaiters.wait { !self.hasPendingTransition }
        }
    }

    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = clock.now()
            let steps = locked.withLock { state -> Steps in
                state.shutdownWaiters.append(continuation)
                return resolve(state.machine.shutdown(now: now), in: &state)
            }
            performThenWake(steps)
        }
    }

    // MARK: - Transitions and their actions

    private struct State {
        var machine: Machine
        var ends: [SubscriberID: StoredEnd] = [:]
        /// The ends of the observations, which the machine does not count.
        var observations: [SubscriberID: StoredEnd] = [:]
        /// What the value side was last told (it mirrors the machine's accepting run and how
        /// often the latest value was cleared).
        var acceptingEpoch: UInt64?
        var latestClearings = 0
        var timer: (generation: UInt64, task: Task<Void, Never>)?
        var timerDeadline: Duration?
        var publishedState: SignalState = .idle
        var runningWaiters: [SubscriberID: CheckedContinuation<Void, any Error>] = [:]
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        /// Transitions resolved and derived starts that began or stopped waiting (``progress``).
        var changes: UInt64 = 0
    }

    /// A machine action made ready to perform after unlocking: it carries what it needs from
    /// the locked state (taken out of it, so no later transition can take the same again).
    private enum Step: Sendable {
        case fail(ends: [SubscriberEnd], waiters: [CheckedContinuation<Void, any Error>], error: any Error)
        case endObservations([SubscriberEnd])
        case resume([CheckedContinuation<Void, any Error>])
        case cancelTimer(Task<Void, Never>)
        case start(epoch: UInt64, demand: AnyDemand?)
        case replan(epoch: UInt64, demand: AnyDemand?)
        case stop(epoch: UInt64)
        case armTimer(generation: UInt64, deadline: Duration)
        case finishShutdown(waiters: [CheckedContinuation<Void, Never>],
                            observers: [AsyncStream<SignalState>.Continuation])
    }

    /// The steps of one transition, in order (empty, allocating nothing, for the common
    /// subscribe and cancel; see ``LifecycleMachine/Actions``).
    private typealias Steps = [Step]

    private func transition(_ event: (inout Machine, Duration) -> Machine.Actions) {
        let now = clock.now()
        let steps = locked.withLock { state in
            let replanning = state.machine.replanning
            let steps = resolve(event(&state.machine, now), in: &state)
            // A re-plan that ends with nothing more to do changes no state, but it is progress
            // (``SignalProgress/isReplanning``) a driver waits for.
            if state.machine.replanning != replanning && steps.isEmpty { state.changes &+= 1 }
            return steps
        }
        // Hooks and timers end here even when they change nothing visible (a stale timer, a
        // start nobody waits for): wake whoever waits for the signal to settle either way.
        performThenWake(steps)
    }

    private func performThenWake(_ steps: Steps) {
        perform(steps)
        settledWaiters.resumeAll()
    }

    /// Under the lock, after a transition: mirrors it onto the value side and the state
    /// observers, and turns the machine's actions into the steps to perform after unlocking, in
    /// the machine's order. (Yielding to a state observer's `AsyncStream` only enqueues; it
    /// never calls back. The value side's lock comes after this one: see ``locked``.)
    @inline(__always)
    private func resolve(_ actions: Machine.Actions, in state: inout State) -> Steps {
        // The common subscribe and cancel: nothing to do, nothing to tell.
        if actions.isEmpty && state.machine.state == state.publishedState { return [] }
        return resolveTransition(actions, in: &state)
    }

    private func resolveTransition(_ actions: Machine.Actions, in state: inout State) -> Steps {
        state.changes &+= 1
        var steps: Steps = []
        // The machine is read in place: a copy of it costs more than the rest of a subscribe.
        let newState = state.machine.state
        if state.machine.latestClearings != state.latestClearings {
            state.latestClearings = state.machine.latestClearings
            delivery.clearLatest()
        }
        let accepting = state.machine.acceptingEpoch
        if accepting != state.acceptingEpoch {
            state.acceptingEpoch = accepting
            delivery.setAcceptingEpoch(accepting)
        }
        if newState != state.publishedState {
            state.publishedState = newState
            stateObservers.yield(newState)
        }
        for action in actions {
            switch action {
            case let .fail(ids, error):
                var ends: [SubscriberEnd] = []
                var waiters: [CheckedContinuation<Void, any Error>] = []
                for id in ids {
                    if let end = state.ends.removeValue(forKey: id) { ends.append(end.call) }
                    if let waiter = state.runningWaiters.removeValue(forKey: id) { waiters.append(waiter) }
                }
                steps.append(.fail(ends: ends, waiters: waiters, error: error))
            case .endObservations:
                if !state.observations.isEmpty {
                    steps.append(.endObservations(state.observations.values.map(\.call)))
                    state.observations.removeAll()
                }
            case .resumeRunningWaiters:
                if !state.runningWaiters.isEmpty {
                    steps.append(.resume(Array(state.runningWaiters.values)))
                    state.runningWaiters.removeAll()
                }
            case .cancelTimer:
                if let task = takeStaleTimer(&state) { steps.append(.cancelTimer(task)) }
            case let .start(epoch, demand):
                steps.append(.start(epoch: epoch, demand: demand))
            case let .replan(epoch, demand):
                steps.append(.replan(epoch: epoch, demand: demand))
            case let .stop(epoch):
                steps.append(.stop(epoch: epoch))
            case let .armTimer(generation, deadline):
                if let task = takeStaleTimer(&state) { steps.append(.cancelTimer(task)) }
                state.timerDeadline = deadline
                steps.append(.armTimer(generation: generation, deadline: deadline))
            case .finishShutdown:
                steps.append(.finishShutdown(waiters: state.shutdownWaiters, observers: stateObservers.removeAll()))
                state.shutdownWaiters.removeAll()
            }
        }
        return steps
    }

    /// The timer task kept for a timer the machine no longer has armed, taken out to cancel.
    private func takeStaleTimer(_ state: inout State) -> Task<Void, Never>? {
        guard let current = state.timer,
              current.generation != state.machine.timerGeneration || !state.machine.timerArmed
        else { return nil }
        state.timer = nil
        return current.task
    }

    /// Performs the steps of one transition, in order, with no lock held.
    private func perform(_ steps: Steps) {
        for step in steps {
            switch step {
            case let .fail(ends, waiters, error):
                for end in ends { end(.failure(error)) }
                for waiter in waiters { waiter.resume(throwing: error) }
            case let .endObservations(ends):
                for end in ends { end(.failure(SignalError.shutDown)) }
            case let .resume(waiters):
                for waiter in waiters { waiter.resume() }
            case let .cancelTimer(task):
                task.cancel()
            case let .start(epoch, demand):
                runStart(epoch: epoch, demand: demand)
            case let .replan(epoch, demand):
                runReplan(epoch: epoch, demand: demand)
            case let .stop(epoch):
                runStop(epoch: epoch)
            case let .armTimer(generation, deadline):
                armTimer(generation: generation, deadline: deadline)
            case let .finishShutdown(waiters, observers):
                for observer in observers { observer.finish() }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    private func runStart(epoch: UInt64, demand: AnyDemand?) {
        Task { [self] in
            do {
                try await startHook(self, epoch, demand)
                transition { $0.startSucceeded(epoch: epoch, now: $1) }
            } catch {
                transition { $0.startFailed(epoch: epoch, error: error, now: $1) }
            }
        }
    }

    private func runReplan(epoch: UInt64, demand: AnyDemand?) {
        Task { [self] in
            await replanHook(demand)
            transition { machine, _ in machine.replanFinished(epoch: epoch) }
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

/// The continuations of a signal's ``SignalCore/stateChanges()``. Yielding to one never calls
/// back into the signal, so it is done under the core's lock, in transition order; but not under
/// this object's own lock (see ``yield(_:)``).
final class StateObservers: Sendable {
    private let continuations = Lock<[SubscriberID: AsyncStream<SignalState>.Continuation]>([:])

    func insert(_ continuation: AsyncStream<SignalState>.Continuation, for key: SubscriberID) {
        continuations.withLock { $0[key] = continuation }
    }

    func remove(_ key: SubscriberID) {
        // The removed continuation is released after the lock is dropped.
        let removed = continuations.withLock { $0.removeValue(forKey: key) }
        _ = removed
    }

    /// Yields `state` to each continuation, after letting go of the lock: a yield resumes the task
    /// awaiting the stream, which takes that task's status lock, and cancelling that task runs the
    /// stream's `onTermination` (``remove(_:)``, this lock) with the same status lock held. Yielding
    /// under this lock deadlocked the two (seen once in `gnss-hat watch`, 2026-12-05).
    func yield(_ state: SignalState) {
        let current = continuations.withLock { Array($0.values) }
        for continuation in current { continuation.yield(state) }
    }

    /// Takes every continuation out, to finish them after unlocking.
    func removeAll() -> [AsyncStream<SignalState>.Continuation] {
        continuations.withLock { continuations in
            defer { continuations.removeAll() }
            return Array(continuations.values)
        }
    }
}
