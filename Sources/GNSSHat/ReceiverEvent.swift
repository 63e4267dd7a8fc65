// What a Receiver delivers: the events of its one hardware session, its power state, and the
// statistics it keeps.
public import GNSSProtocol
import LinuxSystem  // clampedNanoseconds
public import PiHardware

/// One event of the receiver's hardware session, in the order `GNSSDecoder` yields them: a message, then
/// what it brought about (the start of an epoch's output, the fix and sky view of an epoch it ended).
/// The fix cases are indirect, as in `GNSSDecoder.Output`: a fix is over 500 bytes, and inline it would
/// make every event that wide, messages included, and every copy of one on its way to the subscribers
/// (through each signal's delivery) as long.
public enum ReceiverEvent: Sendable {
    /// A decoded message (NMEA, UBX or RTCM 3), in arrival order.
    case message(Message)
    /// The message just delivered is the first since an epoch ended: the receiver's output for the next
    /// epoch begins with it, and the next `fix` and `sky` are that epoch's (the service takes the time of
    /// this event as the epoch's arrival, for TOFF and chrony).
    case epochStarted
    /// The fix of the epoch in progress the first time it has a position, before the epoch ends; `fix`
    /// follows with the complete one. Only with `ReceiverOptions(provisionalFixes: true)`.
    indirect case provisionalFix(Fix)
    /// The fix of a navigation epoch (gpsd TPV meaning; `mode` may be "no fix").
    indirect case fix(Fix)
    /// The sky view of a navigation epoch (gpsd SKY meaning).
    case sky(SkyView)
    /// A navigation epoch ended: its `fix` and `sky` (either may be absent) were just delivered. A
    /// consumer that writes both can write them together (the service sends them in one write).
    case epochEnded
    /// A time pulse on the board's PPS line.
    case pps(PPSPulse)
    /// Something a user should know that is not an error, e.g. the speed the receiver was found at.
    case notice(String)
    /// A duty cycle's power-on ran out of its time budget (`after` since the power-on) before a fix
    /// met the accuracy asked for: `best` is the most accurate fix it saw (nil: none at all). The
    /// receiver powers off; ``Receiver/fixes(every:maximumAge:accuracy:)`` hands `best` on, or fails
    /// with ``ReceiverError/noFix(after:accuracy:)``.
    indirect case fixWindowClosed(best: Fix?, after: Duration)
}

extension ReceiverEvent {
    /// Calls `deliver` with each event a decoder output is delivered as, in order: an epoch becomes its fix,
    /// then its sky view (either may be absent); a frame that did not decode becomes none (the statistics
    /// count it). A message is delivered as it is: make it `owned` first if it is kept.
    static func forEach(of output: GNSSDecoder.Output, _ deliver: (ReceiverEvent) -> Void) {
        switch output {
        case .message(let message): deliver(.message(message))
        case .undecodable: break
        case .epochStarted: deliver(.epochStarted)
        case .provisionalFix(let fix): deliver(.provisionalFix(fix))
        case .epoch(let epoch):
            if let fix = epoch.fix { deliver(.fix(fix)) }
            if let sky = epoch.sky { deliver(.sky(sky)) }
            deliver(.epochEnded)
        }
    }
}

/// A time pulse, as the kernel timestamped its edge.
public struct PPSPulse: Sendable, Hashable {
    /// The edge with its kernel timestamp and sequence number.
    public var edge: EdgeEvent

    public init(edge: EdgeEvent) {
        self.edge = edge
    }

    /// The edge's system time, nanoseconds since the Unix epoch: a `CLOCK_REALTIME` timestamp as it
    /// is, a `CLOCK_MONOTONIC` one moved onto the wall clock by the two clocks read now (`wallNow`,
    /// `monotonicNow`: `WallClock.now()` and `WallClock.monotonicNow()`).
    public func systemTime(wallNow: Int64, monotonicNow: Int64) -> Int64 {
        let stamp = edge.timestamp.clampedNanoseconds
        return edge.clock == .realtime ? stamp : wallNow - (monotonicNow - stamp)
    }
}

/// The state of the Receiver's signal as power: whether somebody is served and the power sequences of
/// its start and stop. What the hardware draws is ``HardwarePower`` (``Receiver/hardwarePower``): a
/// duty cycle keeps this `on` while the receiver is off between fixes.
public enum PowerState: Sendable, Hashable, CustomStringConvertible {
    /// Off: nobody subscribes (or the minimum off time has not passed yet).
    case off
    /// The power-on sequence runs: switching on, waiting for the receiver, configuring it.
    case poweringOn
    /// On, with at least one subscriber.
    case on
    /// On, with no subscriber: it goes off when the linger ends, unless someone subscribes.
    case lingering
    /// The power-off sequence runs.
    case poweringOff
    /// The last power-on or session failed; the receiver was switched off. The next
    /// subscriber tries again.
    case failed

    public var description: String {
        switch self {
        case .off: "off"
        case .poweringOn: "powering on"
        case .on: "on"
        case .lingering: "lingering"
        case .poweringOff: "powering off"
        case .failed: "failed"
        }
    }

    /// Whether the receiver may draw its operating current in this state.
    public var isPowered: Bool {
        switch self {
        case .poweringOn, .on, .lingering, .poweringOff: true
        case .off, .failed: false
        }
    }
}

/// Counters of a receiver's sessions.
public struct ReceiverStatistics: Sendable, Hashable {
    /// Power-on sequences started (successful or not).
    public var powerOns = 0
    /// Power-on sequences that failed.
    public var failedPowerOns = 0
    /// Sessions that failed while running (a vanished device, a read error).
    public var sessionFailures = 0
    /// Power-off sequences that may have left the receiver powered: an action failed (after its
    /// retries) and no enable line cut the supply.
    public var failedPowerOffs = 0
    /// Why the most recent power-off sequence may have left the receiver powered, or nil when it
    /// did not: while this is set the receiver may still draw power (the next power-off tries
    /// again). Every failed action, even one that did not matter, is in `lastFailure`.
    public var powerOffFailure: String?
    /// Total time from the start of each power-on to the end of its power-off, including the
    /// current session.
    public var timePowered: Duration = .zero
    /// Time to first fix of each power-on, oldest first (`nil`: no fix in that session);
    /// the most recent 100 are kept.
    public var timesToFirstFix: [Duration?] = []
    /// Navigation epochs, fixes with a position, messages, and frames that did not decode.
    public var epochs = 0
    public var fixes = 0
    public var messages = 0
    public var decodeErrors = 0
    /// Bytes read from and written to the receiver.
    public var bytesReceived = 0
    public var bytesSent = 0
    /// Times a UART's read loop slept through the middle of an epoch, and those after which the
    /// epoch's end had already come (its reports waited; see docs/benchmarks.md, "Wake-ups per epoch").
    public var readPauses = 0
    public var readPausesOverslept = 0
    /// The UART speed the receiver answered at in the last session (nil for I2C).
    public var linkSpeed: Int?
    /// The u-blox protocol version MON-VER reported (`PROTVER=`), and the firmware text.
    public var protocolVersion: Double?
    public var firmware: String?
    /// The most recent failure, as text.
    public var lastFailure: String?

    public init() {}

    /// The time to first fix of the most recent power-on that had one.
    public var lastTimeToFirstFix: Duration? { timesToFirstFix.last { $0 != nil } ?? nil }
}
