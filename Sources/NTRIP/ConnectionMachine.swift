// The connection to a caster as a plain value, shaped like Signals' LifecycleMachine: events go in
// (started, connected, the answer, frames, a failure, a timer), the actions to perform come out in
// order (connect, send a GGA, close, arm or cancel a timer, report). It calls nothing and knows no
// clock: times are offsets on the client's clock, given with the events. Link and timer generations
// make a stale link's event or a stale timer harmless.

/// What an attempt is for.
enum AttemptPurpose: Sendable, Hashable {
    /// `GET /`: the sourcetable, to choose the nearest mountpoint.
    case sourcetable
    /// `GET /MOUNTPOINT`: the corrections.
    case stream(mountpoint: String)
}

/// One connection the driver opens: `link` names it in the events it causes.
struct LinkAttempt: Sendable, Hashable {
    var number: Int
    var link: UInt64
    var purpose: AttemptPurpose
}

/// What a caster answered, as the link makes it out.
enum CasterAnswer: Sendable {
    /// 200 and no sourcetable: RTCM follows. `statusLine` for the log.
    case stream(statusLine: String)
    /// A sourcetable (whole); `position` is the client's position when it came (to choose from it).
    case sourcetable(Sourcetable, position: NTRIPPosition?)
    /// A refusal or a broken answer.
    case refused(NTRIPError)
}

/// The client's timers: one of each at most.
enum ConnectionTimer: Sendable, Hashable, CaseIterable {
    /// No RTCM for the data time-out: the link is dead.
    case silence
    /// Time for the next GGA.
    case gga
    /// The back-off is over: the next attempt.
    case retry
}

struct ConnectionMachine: Sendable {
    enum Phase: Sendable, Equatable {
        case idle
        /// Started; connecting waits for the first position.
        case waitingForPosition
        /// The link connects (TCP, TLS) and sends the request.
        case connecting(LinkAttempt)
        /// The request is sent; the answer has not been parsed yet.
        case requestSent(LinkAttempt)
        /// 200: RTCM flows since `since`.
        case streaming(LinkAttempt, since: Duration)
        /// Attempt `attempt` failed (or the start came too soon after the last); the retry timer
        /// starts attempt `next` at `until`.
        case backingOff(next: Int, until: Duration)
    }

    enum Action: Sendable {
        /// Open this link: connect, TLS, send the request, read the answer.
        case connect(LinkAttempt)
        /// Write a GGA of the latest position on `link`.
        case sendGGA(link: UInt64)
        /// Close `link` (the caster sees the end of the stream); a link already gone is no matter.
        case close(link: UInt64)
        /// Call ``timerFired(_:generation:now:)`` with `generation` at `deadline`.
        case arm(ConnectionTimer, generation: UInt64, deadline: Duration)
        /// The timer armed before is no longer wanted.
        case cancel(ConnectionTimer)
        /// Tell the user (one log line).
        case report(NTRIPReport)
    }

    struct Settings: Sendable {
        /// For log lines (never a password).
        var caster: CasterURL
        var backoff: NTRIPBackoff
        var dataTimeout: Duration
        var ggaInterval: Duration?
        var needsPosition: Bool

        init(_ configuration: NTRIPConfiguration) {
            caster = configuration.caster
            backoff = configuration.backoff
            dataTimeout = configuration.dataTimeout
            ggaInterval = configuration.ggaInterval
            needsPosition = configuration.needsPosition
        }
    }

    let settings: Settings
    private(set) var phase = Phase.idle
    /// Failures since the last good stream (the back-off's exponent).
    private(set) var failuresInARow = 0
    /// Attempts since the last good stream (the number log lines give).
    private(set) var attempts = 0
    /// The mountpoint of this run: the configured one, or the one chosen from the sourcetable.
    private(set) var mountpoint: String?
    private(set) var chosen: ChosenMountpoint?
    /// The last link opened.
    private(set) var link: UInt64 = 0
    /// When the last RTCM frame came (or the attempt or stream began).
    private(set) var lastData: Duration = .zero
    /// No attempt starts before this (the back-off, and the spacing between attempts across runs).
    private(set) var notBefore: Duration?
    private(set) var hasPosition = false
    private(set) var lastError: NTRIPError?
    private var generations: [ConnectionTimer: UInt64] = [:]
    private var armed: Set<ConnectionTimer> = []

    init(settings: Settings) {
        self.settings = settings
        mountpoint = settings.caster.mountpoint
    }

    /// The caster as log lines name it: `ntrip://user@host:port/MOUNT`.
    var casterName: String { settings.caster.with(mountpoint: mountpoint).description }

    // MARK: - Events

    /// The first subscriber: connect (at once, or after the first position, or once the last
    /// attempt is far enough behind).
    mutating func start(hasPosition: Bool, now: Duration) -> [Action] {
        guard phase == .idle else { return [] }
        self.hasPosition = self.hasPosition || hasPosition
        mountpoint = settings.caster.mountpoint
        chosen = nil
        var actions: [Action] = []
        if settings.needsPosition && !self.hasPosition {
            phase = .waitingForPosition
            actions.append(.report(.waitingForPosition(caster: casterName)))
        } else {
            beginAttemptWhenAllowed(now: now, into: &actions)
        }
        return actions
    }

    /// The position feed has a position (the first one matters).
    mutating func positionArrived(now: Duration) -> [Action] {
        hasPosition = true
        guard phase == .waitingForPosition else { return [] }
        var actions: [Action] = []
        beginAttemptWhenAllowed(now: now, into: &actions)
        return actions
    }

    /// `link` connected and sent its request.
    mutating func requestSent(link: UInt64, now: Duration) -> [Action] {
        guard case let .connecting(attempt) = phase, attempt.link == link else { return [] }
        phase = .requestSent(attempt)
        return []
    }

    /// The caster's answer on `link` was parsed.
    mutating func answered(link: UInt64, _ answer: CasterAnswer, now: Duration) -> [Action] {
        guard let attempt = pendingAttempt, attempt.link == link else { return [] }
        var actions: [Action] = []
        switch (answer, attempt.purpose) {
        case (.stream(let statusLine), .stream):
            phase = .streaming(attempt, since: now)
            lastData = now
            actions.append(.report(.streaming(caster: casterName, attempt: attempt.number, statusLine: statusLine)))
            if let interval = settings.ggaInterval {
                actions.append(.sendGGA(link: link))
                arm(.gga, deadline: now + interval, into: &actions)
            }
        case (.stream(let statusLine), .sourcetable):
            fail(.refused("\(statusLine) instead of the sourcetable"), now: now, into: &actions)
        case (.sourcetable(let table, _), .stream(let wanted)):
            fail(.unknownMountpoint(wanted, available: table.mountpoints), now: now, into: &actions)
        case (.sourcetable(let table, let position), .sourcetable):
            chooseMountpoint(from: table, position: position, link: link, now: now, into: &actions)
        case (.refused(let error), _):
            fail(error, now: now, into: &actions)
        }
        return actions
    }

    /// RTCM frames came on `link`.
    mutating func framesReceived(link: UInt64, now: Duration) -> [Action] {
        if case let .streaming(attempt, _) = phase, attempt.link == link { lastData = now }
        return []
    }

    /// `link` failed or ended (connect, TLS, I/O, the caster closed, a broken answer).
    mutating func linkFailed(link: UInt64, _ error: NTRIPError, now: Duration) -> [Action] {
        guard let attempt = activeAttempt, attempt.link == link else { return [] }
        var actions: [Action] = []
        fail(error, now: now, into: &actions)
        return actions
    }

    /// The timer armed with `generation` fired.
    mutating func timerFired(_ timer: ConnectionTimer, generation: UInt64, now: Duration) -> [Action] {
        guard armed.contains(timer), generations[timer] == generation else { return [] }
        armed.remove(timer)
        var actions: [Action] = []
        switch timer {
        case .silence:
            guard activeAttempt != nil else { break }
            if now - lastData >= settings.dataTimeout {
                fail(.silent(settings.dataTimeout), now: now, into: &actions)
            } else {
                arm(.silence, deadline: lastData + settings.dataTimeout, into: &actions)
            }
        case .gga:
            guard case let .streaming(attempt, _) = phase, let interval = settings.ggaInterval else { break }
            actions.append(.sendGGA(link: attempt.link))
            arm(.gga, deadline: now + interval, into: &actions)
        case .retry:
            guard case .backingOff = phase else { break }
            beginAttempt(now: now, into: &actions)
        }
        return actions
    }

    /// The last subscriber left: close, cancel every timer. The back-off state stays: the next
    /// start honours it.
    mutating func stop(now: Duration) -> [Action] {
        var actions: [Action] = []
        if let attempt = activeAttempt {
            actions.append(.close(link: attempt.link))
        }
        let wasActive = phase != .idle
        for timer in ConnectionTimer.allCases where armed.contains(timer) { disarm(timer, into: &actions) }
        phase = .idle
        if wasActive { actions.append(.report(.disconnected(caster: casterName))) }
        return actions
    }

    // MARK: - Queries

    /// The attempt whose link is open (connecting, waiting for the answer, or streaming).
    var activeAttempt: LinkAttempt? {
        switch phase {
        case .connecting(let attempt), .requestSent(let attempt), .streaming(let attempt, _): attempt
        default: nil
        }
    }

    /// The attempt whose answer is awaited.
    private var pendingAttempt: LinkAttempt? {
        switch phase {
        case .connecting(let attempt), .requestSent(let attempt): attempt
        default: nil
        }
    }

    // MARK: - Transitions

    private mutating func beginAttemptWhenAllowed(now: Duration, into actions: inout [Action]) {
        if let notBefore, now < notBefore {
            phase = .backingOff(next: attempts + 1, until: notBefore)
            arm(.retry, deadline: notBefore, into: &actions)
            actions.append(.report(.waitingBeforeConnecting(caster: casterName, delay: notBefore - now)))
        } else {
            beginAttempt(now: now, into: &actions)
        }
    }

    /// Opens the next link. `counting`: a new attempt (false: the stream request that follows the
    /// sourcetable, part of the same attempt).
    private mutating func beginAttempt(now: Duration, counting: Bool = true, into actions: inout [Action]) {
        if counting { attempts += 1 }
        link += 1
        let purpose: AttemptPurpose = mountpoint.map { .stream(mountpoint: $0) } ?? .sourcetable
        let attempt = LinkAttempt(number: attempts, link: link, purpose: purpose)
        phase = .connecting(attempt)
        lastData = now
        // Attempts start at least the initial delay apart, across runs too.
        notBefore = now + settings.backoff.initialDelay
        arm(.silence, deadline: now + settings.dataTimeout, into: &actions)
        actions.append(.connect(attempt))
    }

    private mutating func chooseMountpoint(
        from table: Sourcetable, position: NTRIPPosition?, link: UInt64, now: Duration, into actions: inout [Action]
    ) {
        guard let position, let nearest = table.nearest(to: position.latitude, position.longitude) else {
            fail(.noStreamToChoose(available: table.mountpoints), now: now, into: &actions)
            return
        }
        let choice = ChosenMountpoint(
            mountpoint: nearest.stream.mountpoint, identifier: nearest.stream.identifier, distance: nearest.distance)
        chosen = choice
        mountpoint = choice.mountpoint
        actions.append(.close(link: link))
        actions.append(.report(.chose(choice)))
        disarm(.silence, into: &actions)
        beginAttempt(now: now, counting: false, into: &actions)
    }

    /// The attempt (or the stream) failed: close, count, back off.
    private mutating func fail(_ error: NTRIPError, now: Duration, into actions: inout [Action]) {
        let number = activeAttempt?.number ?? attempts
        if case let .streaming(_, since) = phase, lastData - since >= settings.backoff.stableAfter {
            // A good stream: the back-off starts over, and so does the count of attempts.
            failuresInARow = 0
            attempts = 0
        }
        if let attempt = activeAttempt { actions.append(.close(link: attempt.link)) }
        for timer in [ConnectionTimer.silence, .gga] where armed.contains(timer) { disarm(timer, into: &actions) }
        failuresInARow += 1
        lastError = error
        let delay = settings.backoff.delay(afterFailures: failuresInARow)
        let until = now + delay
        notBefore = until
        phase = .backingOff(next: attempts + 1, until: until)
        arm(.retry, deadline: until, into: &actions)
        actions.append(.report(.attemptFailed(caster: casterName, attempt: number, error: error, retryIn: delay)))
    }

    private mutating func arm(_ timer: ConnectionTimer, deadline: Duration, into actions: inout [Action]) {
        let generation = (generations[timer] ?? 0) + 1
        generations[timer] = generation
        armed.insert(timer)
        actions.append(.arm(timer, generation: generation, deadline: deadline))
    }

    private mutating func disarm(_ timer: ConnectionTimer, into actions: inout [Action]) {
        generations[timer, default: 0] += 1
        armed.remove(timer)
        actions.append(.cancel(timer))
    }
}
