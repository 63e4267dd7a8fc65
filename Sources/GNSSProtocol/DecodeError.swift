// Typed decoding errors: a bad frame says what was wrong, and never stops the stream.

/// Why a checksum-valid frame could not be decoded into a typed message.
public enum DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A UBX payload whose length does not fit its class and id.
    case ubxLength(messageClass: UInt8, id: UInt8, length: Int)
    /// A UBX field with a value the message cannot have (for example a CFG-VALGET version).
    case ubxField(messageClass: UInt8, id: UInt8, offset: Int)
    /// An NMEA sentence with an address that is not letters and digits.
    case nmeaAddress
    /// An NMEA sentence with fewer fields than its type needs.
    case nmeaFieldCount(address: NMEAAddress, count: Int)
    /// An NMEA field (1-based, after the address) that does not parse.
    case nmeaField(address: NMEAAddress, field: Int)
    /// A frame too short to hold its own header.
    case truncated

    public var description: String {
        switch self {
        case .ubxLength(let messageClass, let id, let length):
            return "UBX \(UBX.name(messageClass: messageClass, id: id)): payload length \(length) is not valid"
        case .ubxField(let messageClass, let id, let offset):
            return "UBX \(UBX.name(messageClass: messageClass, id: id)): bad value at payload offset \(offset)"
        case .nmeaAddress:
            return "NMEA: malformed address"
        case .nmeaFieldCount(let address, let count):
            return "NMEA \(address): \(count) fields is too few"
        case .nmeaField(let address, let field):
            return "NMEA \(address): field \(field) does not parse"
        case .truncated:
            return "frame too short"
        }
    }
}
