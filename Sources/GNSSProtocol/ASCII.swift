// Hand-written ASCII number parsing and formatting: no String per field, no Foundation.

/// Number parsing and formatting over raw ASCII bytes, shared by the NMEA codec and the JSON reports.
public enum ASCII {
    /// 10^n for n in 0...22 (exact doubles), without a lazily initialised table.
    @inlinable
    static func powerOfTen(_ n: Int) -> Double {
        switch n {
        case 0: return 1
        case 1: return 1e1
        case 2: return 1e2
        case 3: return 1e3
        case 4: return 1e4
        case 5: return 1e5
        case 6: return 1e6
        case 7: return 1e7
        case 8: return 1e8
        case 9: return 1e9
        case 10: return 1e10
        case 11: return 1e11
        case 12: return 1e12
        case 13: return 1e13
        case 14: return 1e14
        case 15: return 1e15
        case 16: return 1e16
        case 17: return 1e17
        case 18: return 1e18
        case 19: return 1e19
        case 20: return 1e20
        case 21: return 1e21
        default: return 1e22
        }
    }

    // MARK: parsing

    /// Parses an optionally signed decimal integer filling all of `bytes`; `nil` if empty or not a number.
    @inlinable
    public static func parseInt(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        let count = bytes.count
        guard count > 0 else { return nil }
        var negative = false
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            negative = bytes[0] == UInt8(ascii: "-")
            index = 1
            guard count > 1 else { return nil }
        }
        guard count - index <= 18 else { return nil }
        var value = 0
        while index < count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
            index += 1
        }
        return negative ? -value : value
    }

    /// Parses a hexadecimal integer (no prefix) filling all of `bytes`.
    @inlinable
    public static func parseHex(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count > 0, bytes.count <= 15 else { return nil }
        var value = 0
        for byte in bytes {
            guard let digit = hexValue(byte) else { return nil }
            value = value << 4 | Int(digit)
        }
        return value
    }

    @inlinable
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// Largest magnitude `parseDouble` accepts: no NMEA field holds more, and larger numbers could not
    /// be written back in fixed-point notation.
    public static let maximumDecimal = 1e12

    /// Parses a decimal number (`-12.345`, `.5`, `7.`) filling all of `bytes`, correctly rounded;
    /// `nil` when it is not one or its magnitude reaches `maximumDecimal`.
    @inlinable
    public static func parseDouble(_ bytes: UnsafeRawBufferPointer) -> Double? {
        let count = bytes.count
        guard count > 0 else { return nil }
        var index = 0
        var negative = false
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            negative = bytes[0] == UInt8(ascii: "-")
            index = 1
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var seenPoint = false
        var significant = 0
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                guard !seenPoint else { return nil }
                seenPoint = true
            } else {
                let digit = byte &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                digits += 1
                if significant > 0 || digit != 0 { significant += 1 }
                if significant > 19 { return slowParse(bytes) }
                mantissa = mantissa &* 10 &+ UInt64(digit)
                if seenPoint { fractionDigits += 1 }
            }
            index += 1
        }
        guard digits > 0 else { return nil }
        // Exact when both the mantissa and the power of ten are exact doubles: one correctly rounded division.
        guard mantissa <= 1 << 53, fractionDigits <= 22 else { return slowParse(bytes) }
        var value = Double(mantissa)
        if fractionDigits > 0 { value /= powerOfTen(fractionDigits) }
        guard value < maximumDecimal else { return nil }
        return negative ? -value : value
    }

    @usableFromInline
    static func slowParse(_ bytes: UnsafeRawBufferPointer) -> Double? {
        guard let value = Double(String(decoding: bytes, as: UTF8.self)), abs(value) < maximumDecimal else {
            return nil
        }
        return value
    }

    // MARK: formatting

    /// Appends `value` left-padded with zeros to `width` digits (no sign handling below zero beyond `-`).
    @inlinable
    public static func appendPadded(_ value: Int, width: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let value = value.magnitude
        var digits = 1
        var probe = value
        while probe >= 10 {
            probe /= 10
            digits += 1
        }
        appendUnsigned(UInt64(value), digits: max(digits, min(width, 20)), to: &bytes)
    }

    /// Appends a decimal integer.
    @inlinable
    public static func appendInt(_ value: Int, to bytes: inout [UInt8]) {
        appendPadded(value, width: 1, to: &bytes)
    }

    /// Appends the `digits` lowest decimal digits of `value` (zero-padded), in one append.
    @inlinable
    static func appendUnsigned(_ value: UInt64, digits: Int, to bytes: inout [UInt8]) {
        let digits = min(max(digits, 1), 20)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var value = value
            var index = digits
            while index > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<digits]))
        }
    }

    /// Appends `value` with exactly `decimals` fraction digits, like C's `printf("%.*f")`.
    /// Non-finite values are the caller's business; they are written as `0`.
    @inlinable
    public static func appendFixed(_ value: Double, decimals: Int, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let count = writeFixed(value, decimals: decimals, to: buffer.baseAddress!)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Writes `value` with exactly `decimals` fraction digits and returns the count (at most 64 bytes).
    /// The value times 10^decimals, rounded half to even, is written two digits at a time from its
    /// end: no division by a variable, no digit count by repeated division (a SKY report writes a
    /// hundred of these an epoch).
    @inlinable
    public static func writeFixed(_ value: Double, decimals: Int, to out: UnsafeMutablePointer<UInt8>) -> Int {
        guard value.isFinite else {
            out[0] = UInt8(ascii: "0")
            return 1
        }
        let decimals = max(0, min(decimals, 15))
        let scaled = (abs(value) * powerOfTen(decimals)).rounded(.toNearestOrEven)
        guard scaled < 9.0e18 else {
            var count = 0
            for byte in "\(value)".utf8.prefix(64) {
                out[count] = byte
                count += 1
            }
            return count
        }
        var integer = UInt64(scaled)
        // At least one digit before the point: 0.05 is the integer 5 written in four places.
        let digits = max(decimalDigits(integer), decimals &+ 1)
        let sign = value.sign == .minus ? 1 : 0
        let count = sign &+ digits &+ (decimals > 0 ? 1 : 0)
        var index = count
        var fraction = decimals
        while fraction >= 2 {
            index &-= 2
            writePair(UInt8(truncatingIfNeeded: integer % 100), to: out + index)
            integer /= 100
            fraction &-= 2
        }
        if fraction == 1 {
            index &-= 1
            out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: integer % 10)
            integer /= 10
        }
        if decimals > 0 {
            index &-= 1
            out[index] = UInt8(ascii: ".")
        }
        while index &- sign >= 2 {
            index &-= 2
            writePair(UInt8(truncatingIfNeeded: integer % 100), to: out + index)
            integer /= 100
        }
        if index > sign {
            index &-= 1
            out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: integer)
        }
        if sign == 1 { out[0] = UInt8(ascii: "-") }
        return count
    }

    /// Writes the two decimal digits of `value` (0...99).
    @inlinable @inline(__always)
    static func writePair(_ value: UInt8, to out: UnsafeMutablePointer<UInt8>) {
        let tens = value / 10
        out[0] = UInt8(ascii: "0") &+ tens
        out[1] = UInt8(ascii: "0") &+ (value &- tens &* 10)
    }

    /// The count of decimal digits of `value` (1 for 0), from its bit length: no division.
    @inlinable
    static func decimalDigits(_ value: UInt64) -> Int {
        // log10(2) ~ 1233 / 4096: a guess that is the count or one short.
        let guess = ((64 &- value.leadingZeroBitCount) &* 1233) >> 12
        return value >= powerOfTenInteger(guess) ? guess &+ 1 : max(guess, 1)
    }

    /// 10^n for n in 0...19 as an integer (the largest for n above 19).
    @inlinable
    static func powerOfTenInteger(_ n: Int) -> UInt64 {
        switch n {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        default: 10_000_000_000_000_000_000
        }
    }

    /// Writes a decimal integer (at most 20 bytes) and returns the count.
    @inlinable
    public static func writeInt(_ value: Int, to out: UnsafeMutablePointer<UInt8>) -> Int {
        var magnitude = value.magnitude
        let digits = decimalDigits(UInt64(magnitude))
        var count = 0
        if value < 0 {
            out[0] = UInt8(ascii: "-")
            count = 1
        }
        var index = count + digits
        while index > count {
            index -= 1
            out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        }
        return count + digits
    }

    /// `appendFixed` into a new `String`.
    public static func fixed(_ value: Double, decimals: Int) -> String {
        var bytes: [UInt8] = []
        appendFixed(value, decimals: decimals, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @usableFromInline
    static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Appends a byte as two upper-case hexadecimal digits.
    @inlinable
    public static func appendHexByte(_ byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(hexDigits[Int(byte >> 4)])
        bytes.append(hexDigits[Int(byte & 0xF)])
    }
}
