// The typed errors subscribers get when a power-on or a session fails. Whatever the error, the
// receiver has been switched off by the time a subscriber sees it.
public import LinuxSystem
public import PiHardware

/// Why a power-on or a running session failed.
public enum ReceiverError: Error, Sendable, CustomStringConvertible {
    /// A GPIO line the board needs could not be requested or driven (busy, missing, gone).
    case gpio(role: String, GPIOError)
    /// The link to the receiver could not be opened, or failed (serial port, I2C bus).
    case link(device: String, any HardwareFault)
    /// The device vanished while the session ran (an unplugged adapter, a closed terminal).
    case deviceGone(device: String, any HardwareFault)
    /// No valid frame arrived within the time-out (at any of `speedsTried` for a UART).
    case noResponse(device: String, waited: Duration, speedsTried: [Int])
    /// The receiver refused a configuration command (UBX ACK-NAK, PMTK001 flag 0–2).
    case configurationRejected(command: String, detail: String)
    /// A configuration command was not acknowledged after every attempt.
    case configurationTimedOut(command: String, attempts: Int)
    /// A command was addressed to the receiver while no session ran (nobody subscribed).
    case notRunning
    /// A duty cycle's power-on found no fix at all within its time budget (`after`); `accuracy`
    /// is what the subscriber asked for. The receiver is off again; the next fix is due one
    /// interval later, for a subscriber that subscribes again.
    case noFix(after: Duration, accuracy: Double?)

    public var description: String {
        switch self {
        case .gpio(let role, let error):
            "the \(role) line: \(error)"
        case .link(let device, let error):
            "\(device): \(error)"
        case .deviceGone(let device, let error):
            "\(device) went away: \(error)"
        case .noResponse(let device, let waited, let speeds):
            "no valid frame from the receiver on \(device) within \(Self.seconds(waited))"
                + (speeds.count > 1 ? " at any of \(speeds.map(String.init).joined(separator: ", ")) baud" : "")
                + " (is it wired and powered? is another program using the port?)"
        case .configurationRejected(let command, let detail):
            "the receiver refused \(command) (\(detail))"
        case .configurationTimedOut(let command, let attempts):
            "no acknowledgement of \(command) after \(attempts) attempt\(attempts == 1 ? "" : "s")"
                + " (set configuration.enabled to false for a read-only receiver)"
        case .notRunning:
            "the receiver is not running (no session: subscribe first)"
        case .noFix(let after, let accuracy):
            "no fix within \(Self.seconds(after))" + (accuracy.map { " (wanted \($0) m or better)" } ?? "")
                + " (is the antenna outside, with a view of the sky?)"
        }
    }

    /// The underlying hardware fault, if any.
    public var hardwareFault: (any HardwareFault)? {
        switch self {
        case .gpio(_, let error): error
        case .link(_, let error), .deviceGone(_, let error): error
        default: nil
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
