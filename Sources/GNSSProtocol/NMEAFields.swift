// Reading NMEA fields in place: each field is a view of the sentence, numbers are parsed by hand.

/// Walks the comma-separated fields of a sentence body (between `$` and `*`), after the address.
/// A field past the end reads as empty, so optional trailing fields (NMEA 4.10) decode as `nil`.
struct NMEAFieldReader {
    let body: UnsafeRawBufferPointer
    let address: NMEAAddress
    /// Fields after the address.
    let count: Int
    private var position: Int
    /// 1-based number of the field last read.
    private(set) var index = 0

    init(body: UnsafeRawBufferPointer, address: NMEAAddress, addressEnd: Int) {
        self.body = body
        self.address = address
        self.count = Commas.count(in: body)
        self.position = addressEnd + 1
    }

    var remaining: Int { count - index }

    mutating func next() -> UnsafeRawBufferPointer {
        index += 1
        guard position <= body.count, index <= count else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let end = Commas.first(in: body, from: position)
        let field = UnsafeRawBufferPointer(rebasing: body[position..<end])
        position = end + 1
        return field
    }

    mutating func skip(_ fields: Int = 1) {
        for _ in 0..<fields { _ = next() }
    }

    var error: DecodeError { .nmeaField(address: address, field: index) }

    mutating func double() throws(DecodeError) -> Double? {
        let field = next()
        if field.isEmpty { return nil }
        guard let value = ASCII.parseDouble(field) else { throw error }
        return value
    }

    mutating func int() throws(DecodeError) -> Int? {
        let field = next()
        if field.isEmpty { return nil }
        if let value = ASCII.parseInt(field) { return value }
        // Some receivers write integer fields with a fraction ("08.0"); accept whole numbers.
        if let value = ASCII.parseDouble(field), value == value.rounded(), abs(value) < 1e15 { return Int(value) }
        throw error
    }

    /// A single-character field (status, mode indicator, hemisphere).
    mutating func character() throws(DecodeError) -> Unicode.Scalar? {
        let field = next()
        if field.isEmpty { return nil }
        guard field.count == 1 else { throw error }
        return Unicode.Scalar(field[0])
    }

    /// A short text field kept as-is (GNS mode indicators, PMTK strings).
    mutating func text() -> String? {
        let field = next()
        if field.isEmpty { return nil }
        return String(decoding: field, as: UTF8.self)
    }

    /// `hhmmss(.sss)`.
    mutating func time() throws(DecodeError) -> TimeOfDay? {
        let field = next()
        if field.isEmpty { return nil }
        guard field.count >= 6 else { throw error }
        func two(_ offset: Int) -> Int? {
            let a = field[offset] &- UInt8(ascii: "0")
            let b = field[offset + 1] &- UInt8(ascii: "0")
            guard a < 10, b < 10 else { return nil }
            return Int(a) * 10 + Int(b)
        }
        guard let hour = two(0), let minute = two(2), let second = two(4), hour < 24, minute < 60, second <= 60
        else { throw error }
        var nanosecond = 0
        if field.count > 6 {
            guard field[6] == UInt8(ascii: "."), field.count <= 16 else { throw error }
            var scale = 100_000_000
            for offset in 7..<field.count {
                let digit = field[offset] &- UInt8(ascii: "0")
                guard digit < 10 else { throw error }
                nanosecond += Int(digit) * scale
                scale /= 10
            }
        }
        return TimeOfDay(hour: hour, minute: minute, second: second, nanosecond: nanosecond)
    }

    /// `ddmmyy` (RMC); two-digit years are 1980-2079.
    mutating func date() throws(DecodeError) -> GNSSDate? {
        let field = next()
        if field.isEmpty { return nil }
        guard field.count == 6, let value = ASCII.parseInt(field), value >= 0 else { throw error }
        let yy = value % 100
        let year = yy < 80 ? 2000 + yy : 1900 + yy
        guard let date = GNSSDate(validYear: year, month: value / 100 % 100, day: value / 10000) else { throw error }
        return date
    }

    /// `(d)ddmm.mmmm` and a hemisphere letter, as signed decimal degrees.
    mutating func coordinate(positive: UInt8, negative: UInt8, maxDegrees: Int) throws(DecodeError) -> Double? {
        let field = next()
        let hemisphere = next()
        if field.isEmpty && hemisphere.isEmpty { return nil }
        guard !field.isEmpty, hemisphere.count == 1 else { throw error }
        guard let value = NMEAFieldReader.degreesMinutes(field), value <= Double(maxDegrees) else { throw error }
        switch hemisphere[0] {
        case positive: return value
        case negative: return -value
        default: throw error
        }
    }

    /// Converts `dddmm.mmmm` to degrees: whole degrees are the digits before the last two of the integer part.
    static func degreesMinutes(_ field: UnsafeRawBufferPointer) -> Double? {
        var point = field.count
        for index in 0..<field.count where field[index] == UInt8(ascii: ".") {
            point = index
            break
        }
        guard point >= 2, point <= 5 else { return nil }
        guard
            let degrees = ASCII.parseInt(UnsafeRawBufferPointer(rebasing: field[0..<(point - 2)]))
                ?? (point == 2 ? 0 : nil),
            degrees >= 0,
            let minutes = ASCII.parseDouble(UnsafeRawBufferPointer(rebasing: field[(point - 2)...])),
            minutes < 60
        else { return nil }
        return Double(degrees) + minutes / 60
    }
}

/// Builds a sentence: `$`, address, comma-separated fields, `*hh`, CR LF.
public struct NMEASentenceWriter {
    public private(set) var bytes: [UInt8]

    public init(address: String, capacity: Int = 96) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "$"))
        bytes.append(contentsOf: address.utf8)
    }

    public init(talker: NMEATalker, formatter: StaticString) {
        bytes = []
        bytes.reserveCapacity(96)
        bytes.append(UInt8(ascii: "$"))
        bytes.append(talker.first)
        bytes.append(talker.second)
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: formatter.utf8Start, count: formatter.utf8CodeUnitCount))
    }

    public mutating func empty() { bytes.append(UInt8(ascii: ",")) }

    public mutating func field(_ text: String?) {
        bytes.append(UInt8(ascii: ","))
        if let text { bytes.append(contentsOf: text.utf8) }
    }

    public mutating func field(_ scalar: Unicode.Scalar?) {
        bytes.append(UInt8(ascii: ","))
        if let scalar, scalar.isASCII { bytes.append(UInt8(scalar.value)) }
    }

    public mutating func field(_ value: Int?, width: Int = 1) {
        bytes.append(UInt8(ascii: ","))
        if let value { ASCII.appendPadded(value, width: width, to: &bytes) }
    }

    public mutating func field(_ value: Double?, decimals: Int) {
        bytes.append(UInt8(ascii: ","))
        if let value, value.isFinite { ASCII.appendFixed(value, decimals: decimals, to: &bytes) }
    }

    public mutating func field(_ time: TimeOfDay?, decimals: Int) {
        bytes.append(UInt8(ascii: ","))
        guard let time else { return }
        ASCII.appendPadded(time.hour, width: 2, to: &bytes)
        ASCII.appendPadded(time.minute, width: 2, to: &bytes)
        ASCII.appendPadded(time.second, width: 2, to: &bytes)
        if decimals > 0 {
            bytes.append(UInt8(ascii: "."))
            var divisor = 1_000_000_000
            for _ in 0..<min(decimals, 9) { divisor /= 10 }
            ASCII.appendPadded(time.nanosecond / divisor, width: min(decimals, 9), to: &bytes)
        }
    }

    public mutating func field(_ date: GNSSDate?) {
        bytes.append(UInt8(ascii: ","))
        guard let date else { return }
        ASCII.appendPadded(date.day, width: 2, to: &bytes)
        ASCII.appendPadded(date.month, width: 2, to: &bytes)
        ASCII.appendPadded(date.year % 100, width: 2, to: &bytes)
    }

    /// Two fields: `(d)ddmm.mmmmm` with `decimals` minute decimals, and the hemisphere.
    public mutating func coordinate(_ degrees: Double?, decimals: Int, latitude: Bool) {
        bytes.append(UInt8(ascii: ","))
        guard let degrees, degrees.isFinite else {
            bytes.append(UInt8(ascii: ","))
            return
        }
        let magnitude = abs(degrees)
        let scale = ASCII.powerOfTen(max(0, min(decimals, 10)))
        // Round in minutes first so 59.999995 carries into the degrees.
        let totalMinutes = (magnitude * 60 * scale).rounded() / scale
        var whole = Int(totalMinutes / 60)
        var minutes = totalMinutes - Double(whole) * 60
        if minutes < 0 {
            whole -= 1
            minutes += 60
        }
        ASCII.appendPadded(whole, width: latitude ? 2 : 3, to: &bytes)
        if minutes < 10 { bytes.append(UInt8(ascii: "0")) }
        ASCII.appendFixed(minutes, decimals: decimals, to: &bytes)
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: latitude ? (degrees < 0 ? "S" : "N") : (degrees < 0 ? "W" : "E")))
    }

    /// Appends `*hh` and CR LF, and returns the sentence.
    public mutating func finish() -> [UInt8] {
        var sum: UInt8 = 0
        for byte in bytes.dropFirst() { sum ^= byte }
        bytes.append(UInt8(ascii: "*"))
        ASCII.appendHexByte(sum, to: &bytes)
        bytes.append(UInt8(ascii: "\r"))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

/// Commas found eight bytes at a time: a sentence is read twice (commas counted for the field count, then
/// each field's end found), and a byte at a time these two scans were a sixth of decoding a sentence.
enum Commas {
    private static let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    private static let commas: UInt64 = 0x2C2C_2C2C_2C2C_2C2C

    /// The high bit of each byte of `word` that is a comma, no other bit (exact: no carry crosses bytes).
    @inline(__always)
    private static func marks(_ word: UInt64) -> UInt64 {
        let x = word ^ commas
        return ~(((x & low7) &+ low7) | x | low7)
    }

    /// The number of commas in `bytes`.
    static func count(in bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        var offset = 0
        while bytes.count &- offset >= 8 {
            // One mark per comma, in the byte's high bit: summed by the multiply into the top byte.
            count &+= Int(((marks(bytes.u64(offset)) >> 7) &* 0x0101_0101_0101_0101) >> 56)
            offset &+= 8
        }
        while offset < bytes.count {
            if bytes[offset] == UInt8(ascii: ",") { count &+= 1 }
            offset &+= 1
        }
        return count
    }

    /// The offset of the first comma at or after `start` (`start <= bytes.count`), or `bytes.count`.
    static func first(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var offset = start
        while bytes.count &- offset >= 8 {
            let found = marks(bytes.u64(offset))
            if found != 0 { return offset &+ found.trailingZeroBitCount >> 3 }
            offset &+= 8
        }
        while offset < bytes.count && bytes[offset] != UInt8(ascii: ",") { offset &+= 1 }
        return offset
    }
}
