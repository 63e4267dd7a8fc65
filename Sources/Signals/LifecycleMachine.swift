/// One subscription or hold of a signal. Counting is by token, so a cancel that lands at any
/// moment (even before the start finished) removes exactly its own subscription.
@usableFromInline
struct SubscriberID: Hashable, Sendable, Comparable {
    @usableFromInline var raw: UInt64

    @inlinable
    init(raw: UInt64) {
        self.raw = raw
    }

    @inlinable
    static func < (lhs: SubscriberID, rhs: SubscriberID) -> Bool { lhs.raw < rhs.raw }
}

/// The lifecycle of a ``RefCountedSignal`` as a plain value: events go in, the actions to
/// perform come out, in the order they must be performed in. It calls nothing and knows no
/// clock; times are passed in as offsets from the signal's reference instant. The signal holds
/// it under a lock, transitions, unlocks, and then performs the actions in order (the
/// swift-async-algorithms pattern).
///
/// Demand: a subscription may carry a `Demand`; the machine keeps the aggregate of the live
/// subscriptions' demands (combined by the signal's policy) and tells the producer when it
/// changes, through a re-plan. Start, re-plan and stop run one at a time: a demand change
/// during a start or a re-plan is served by one more re-plan afterwards, with the aggregate of
/// that moment (changes in between coalesce); a stop decided during a re-plan begins (the state
/// is stopping) but its hook waits for the re-plan to return; nothing is re-planned once the
/// stop began. The linger keeps the last plan: the producer is not re-planned when the last
/// subscriber leaves, and a subscriber that comes back inside the linger re-plans only if the
/// aggregate then differs from the plan. A signal without a demand policy has no demands and
/// never re-plans.
struct LifecycleMachine<Demand: Sendable & Equatable>: Sendable {
    enum Phase: Equatable, Sendable {
        case idle
        /// Subscribers wait for the minimum off time; a timer is armed.
        case waitingToStart
        case starting(epoch: UInt64)
        case running(epoch: UInt64)
        /// No subscribers; the linger timer is armed.
        case lingering(epoch: UInt64)
        case stopping(epoch: UInt64, reason: StopReason)
        /// The last start or run failed. `retryArmed`: a back-off timer will start it again.
        case failed(retryArmed: Bool)
        case shutDown
    }

    enum StopReason: Equatable, Sendable {
        /// The last subscriber left (after the linger).
        case unsubscribed
        /// The start hook threw; this stop cleans up whatever it did.
        case startFailed
        /// The producer reported a failure while running.
        case producerFailed
        /// ``RefCountedSignal/shutdown()``.
        case shutdown
    }

    /// One thing the caller must do after a transition. An event returns its actions in the
    /// order they must be performed in; the caller performs them in that order, after releasing
    /// the lock it holds the machine under.
    enum Action: Sendable {
        /// End these subscriptions with `error`: each is told, and each waiting for the
        /// producer to run gets the error. (The machine has already stopped counting them.)
        case fail([SubscriberID], error: any Error)
        /// End every observation (the signal shuts down); observers are no subscribers, so the
        /// machine does not know them.
        case endObservations
        /// Let the subscribers waiting for the producer to run proceed: it runs now.
        case resumeRunningWaiters
        /// The timer armed before is no longer wanted.
        case cancelTimer
        /// Run the start hook for run `epoch`; `demand` is the aggregate at this moment.
        case start(epoch: UInt64, demand: Demand?)
        /// Run the re-plan hook of run `epoch`: the aggregate demand is now `demand`.
        case replan(epoch: UInt64, demand: Demand?)
        /// Run the stop hook of run `epoch`.
        case stop(epoch: UInt64)
        /// Arm the single timer: call `timerFired(generation:now:)` at `deadline`.
        case armTimer(generation: UInt64, deadline: Duration)
        /// The shutdown has completed; resume whoever waits for it.
        case finishShutdown
    }

    /// An event's actions, in order. The common subscribe and cancel of a running signal ask
    /// for nothing, and an empty array allocates nothing; an event that asks for something (a
    /// hook, a timer) is rare next to them and starts a task besides. (An inline list of four
    /// optional actions was tried: initialising, moving and destroying it on every subscribe
    /// and cancel cost more than this array does.)
    typealias Actions = [Action]

    let linger: Duration
    let minimumOffTime: Duration
    let restart: RestartPolicy
    let clearLatestOnFailure: Bool
    /// How two demands combine (associative and commutative); `nil`: the signal has no demand
    /// policy, and no subscription carries a demand.
    let combine: (@Sendable (Demand, Demand) -> Demand)?

    private(set) var phase: Phase = .idle
    private(set) var subscribers: Set<SubscriberID> = []
    /// Incremented by every start; hooks and emitters carry it so that stale ones do nothing.
    private(set) var epoch: UInt64 = 0
    /// Incremented whenever the timer is armed or disarmed; a stale timer does nothing.
    private(set) var timerGeneration: UInt64 = 0
    private(set) var timerArmed = false
    private(set) var shutdownRequested = false
    /// Failed starts in a row (reset by a successful start or when the waiting subscribers
    /// are given up).
    private(set) var failedStartsInARow = 0
    /// A failure the producer reported while its start was still running.
    private var failureDuringStart: (any Error)?
    /// Where the machine rests with nobody subscribed: `.idle`, or `.failed` after a failure.
    private var restingPhase: Phase = .idle

    /// Counts the failures after which the latest value must be forgotten (replay says clear on
    /// failure). It is state, not an action: the signal mirrors it onto the latest value before
    /// unlocking, so that no subscriber arriving after the failure is handed the old value.
    private(set) var latestClearings = 0

    /// The demands of the live subscriptions that carry one.
    private(set) var demands: [SubscriberID: Demand] = [:]
    /// The combination of `demands`; `nil` when no live subscription carries a demand.
    private(set) var aggregate: Demand?
    /// What the producer of the current run was last told: the aggregate its start or its last
    /// re-plan was given.
    private(set) var plannedDemand: Demand?
    /// The run whose re-plan hook is in progress, if one is.
    private(set) var replanning: UInt64?
    /// A stop began during a re-plan: its hook runs when the re-plan returns.
    private var stopAwaitsReplan = false
    private(set) var replans = 0

    private(set) var lastStopEnd: Duration?
    private(set) var lastFailure: (any Error)?
    private(set) var starts = 0
    private(set) var stops = 0
    private(set) var failures = 0
    private var runningSince: Duration?
    private var activeSince: Duration?
    private var timeRunningTotal: Duration = .zero
    private var timeActiveTotal: Duration = .zero

    init(configuration: SignalConfiguration, combine: (@Sendable (Demand, Demand) -> Demand)? = nil) {
        linger = configuration.linger
        minimumOffTime = configuration.minimumOffTime
        restart = configuration.restart
        clearLatestOnFailure = configuration.replay.clearOnFailure
        self.combine = combine
    }

    // MARK: - Queries

    var state: SignalState {
        switch phase {
        case .idle: .idle
        case .waitingToStart: .waitingToStart
        case .starting: .starting
        case .running: .running
        case .lingering: .lingering
        case .stopping: .stopping
        case .failed: .failed
        case .shutDown: .shutDown
        }
    }

    /// Whether values from the producer of `epoch` are accepted now.
    func acceptsValues(from epoch: UInt64) -> Bool {
        acceptingEpoch == epoch
    }

    /// The run whose values are accepted now: the one starting, running or lingering.
    var acceptingEpoch: UInt64? {
        switch phase {
        case let .starting(current), let .running(current), let .lingering(current): current
        default: nil
        }
    }

    /// Whether the producer has finished starting and runs now.
    var isRunning: Bool {
        switch phase {
        case .running, .lingering: true
        default: false
        }
    }

    func timeRunning(now: Duration) -> Duration {
        timeRunningTotal + (runningSince.map { now - $0 } ?? .zero)
    }

    func timeActive(now: Duration) -> Duration {
        timeActiveTotal + (activeSince.map { now - $0 } ?? .zero)
    }

    // MARK: - Events

    /// A subscription or hold arrives, with its demand if it has one. Returns `nil` when the
    /// signal is shut down. (`now` is read only when this subscriber starts the producer:
    /// reading a clock is not free.)
    @inline(__always)
    mutating func subscribe(
        _ id: SubscriberID,
        demand: Demand? = nil,
        now: @autoclosure () -> Duration
    ) -> Actions? {
        guard !shutdownRequested else { return nil }
        subscribers.insert(id)
        if let demand {
            demands[id] = demand
            aggregate = aggregate.map { combined($0, demand) } ?? demand
        }
        var actions = Actions()
        switch phase {
        case .idle, .failed(retryArmed: false):
            beginStartIfAllowed(now: now(), into: &actions)
        case let .lingering(epoch):
            phase = .running(epoch: epoch)
            disarmTimer(into: &actions)
            replanIfNeeded(into: &actions)
        case .running:
            if demand != nil { replanIfNeeded(into: &actions) }
        case .failed(retryArmed: true), .waitingToStart, .starting, .stopping, .shutDown:
            // A pending timer, start or stop already leads to a start; the newcomer waits.
            break
        }
        return actions
    }

    /// A subscription or hold is cancelled. A second cancel of the same token does nothing.
    /// (`now` is read only when the last subscriber leaves.)
    @inline(__always)
    mutating func cancel(_ id: SubscriberID, now: @autoclosure () -> Duration) -> Actions {
        guard subscribers.remove(id) != nil else { return Actions() }
        // The common cancel, inlined where it is called: others still subscribe, and nobody
        // carries a demand that could change the aggregate.
        if demands.isEmpty && !subscribers.isEmpty { return Actions() }
        return cancelled(id, now: now())
    }

    /// The rest of ``cancel(_:now:)``: `id` has just been removed.
    private mutating func cancelled(_ id: SubscriberID, now: @autoclosure () -> Duration) -> Actions {
        let demandLeft = !demands.isEmpty && demands.removeValue(forKey: id) != nil
        if demandLeft { recomputeAggregate() }
        var actions = Actions()
        guard subscribers.isEmpty else {
            if demandLeft { replanIfNeeded(into: &actions) }
            return actions
        }
        switch phase {
        case let .running(epoch):
            lastSubscriberLeft(epoch: epoch, now: now(), into: &actions)
        case .waitingToStart:
            phase = restingPhase
            disarmTimer(into: &actions)
        case .failed(retryArmed: true):
            phase = .failed(retryArmed: false)
            failedStartsInARow = 0
            disarmTimer(into: &actions)
        case .idle, .failed(retryArmed: false), .starting, .lingering, .stopping, .shutDown:
            // Starting: the stop follows when the start finishes. Stopping: nothing to undo.
            break
        }
        return actions
    }

    /// A live subscription's demand changes (`nil`: it no longer has one). A change for a
    /// subscription that has ended does nothing, so a change that races a cancel lands in order.
    mutating func setDemand(_ id: SubscriberID, to demand: Demand?) -> Actions {
        guard subscribers.contains(id), demands[id] != demand else { return Actions() }
        demands[id] = demand
        recomputeAggregate()
        var actions = Actions()
        replanIfNeeded(into: &actions)
        return actions
    }

    /// The re-plan hook of `epoch` returned: one more re-plan follows if the aggregate changed
    /// meanwhile, or the stop that waited for it begins.
    mutating func replanFinished(epoch: UInt64) -> Actions {
        guard replanning == epoch else { return Actions() }
        replanning = nil
        var actions = Actions()
        switch phase {
        case .running(epoch):
            replanIfNeeded(into: &actions)
        case .stopping(epoch, _) where stopAwaitsReplan:
            stopAwaitsReplan = false
            actions.append(.stop(epoch: epoch))
        default:
            break  // lingering: the linger keeps the plan
        }
        return actions
    }

    /// The start hook of `epoch` returned.
    mutating func startSucceeded(epoch: UInt64, now: Duration) -> Actions {
        guard case .starting(epoch) = phase else { return Actions() }
        failedStartsInARow = 0
        runningSince = now
        phase = .running(epoch: epoch)
        var actions = Actions()
        if let failure = failureDuringStart {
            failureDuringStart = nil
            producerFailed(epoch: epoch, error: failure, now: now, into: &actions)
        } else if shutdownRequested {
            beginStop(epoch: epoch, reason: .shutdown, now: now, into: &actions)
        } else if subscribers.isEmpty {
            lastSubscriberLeft(epoch: epoch, now: now, into: &actions)
        } else {
            actions.append(.resumeRunningWaiters)
            // The demand changed while the start ran: the producer hears of it now.
            replanIfNeeded(into: &actions)
        }
        return actions
    }

    /// The start hook of `epoch` threw. The stop hook runs to clean up a partial start; the
    /// subscribers get the error now unless the restart policy retries for them.
    mutating func startFailed(epoch: UInt64, error: any Error, now: Duration) -> Actions {
        guard case .starting(epoch) = phase else { return Actions() }
        failureDuringStart = nil
        failures += 1
        failedStartsInARow += 1
        lastFailure = error
        var actions = Actions()
        if shutdownRequested || restart.backoff(afterFailures: failedStartsInARow) == nil {
            failAllSubscribers(with: error, into: &actions)
            failedStartsInARow = 0
        }
        if clearLatestOnFailure { latestClearings += 1 }
        beginStop(epoch: epoch, reason: .startFailed, now: now, into: &actions)
        return actions
    }

    /// The producer of `epoch` reported a failure: every subscriber gets it and the stop runs.
    mutating func producerFailed(epoch: UInt64, error: any Error, now: Duration) -> Actions {
        var actions = Actions()
        switch phase {
        case .starting(epoch):
            // Handled when the start hook returns, so the stop never overlaps the start.
            if failureDuringStart == nil { failureDuringStart = error }
        case .running(epoch), .lingering(epoch):
            producerFailed(epoch: epoch, error: error, now: now, into: &actions)
        default:
            break
        }
        return actions
    }

    /// The stop hook of `epoch` returned.
    mutating func stopFinished(epoch: UInt64, now: Duration) -> Actions {
        guard case .stopping(epoch, let reason) = phase else { return Actions() }
        lastStopEnd = now
        if let since = activeSince {
            timeActiveTotal += now - since
            activeSince = nil
        }
        var actions = Actions()
        if shutdownRequested {
            phase = .shutDown
            actions.append(.finishShutdown)
            return actions
        }
        switch reason {
        case .startFailed where !subscribers.isEmpty && failedStartsInARow > 0:
            // The policy keeps these subscribers waiting: retry after the back-off.
            let delay = restart.backoff(afterFailures: failedStartsInARow) ?? .zero
            restingPhase = .failed(retryArmed: false)
            phase = .failed(retryArmed: true)
            armTimer(deadline: now + max(delay, minimumOffTime), into: &actions)
        case .startFailed, .producerFailed:
            failedStartsInARow = 0
            restingPhase = .failed(retryArmed: false)
            phase = restingPhase
            // Subscribers that arrived during the stop are the "next subscribers".
            if !subscribers.isEmpty { beginStartIfAllowed(now: now, into: &actions) }
        case .unsubscribed, .shutdown:
            restingPhase = .idle
            phase = restingPhase
            if !subscribers.isEmpty { beginStartIfAllowed(now: now, into: &actions) }
        }
        return actions
    }

    /// The timer armed with `generation` fired.
    mutating func timerFired(generation: UInt64, now: Duration) -> Actions {
        guard timerArmed, generation == timerGeneration else { return Actions() }
        timerArmed = false
        var actions = Actions()
        switch phase {
        case let .lingering(epoch):
            beginStop(epoch: epoch, reason: .unsubscribed, now: now, into: &actions)
        case .waitingToStart, .failed(retryArmed: true):
            if subscribers.isEmpty {
                phase = restingPhase
            } else {
                beginStart(now: now, into: &actions)
            }
        default:
            break
        }
        return actions
    }

    /// Shut down: every subscriber gets ``SignalError/shutDown``, the producer stops (at once,
    /// without linger) once any start in progress has finished.
    mutating func shutdown(now: Duration) -> Actions {
        var actions = Actions()
        guard !shutdownRequested else {
            if phase == .shutDown { actions.append(.finishShutdown) }
            return actions
        }
        shutdownRequested = true
        failAllSubscribers(with: SignalError.shutDown, into: &actions)
        actions.append(.endObservations)
        if timerArmed { disarmTimer(into: &actions) }
        switch phase {
        case .idle, .failed, .waitingToStart:
            phase = .shutDown
            actions.append(.finishShutdown)
        case let .running(epoch), let .lingering(epoch):
            beginStop(epoch: epoch, reason: .shutdown, now: now, into: &actions)
        case .starting, .stopping:
            break  // the hook in progress finishes first
        case .shutDown:
            actions.append(.finishShutdown)
        }
        return actions
    }

    // MARK: - Transitions

    private mutating func beginStartIfAllowed(now: Duration, into actions: inout Actions) {
        if let end = lastStopEnd, minimumOffTime > .zero, now < end + minimumOffTime {
            phase = .waitingToStart
            armTimer(deadline: end + minimumOffTime, into: &actions)
        } else {
            beginStart(now: now, into: &actions)
        }
    }

    private mutating func beginStart(now: Duration, into actions: inout Actions) {
        epoch += 1
        starts += 1
        activeSince = now
        phase = .starting(epoch: epoch)
        plannedDemand = aggregate
        actions.append(.start(epoch: epoch, demand: aggregate))
    }

    private mutating func lastSubscriberLeft(epoch: UInt64, now: Duration, into actions: inout Actions) {
        if linger > .zero {
            phase = .lingering(epoch: epoch)
            armTimer(deadline: now + linger, into: &actions)
        } else {
            beginStop(epoch: epoch, reason: .unsubscribed, now: now, into: &actions)
        }
    }

    private mutating func beginStop(epoch: UInt64, reason: StopReason, now: Duration, into actions: inout Actions) {
        if timerArmed { disarmTimer(into: &actions) }
        if let since = runningSince {
            timeRunningTotal += now - since
            runningSince = nil
        }
        stops += 1
        phase = .stopping(epoch: epoch, reason: reason)
        if replanning == epoch {
            stopAwaitsReplan = true  // the stop hook never overlaps the re-plan hook
        } else {
            actions.append(.stop(epoch: epoch))
        }
    }

    private mutating func producerFailed(epoch: UInt64, error: any Error, now: Duration, into actions: inout Actions) {
        failures += 1
        lastFailure = error
        failAllSubscribers(with: error, into: &actions)
        if clearLatestOnFailure { latestClearings += 1 }
        beginStop(epoch: epoch, reason: .producerFailed, now: now, into: &actions)
    }

    private mutating func failAllSubscribers(with error: any Error, into actions: inout Actions) {
        if !subscribers.isEmpty { actions.append(.fail(subscribers.sorted(), error: error)) }
        subscribers.removeAll()
        demands.removeAll()
        aggregate = nil
    }

    /// Tells the producer the aggregate if it differs from what it was last told, unless a
    /// re-plan runs already (it is followed by one more when it returns).
    private mutating func replanIfNeeded(into actions: inout Actions) {
        guard case let .running(epoch) = phase, replanning == nil, aggregate != plannedDemand else { return }
        replanning = epoch
        replans += 1
        plannedDemand = aggregate
        actions.append(.replan(epoch: epoch, demand: aggregate))
    }

    private mutating func recomputeAggregate() {
        // Any order gives the same result: the policy's combination is associative and commutative.
        var combination: Demand?
        for demand in demands.values {
            combination = combination.map { combined($0, demand) } ?? demand
        }
        aggregate = combination
    }

    private func combined(_ lhs: Demand, _ rhs: Demand) -> Demand {
        guard let combine else { preconditionFailure("a demand reached a signal without a demand policy") }
        return combine(lhs, rhs)
    }

    private mutating func armTimer(deadline: Duration, into actions: inout Actions) {
        timerGeneration += 1
        timerArmed = true
        actions.append(.armTimer(generation: timerGeneration, deadline: deadline))
    }

    private mutating func disarmTimer(into actions: inout Actions) {
        timerGeneration += 1
        timerArmed = false
        actions.append(.cancelTimer)
    }
}
