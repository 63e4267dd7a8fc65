// What a client tells its user: one value per thing that happened, each with the log line it prints.

/// The nearest mountpoint a client chose from the sourcetable.
public struct ChosenMountpoint: Sendable, Hashable {
    public var mountpoint: String
    public var identifier: String
    /// Great-circle distance from the client's position, metres.
    public var distance: Double

    public init(mountpoint: String, identifier: String, distance: Double) {
        self.mountpoint = mountpoint
        self.identifier = identifier
        self.distance = distance
    }
}

/// Something a client did or met, in the order it happened; ``description`` is its log line.
public enum NTRIPReport: Sendable, CustomStringConvertible {
    /// Connecting waits for the first position (for the GGA, or to choose a mountpoint).
    case waitingForPosition(caster: String)
    /// The last attempt began less than the back-off ago (casters ban fast reconnects): the next
    /// waits this long.
    case waitingBeforeConnecting(caster: String, delay: Duration)
    /// No mountpoint was named: this is the nearest RTCM 3 one.
    case chose(ChosenMountpoint)
    /// The caster accepted the request; RTCM flows.
    case streaming(caster: String, attempt: Int, statusLine: String)
    /// Attempt `attempt` failed (or a stream ended): why, and when the next comes.
    case attemptFailed(caster: String, attempt: Int, error: NTRIPError, retryIn: Duration)
    /// The last subscriber left: the connection is closed.
    case disconnected(caster: String)

    public var description: String {
        switch self {
        case .waitingForPosition(let caster):
            "ntrip: waiting for a position before connecting to \(caster)"
        case .waitingBeforeConnecting(let caster, let delay):
            "ntrip: connecting to \(caster) in \(delay.seconds) s (casters ban clients that reconnect quickly)"
        case .chose(let chosen):
            "ntrip: nearest mountpoint \(chosen.mountpoint)"
                + (chosen.identifier.isEmpty ? "" : " (\(chosen.identifier))")
                + ", \(Self.kilometres(chosen.distance)) km away"
        case .streaming(let caster, let attempt, let statusLine):
            "ntrip: streaming RTCM from \(caster) (\(statusLine), attempt \(attempt))"
        case .attemptFailed(let caster, let attempt, let error, let retryIn):
            "ntrip: attempt \(attempt) on \(caster) failed: \(error); next attempt in \(retryIn.seconds) s"
        case .disconnected(let caster):
            "ntrip: disconnected from \(caster) (no subscriber left)"
        }
    }

    /// Metres as kilometres with one decimal.
    static func kilometres(_ metres: Double) -> String {
        let tenths = Int((metres / 100).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
