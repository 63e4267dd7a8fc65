/// When to (re)connect to the broker, as a plain value: events go in, the actions to perform come
/// out in order. It calls nothing and knows no clock; times are offsets from the owner's reference
/// instant. The client's network thread holds it under a lock, transitions, unlocks, then acts.
///
/// The back-off starts at ``Configuration/initialDelay`` and doubles with every failure in a row up
/// to ``Configuration/maximumDelay``; a connection that lasted ``Configuration/stableAfter`` resets it.
/// A refusal (wrong password, not authorised) backs off like any failure and is reported once per
/// attempt, so a misconfigured client writes one line a minute at most, never a tight loop.
public struct ReconnectPolicy: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var initialDelay: Duration
        public var maximumDelay: Duration
        /// A connection that lasted this long counts as good: the next failure starts the back-off over.
        public var stableAfter: Duration

        public init(
            initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(60),
            stableAfter: Duration = .seconds(60)
        ) {
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.stableAfter = stableAfter
        }

        /// The wait after `failures` failures in a row (1 or more): initial × 2^(failures-1), capped.
        public func delay(afterFailures failures: Int) -> Duration {
            var delay = initialDelay
            for _ in 1..<max(failures, 1) {
                delay = delay * 2
                if delay >= maximumDelay { return maximumDelay }
            }
            return min(delay, maximumDelay)
        }
    }

    public enum Phase: Equatable, Sendable {
        case idle
        /// Attempt `attempt` runs: the TCP (and TLS) connect, then the wait for the CONNACK.
        case connecting(attempt: Int)
        case connected(since: Duration)
        /// The retry timer is armed; attempt `attempt` follows it.
        case waiting(attempt: Int)
        case stopped
    }

    /// What the owner does, in the order given.
    public enum Action: Equatable, Sendable {
        /// Make attempt `attempt` now (`mosquitto_connect`).
        case connect(attempt: Int)
        /// Call ``timerFired(generation:now:)`` with `generation` at `deadline`.
        case armTimer(generation: UInt64, deadline: Duration)
        /// The timer armed before is no longer wanted.
        case cancelTimer
        /// Tell the user (one line each).
        case report(Report)
        /// Close the connection cleanly (`mosquitto_disconnect`: no last will).
        case disconnect
    }

    /// What happened, for the log.
    public enum Report: Equatable, Sendable {
        case connected(attempt: Int)
        /// The attempt did not reach the broker (no route, refused TCP, TLS, DNS).
        case attemptFailed(attempt: Int, error: MQTTError, retryIn: Duration)
        /// The broker answered and refused (CONNACK: bad user name or password, not authorised, ...).
        case refused(attempt: Int, error: MQTTError, retryIn: Duration)
        /// A connection that was up went down after `after`.
        case connectionLost(error: MQTTError?, after: Duration, retryIn: Duration)
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .idle
    /// Failures since the last connection that lasted.
    public private(set) var failuresInARow = 0
    /// Attempts since the last connection that lasted (the number the reports give).
    private var attempts = 0
    private(set) var timerGeneration: UInt64 = 0
    private var timerArmed = false

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    // MARK: - Events

    /// Begin: the first attempt runs at once.
    public mutating func start(now: Duration) -> [Action] {
        guard phase == .idle else { return [] }
        return beginAttempt()
    }

    /// The attempt's call failed before any CONNACK (`mosquitto_connect` returned an error, or the
    /// socket closed during the handshake).
    public mutating func attemptFailed(_ error: MQTTError, now: Duration) -> [Action] {
        guard case let .connecting(attempt) = phase else { return [] }
        let delay = fail()
        return [.report(.attemptFailed(attempt: attempt, error: error, retryIn: delay))] + wait(delay, now: now)
    }

    /// The broker accepted the connection (CONNACK success).
    public mutating func connected(now: Duration) -> [Action] {
        guard case let .connecting(attempt) = phase else { return [] }
        phase = .connected(since: now)
        return [.report(.connected(attempt: attempt))]
    }

    /// The broker refused the connection (CONNACK with a failure code).
    public mutating func refused(_ error: MQTTError, now: Duration) -> [Action] {
        guard case let .connecting(attempt) = phase else { return [] }
        let delay = fail()
        return [.report(.refused(attempt: attempt, error: error, retryIn: delay))] + wait(delay, now: now)
    }

    /// The connection closed without our asking. While an attempt runs this is its failure; while
    /// waiting (the close that follows a refusal) it is nothing new.
    public mutating func connectionLost(_ error: MQTTError?, now: Duration) -> [Action] {
        switch phase {
        case .connecting:
            return attemptFailed(
                error ?? MQTTError(call: "mosquitto_loop", code: .library(.connectionLost), reason: "connection lost"),
                now: now)
        case let .connected(since):
            let lasted = now - since
            if lasted >= configuration.stableAfter {
                failuresInARow = 0
                attempts = 0
            }
            let delay = fail()
            return [.report(.connectionLost(error: error, after: lasted, retryIn: delay))] + wait(delay, now: now)
        case .idle, .waiting, .stopped:
            return []
        }
    }

    /// The timer armed with `generation` fired.
    public mutating func timerFired(generation: UInt64, now: Duration) -> [Action] {
        guard timerArmed, generation == timerGeneration, case .waiting = phase else { return [] }
        timerArmed = false
        return beginAttempt()
    }

    /// Stop for good: no more attempts; a live connection is closed cleanly.
    public mutating func stop() -> [Action] {
        var actions: [Action] = []
        if timerArmed {
            timerArmed = false
            timerGeneration += 1
            actions.append(.cancelTimer)
        }
        switch phase {
        case .connected, .connecting: actions.append(.disconnect)
        case .idle, .waiting, .stopped: break
        }
        phase = .stopped
        return actions
    }

    // MARK: - Transitions

    private mutating func beginAttempt() -> [Action] {
        attempts += 1
        phase = .connecting(attempt: attempts)
        return [.connect(attempt: attempts)]
    }

    /// Counts a failure and returns the wait before the next attempt.
    private mutating func fail() -> Duration {
        failuresInARow += 1
        return configuration.delay(afterFailures: failuresInARow)
    }

    private mutating func wait(_ delay: Duration, now: Duration) -> [Action] {
        phase = .waiting(attempt: attempts + 1)
        timerGeneration += 1
        timerArmed = true
        return [.armTimer(generation: timerGeneration, deadline: now + delay)]
    }
}
