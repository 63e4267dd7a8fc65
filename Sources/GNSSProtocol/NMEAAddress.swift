// NMEA talkers and addresses as small values (no String per sentence).

/// A two-letter NMEA talker (`GP`, `GN`, ...), packed into an integer.
public struct NMEATalker: Hashable, Sendable, CustomStringConvertible {
    public let first: UInt8
    public let second: UInt8

    public init(_ first: UInt8, _ second: UInt8) {
        self.first = first
        self.second = second
    }

    /// From a two-letter string; other lengths give `GP`.
    public init(_ text: StaticString) {
        let bytes = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        self.init(bytes.count > 0 ? bytes[0] : UInt8(ascii: "G"), bytes.count > 1 ? bytes[1] : UInt8(ascii: "P"))
    }

    public static let gp = NMEATalker("GP")
    public static let gl = NMEATalker("GL")
    public static let ga = NMEATalker("GA")
    public static let gb = NMEATalker("GB")
    public static let bd = NMEATalker("BD")
    public static let gq = NMEATalker("GQ")
    public static let qz = NMEATalker("QZ")
    public static let gi = NMEATalker("GI")
    public static let gn = NMEATalker("GN")

    /// The single system a talker stands for; `nil` for `GN` (several) and unknown talkers.
    /// `GP` may also carry SBAS and QZSS numbers, which the satellite number tells apart.
    public var system: GNSSSystem? {
        switch (first, second) {
        case (UInt8(ascii: "G"), UInt8(ascii: "P")): return .gps
        case (UInt8(ascii: "G"), UInt8(ascii: "L")): return .glonass
        case (UInt8(ascii: "G"), UInt8(ascii: "A")): return .galileo
        case (UInt8(ascii: "G"), UInt8(ascii: "B")), (UInt8(ascii: "B"), UInt8(ascii: "D")),
            (UInt8(ascii: "P"), UInt8(ascii: "Q")):
            return .beidou
        case (UInt8(ascii: "G"), UInt8(ascii: "Q")), (UInt8(ascii: "Q"), UInt8(ascii: "Z")): return .qzss
        case (UInt8(ascii: "G"), UInt8(ascii: "I")): return .navic
        default: return nil
        }
    }

    public var description: String { String(decoding: [first, second], as: UTF8.self) }
}

/// An NMEA address (`GPGGA`, `PMTK001`, `PUBX`): up to 8 characters packed into an integer.
public struct NMEAAddress: Hashable, Sendable, CustomStringConvertible {
    /// The characters, first in the low byte.
    public let packed: UInt64
    public let count: Int

    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 1, bytes.count <= 8 else { return nil }
        var packed: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            guard
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            else { return nil }
            packed |= UInt64(byte) << UInt64(8 * index)
        }
        self.packed = packed
        self.count = bytes.count
    }

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard let address = bytes.withUnsafeBytes({ NMEAAddress($0) }) else { return nil }
        self = address
    }

    public subscript(index: Int) -> UInt8 {
        index < count ? UInt8(truncatingIfNeeded: packed >> UInt64(8 * index)) : 0
    }

    /// Proprietary sentences start with `P`.
    public var isProprietary: Bool { self[0] == UInt8(ascii: "P") }

    /// The talker of a standard sentence.
    public var talker: NMEATalker? {
        guard !isProprietary, count == 5 else { return nil }
        return NMEATalker(self[0], self[1])
    }

    /// The three-letter sentence formatter of a standard sentence, packed like the address.
    var formatter: UInt32 {
        UInt32(truncatingIfNeeded: packed >> 16) & 0xFF_FFFF
    }

    static func formatter(_ text: StaticString) -> UInt32 {
        let bytes = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16
    }

    public var description: String {
        String(decoding: (0..<count).map { self[$0] }, as: UTF8.self)
    }

    public var bytes: [UInt8] { (0..<count).map { self[$0] } }
}
