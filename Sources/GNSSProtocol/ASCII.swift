// Hand-written ASCII number parsing and formatting: no String per field, no Foundation.

/// Number parsing and formatting over raw ASCII bytes, shared by the NMEA codec and the JSON reports.
public enum ASCII {
    @usableFromInline
    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
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

    /// Parses a decimal number (`-12.345`, `.5`, `7.`) filling all of `bytes`, correctly rounded.
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
        if fractionDigits > 0 { value /= powersOfTen[fractionDigits] }
        return negative ? -value : value
    }

    @usableFromInline
    static func slowParse(_ bytes: UnsafeRawBufferPointer) -> Double? {
        Double(String(decoding: bytes, as: UTF8.self))
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
        if digits < width {
            for _ in digits..<width { bytes.append(UInt8(ascii: "0")) }
        }
        appendUnsigned(UInt64(value), digits: digits, to: &bytes)
    }

    /// Appends a decimal integer.
    @inlinable
    public static func appendInt(_ value: Int, to bytes: inout [UInt8]) {
        appendPadded(value, width: 1, to: &bytes)
    }

    @inlinable
    static func appendUnsigned(_ value: UInt64, digits: Int, to bytes: inout [UInt8]) {
        let start = bytes.count
        for _ in 0..<digits { bytes.append(0) }
        var value = value
        var index = start + digits - 1
        while index >= start {
            bytes[index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
            index -= 1
        }
    }

    /// Appends `value` with exactly `decimals` fraction digits, like C's `printf("%.*f")`.
    /// Non-finite values are the caller's business; they are written as `0`.
    @inlinable
    public static func appendFixed(_ value: Double, decimals: Int, to bytes: inout [UInt8]) {
        guard value.isFinite else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        let decimals = max(0, min(decimals, 15))
        let scaled = (abs(value) * powersOfTen[decimals]).rounded(.toNearestOrEven)
        guard scaled < 9.0e18 else {
            bytes.append(contentsOf: "\(value)".utf8)
            return
        }
        if value.sign == .minus { bytes.append(UInt8(ascii: "-")) }
        let integer = UInt64(scaled)
        let divisor = UInt64(powersOfTen[decimals])
        let whole = integer / divisor
        var digits = 1
        var probe = whole
        while probe >= 10 {
            probe /= 10
            digits += 1
        }
        appendUnsigned(whole, digits: digits, to: &bytes)
        if decimals > 0 {
            bytes.append(UInt8(ascii: "."))
            appendUnsigned(integer % divisor, digits: decimals, to: &bytes)
        }
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
