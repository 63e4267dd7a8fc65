/// How a ``RefCountedSignal`` starts, stops, replays and recovers.
public struct SignalConfiguration: Sendable {
    /// How long the producer keeps running after the last subscriber leaves; a subscriber that
    /// arrives inside this window cancels the stop. Zero stops at once.
    public var linger: Duration

    /// The shortest time the producer stays off between a stop and the next start, so that a
    /// client reconnecting in a loop cannot flap the power. Zero allows an immediate restart.
    public var minimumOffTime: Duration

    /// Whether and for how long the latest value is handed to new subscribers.
    public var replay: ReplayPolicy

    /// What happens after the start hook throws.
    public var restart: RestartPolicy

    public init(
        linger: Duration = .zero,
        minimumOffTime: Duration = .zero,
        replay: ReplayPolicy = .latest(),
        restart: RestartPolicy = .onNextSubscriber
    ) {
        self.linger = linger
        self.minimumOffTime = minimumOffTime
        self.replay = replay
        self.restart = restart
    }
}

/// Replay of the latest value to subscribers that arrive later.
public struct ReplayPolicy: Sendable, Equatable {
    /// Whether the latest value is kept and replayed at all.
    public var isEnabled: Bool
    /// A value older than this is not replayed (`nil`: any age).
    public var maxAge: Duration?
    /// Forget the latest value when the producer fails, so nobody is handed a value from
    /// before the failure.
    public var clearOnFailure: Bool

    /// Keep the latest value, across restarts too, and hand it to every new subscriber at once.
    public static func latest(maxAge: Duration? = nil, clearOnFailure: Bool = false) -> ReplayPolicy {
        ReplayPolicy(isEnabled: true, maxAge: maxAge, clearOnFailure: clearOnFailure)
    }

    /// Keep nothing: a new subscriber waits for the next value.
    public static let none = ReplayPolicy(isEnabled: false, maxAge: nil, clearOnFailure: false)
}

/// What a signal does after its start hook throws.
public enum RestartPolicy: Sendable, Equatable {
    /// Every waiting subscriber gets the error at once; the next subscriber starts afresh.
    case onNextSubscriber
    /// Subscribers keep waiting while the start is retried after a back-off
    /// (`initialDelay`, multiplied by `multiplier` after each failure, at most `maxDelay`);
    /// after `maxAttempts` failed starts in a row every waiting subscriber gets the last error.
    /// If every subscriber leaves during a back-off, the retry is cancelled.
    case retry(maxAttempts: Int, initialDelay: Duration, multiplier: Double = 2, maxDelay: Duration = .seconds(60))

    /// The back-off before retrying after `failures` failed starts in a row, or `nil` when the
    /// subscribers must get the error instead.
    func backoff(afterFailures failures: Int) -> Duration? {
        guard case let .retry(maxAttempts, initialDelay, multiplier, maxDelay) = self, failures < maxAttempts else {
            return nil
        }
        var delay = initialDelay
        for _ in 1..<max(failures, 1) {
            delay = delay * multiplier
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }
}

/// Per-subscriber buffering for the async subscription. The producer never waits for a
/// subscriber: a slow subscriber loses values, never slows anyone else.
public enum SubscriptionBuffering: Sendable, Equatable {
    /// Keep only the newest undelivered value (the default): a slow subscriber sees the latest.
    case latest
    /// Keep up to this many undelivered values; when full, the oldest is dropped and counted.
    case bounded(Int)

    @inlinable
    var capacity: Int {
        switch self {
        case .latest: 1
        case let .bounded(count): max(count, 1)
        }
    }
}

/// The lifecycle of a signal's producer, as observers see it.
public enum SignalState: Sendable, Equatable, CustomStringConvertible {
    /// Nothing runs and nobody subscribes.
    case idle
    /// Subscribers wait for the minimum off time since the last stop to pass.
    case waitingToStart
    /// The start hook runs.
    case starting
    /// The producer runs and at least one subscriber (or hold) is present.
    case running
    /// The last subscriber left; the stop follows after the linger unless someone subscribes.
    case lingering
    /// The stop hook runs.
    case stopping
    /// The last start or run failed (see ``SignalStatistics/lastFailure``). With
    /// ``RestartPolicy/retry(maxAttempts:initialDelay:multiplier:maxDelay:)`` a retry may be
    /// pending; otherwise the next subscriber starts afresh.
    case failed
    /// ``RefCountedSignal/shutdown()`` finished; every later subscriber gets
    /// ``SignalError/shutDown``.
    case shutDown

    public var description: String {
        switch self {
        case .idle: "idle"
        case .waitingToStart: "waiting to start"
        case .starting: "starting"
        case .running: "running"
        case .lingering: "lingering"
        case .stopping: "stopping"
        case .failed: "failed"
        case .shutDown: "shut down"
        }
    }
}

/// Counters a signal keeps for observers.
public struct SignalStatistics: Sendable {
    /// Start hook invocations.
    public var starts: Int
    /// Stop hook invocations (including the clean-up stop after a failed start).
    public var stops: Int
    /// Failed starts plus failures reported by the producer while running.
    public var failures: Int
    /// Total time between a successful start and the beginning of the following stop.
    public var timeRunning: Duration
    /// Total time from the beginning of each start to the end of its stop: how long the
    /// side effect (the powered receiver) may have been on.
    public var timeActive: Duration
    /// Current subscriptions and holds.
    public var subscribers: Int
    /// Re-plan hook invocations: how often the producer was told that the aggregate demand
    /// changed while it ran (always zero for a signal without a demand policy).
    public var replans: Int
    /// A description of the most recent failure, if any.
    public var lastFailure: String?
}

/// A value with its age, as delivered to subscribers that ask for ages.
public struct Sample<Value: Sendable>: Sendable {
    public var value: Value
    /// How old the value was when it was handed over: zero for a live callback delivery, the
    /// time since it was sent for a replayed or buffered one. `nil` when the signal was not
    /// timing values when it was sent: reading the clock for every value costs as much as
    /// delivering it, so a signal times values only while a replay `maxAge` is set or an async
    /// or sample subscriber is present.
    public var age: Duration?

    public init(value: Value, age: Duration?) {
        self.value = value
        self.age = age
    }
}

/// Errors the signal itself raises (the producer's own errors reach subscribers unchanged).
public enum SignalError: Error, Equatable, CustomStringConvertible {
    /// The signal was shut down; it takes no more subscribers.
    case shutDown

    public var description: String {
        switch self {
        case .shutDown: "the signal has been shut down"
        }
    }
}

/// How a subscription ended, when it did not end by its own cancel.
public enum SignalCompletion: Sendable {
    /// The producer failed (start or run); the error is the producer's own, or
    /// ``SignalError/shutDown``.
    case failure(any Error)
}
