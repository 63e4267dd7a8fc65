// What a client is doing now, for `gnss-hat` status lines and for owners that report it.

/// A snapshot of an ``NTRIPClient``.
public struct NTRIPStatus: Sendable {
    public enum Phase: Sendable, Equatable, CustomStringConvertible {
        /// Nobody subscribes: no connection.
        case idle
        /// Connecting waits for the first position.
        case waitingForPosition
        /// Attempt `attempt` connects (name, TCP, TLS) and sends its request.
        case connecting(attempt: Int)
        /// The request is sent; the caster has not answered yet.
        case awaitingAnswer(attempt: Int)
        /// The caster answered 200: RTCM flows.
        case streaming(attempt: Int)
        /// The last attempt failed (``NTRIPStatus/lastError`` says why); attempt `nextAttempt` begins at
        /// `retryAt` (on the client's clock, see ``NTRIPClient/now``).
        case backingOff(nextAttempt: Int, retryAt: Duration)

        public var description: String {
            switch self {
            case .idle: "idle"
            case .waitingForPosition: "waiting for a position"
            case .connecting(let attempt): "connecting (attempt \(attempt))"
            case .awaitingAnswer(let attempt): "waiting for the caster's answer (attempt \(attempt))"
            case .streaming(let attempt): "streaming (attempt \(attempt))"
            case .backingOff(let next, let at): "backing off (attempt \(next) at \(at.seconds) s)"
            }
        }
    }

    public var phase: Phase = .idle
    /// The caster and mountpoint, as log lines name them (never a password).
    public var caster: String
    /// The mountpoint chosen from the sourcetable when none was named.
    public var chosen: ChosenMountpoint?
    /// RTCM frames received since the client was made.
    public var framesReceived = 0
    /// When the last frame came (client clock).
    public var lastFrameAt: Duration?
    /// Failures since the last good stream.
    public var failuresInARow = 0
    /// Why the last attempt failed.
    public var lastError: NTRIPError?

    public init(caster: String) {
        self.caster = caster
    }
}

extension ConnectionMachine.Phase {
    var status: NTRIPStatus.Phase {
        switch self {
        case .idle: .idle
        case .waitingForPosition: .waitingForPosition
        case .connecting(let attempt): .connecting(attempt: attempt.number)
        case .requestSent(let attempt): .awaitingAnswer(attempt: attempt.number)
        case .streaming(let attempt, _): .streaming(attempt: attempt.number)
        case .backingOff(let next, let until): .backingOff(nextAttempt: next, retryAt: until)
        }
    }
}
