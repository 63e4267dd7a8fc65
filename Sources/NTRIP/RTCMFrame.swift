// What the corrections signal carries: one RTCM 3 frame as the caster sent it, with when it came.
public import GNSSProtocol

/// An RTCM 3 frame received from a caster (CRC-24Q checked by GNSSProtocol's ``Framer``).
public struct RTCMFrame: Sendable, Hashable {
    /// The frame, preamble to CRC: what a receiver takes as it is.
    public let frame: RTCM3Frame
    /// When it arrived: time since the client was made, on the client's clock (compare with
    /// ``NTRIPClient/now`` for its age).
    public let receivedAt: Duration

    public init(frame: RTCM3Frame, receivedAt: Duration) {
        self.frame = frame
        self.receivedAt = receivedAt
    }

    /// The message number: 1005 station, 1077 GPS MSM7, 1230 GLONASS biases, ...
    public var messageNumber: Int { frame.messageNumber }

    /// The frame's bytes, preamble to CRC.
    public var bytes: ArraySlice<UInt8> { frame.bytes }
}
