// What a Receiver's corrections feed reports: whether it takes corrections now and why not, what it
// wrote to the receiver, and what the receiver said of them (u-blox RXM-RTCM).
import GNSSProtocol

/// The corrections feed of a Receiver (see ``Receiver/useCorrections(_:)``): whether it subscribes
/// its source now, what it wrote, and the receiver's confirmations.
public struct CorrectionStatus: Sendable, Hashable, CustomStringConvertible {
    /// Whether a source is attached.
    public var sourceAttached = false
    /// Whether the Receiver subscribes the source now (the source, an NTRIP client, is then connected
    /// or connecting).
    public var subscribed = false
    /// Why the Receiver does not take corrections now; nil while it does.
    public var notWantedBecause: CorrectionsMachine.Reason?
    /// Subscriptions made so far.
    public var subscriptions = 0
    /// Frames the source delivered while subscribed, frames written to the receiver and their bytes,
    /// and frames dropped unwritten because newer ones came first (a link slower than the stream) or
    /// the receiver was powering off.
    public var framesReceived = 0
    public var framesWritten = 0
    public var bytesWritten = 0
    public var framesDropped = 0
    /// The message number of the last frame written.
    public var lastMessageWritten: Int?
    /// When the last frame was written, on the Receiver's clock (time since it was made).
    public var lastWrittenAt: Duration?
    /// The receiver's word on the messages it got (u-blox RXM-RTCM): used, received but not used,
    /// CRC failed, and reports without a verdict (older firmware).
    public var confirmedUsed = 0
    public var confirmedNotUsed = 0
    public var confirmedCRCFailed = 0
    public var confirmedUnknown = 0
    /// The reference station of the last message the receiver used.
    public var lastStationUsed: Int?
    /// The last error: a source that failed, a write that failed.
    public var lastError: String?

    public init() {}

    /// Counts one RXM-RTCM report.
    mutating func confirm(_ report: UBXRxmRTCM) {
        if report.crcFailed {
            confirmedCRCFailed += 1
            return
        }
        switch report.use {
        case .used:
            confirmedUsed += 1
            lastStationUsed = Int(report.refStation)
        case .notUsed: confirmedNotUsed += 1
        case .unknown: confirmedUnknown += 1
        }
    }

    public var description: String {
        var text = subscribed ? "taking corrections" : "not taking corrections"
        if let notWantedBecause { text += " (\(notWantedBecause))" }
        text += ": \(framesWritten) frames written (\(bytesWritten) bytes), \(framesDropped) dropped"
        if confirmedUsed + confirmedNotUsed + confirmedCRCFailed > 0 {
            text += "; the receiver used \(confirmedUsed), did not use \(confirmedNotUsed), "
                + "CRC failed \(confirmedCRCFailed)"
        }
        if let lastError { text += "; last error: \(lastError)" }
        return text
    }
}
