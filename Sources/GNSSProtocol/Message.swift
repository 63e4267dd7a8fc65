// A decoded frame of any protocol, and RTCM 3 frames (passed through whole).

/// An RTCM 3 frame (`D3 | 6 reserved bits, 10-bit length | payload | CRC-24Q`), kept whole.
public struct RTCM3Frame: Hashable, Sendable {
    /// The whole frame, preamble to CRC, as received.
    public let bytes: ArraySlice<UInt8>

    public init(frame: ArraySlice<UInt8>) throws(DecodeError) {
        guard frame.count >= 8, frame[frame.startIndex] == 0xD3 else { throw .truncated }
        bytes = frame
    }

    /// A frame already checked by `init(frame:)`.
    fileprivate init(verified frame: ArraySlice<UInt8>) {
        bytes = frame
    }

    /// The frame with storage of its own (its bytes may share a framer's buffer).
    public var owned: RTCM3Frame { RTCM3Frame(verified: ArraySlice(Array(bytes))) }

    /// The message number: the first 12 bits of the payload (1005 station, 1077 GPS MSM7, ...).
    public var messageNumber: Int {
        let start = bytes.startIndex
        return Int(bytes[start + 3]) << 4 | Int(bytes[start + 4] >> 4)
    }

    /// The payload, without preamble, length and CRC.
    public var payload: ArraySlice<UInt8> { bytes[(bytes.startIndex + 3)..<(bytes.endIndex - 3)] }

    /// A frame around `payload` (at most 1023 bytes): preamble, length, payload, CRC-24Q.
    public static func frame(payload: [UInt8]) -> [UInt8] {
        let payload = Array(payload.prefix(1023))
        var bytes: [UInt8] = [0xD3, UInt8(payload.count >> 8), UInt8(truncatingIfNeeded: payload.count)]
        bytes += payload
        let crc = bytes.withUnsafeBytes { CRC24Q.checksum($0) }
        bytes += [
            UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc),
        ]
        return bytes
    }
}

/// A decoded message of any of the three protocols.
public enum Message: Hashable, Sendable {
    case nmea(NMEASentence)
    case ubx(UBXMessage)
    case rtcm3(RTCM3Frame)

    /// Decodes a frame from the `Framer`.
    public init(frame: Frame) throws(DecodeError) {
        switch frame.kind {
        case .nmea: self = .nmea(try NMEASentence(frame: frame.bytes))
        case .ubx: self = .ubx(try UBXMessage(frame: frame.bytes))
        case .rtcm3: self = .rtcm3(try RTCM3Frame(frame: frame.bytes))
        }
    }
}

extension Message {
    /// The message with storage of its own. A message kept whole (an RTCM 3 frame, an NMEA sentence or UBX
    /// message of a kind not decoded) holds a slice of the buffer its frame came from; keep such a message
    /// past the next `append` of the framer (or `GNSSDecoder`) only as this copy, or the framer's buffer is
    /// copied at that `append`. Typed messages own their fields already and come back as they are.
    public var owned: Message {
        switch self {
        case .nmea(.proprietary(let address, let sentence)):
            return .nmea(.proprietary(address, sentence: ArraySlice(Array(sentence))))
        case .nmea(.unsupported(let address, let sentence)):
            return .nmea(.unsupported(address, sentence: ArraySlice(Array(sentence))))
        case .ubx(.other(let id, let payload)):
            return .ubx(.other(id, payload: ArraySlice(Array(payload))))
        case .rtcm3(let frame):
            return .rtcm3(RTCM3Frame(verified: ArraySlice(Array(frame.bytes))))
        case .nmea, .ubx:
            return self
        }
    }
}

extension Framer {
    /// The next frame decoded: `nil` when more bytes are needed, else the message or why it did not decode.
    public mutating func nextMessage() -> Result<Message, DecodeError>? {
        guard let frame = next() else { return nil }
        do {
            return .success(try Message(frame: frame))
        } catch {
            return .failure(error)
        }
    }
}
