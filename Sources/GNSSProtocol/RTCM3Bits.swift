// RTCM 3's bit fields: unsigned and two's-complement integers of any width up to 64 bits, most
// significant bit first, packed with no padding between fields (RTCM 10403.3, 3.3 "data types").

/// Writes RTCM 3 data fields MSB first into bytes; the last byte is padded with zero bits.
public struct RTCM3BitWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Bits written so far.
    public private(set) var bitCount = 0

    public init() {}

    /// Appends the low `width` bits of `value` (an unsigned field: DF002, DF003, ...).
    public mutating func unsigned(_ value: UInt64, width: Int) {
        // An RTCM field is 1 to 64 bits wide.
        let width = min(max(width, 1), 64)
        for shift in stride(from: width - 1, through: 0, by: -1) {
            bit(value >> UInt64(shift) & 1 == 1)
        }
    }

    /// Appends `value` as a two's-complement field of `width` bits (DF025, DF400, ...), clamped to
    /// the field's range.
    public mutating func signed(_ value: Int64, width: Int) {
        let width = min(max(width, 1), 64)
        let limit = width == 64 ? Int64.max : (Int64(1) << (width - 1)) - 1
        let clamped = min(max(value, -limit - 1), limit)
        unsigned(UInt64(bitPattern: clamped), width: width)
    }

    public mutating func bit(_ set: Bool) {
        if bitCount % 8 == 0 { bytes.append(0) }
        if set { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
        bitCount += 1
    }
}

/// Reads RTCM 3 data fields MSB first; reading past the end gives nil.
public struct RTCM3BitReader: Sendable {
    private let bytes: ArraySlice<UInt8>
    /// The next bit's position from the start.
    public private(set) var position = 0

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    /// Bits left.
    public var remaining: Int { bytes.count * 8 - position }

    public mutating func unsigned(width: Int) -> UInt64? {
        guard width > 0, width <= 64, remaining >= width else { return nil }
        var value: UInt64 = 0
        for _ in 0..<width {
            let byte = bytes[bytes.startIndex + position / 8]
            value = value << 1 | UInt64(byte >> UInt8(7 - position % 8) & 1)
            position += 1
        }
        return value
    }

    public mutating func signed(width: Int) -> Int64? {
        guard let raw = unsigned(width: width) else { return nil }
        guard width < 64 else { return Int64(bitPattern: raw) }
        let sign = UInt64(1) << UInt64(width - 1)
        return raw & sign == 0 ? Int64(raw) : Int64(raw) - Int64(sign << 1)
    }

    public mutating func skip(_ width: Int) -> Bool {
        guard remaining >= width else { return false }
        position += width
        return true
    }
}
