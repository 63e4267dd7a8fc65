// Small JSON for the payloads this module writes (OwnTracks, Home Assistant, power) and reads (a
// consumer's demand): no Foundation in a shipped module, and nothing here needs more than a flat
// object, a few nested ones and arrays of strings.
internal import GNSSProtocol

/// Writes one JSON object, fields in the order given.
struct JSONObjectWriter {
    private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ name: String, _ value: String) {
        key(name)
        appendString(value)
    }

    mutating func int(_ name: String, _ value: Int) {
        key(name)
        ASCII.appendInt(value, to: &bytes)
    }

    /// A number with `decimals` places, trailing zeros kept; left out when `nil` or not finite.
    mutating func number(_ name: String, _ value: Double?, decimals: Int) {
        guard let value, value.isFinite else { return }
        key(name)
        ASCII.appendFixed(value, decimals: decimals, to: &bytes)
    }

    mutating func bool(_ name: String, _ value: Bool) {
        key(name)
        bytes += value ? Array("true".utf8) : Array("false".utf8)
    }

    mutating func strings(_ name: String, _ values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func object(_ name: String, _ body: (inout JSONObjectWriter) -> Void) {
        key(name)
        var inner = JSONObjectWriter()
        body(&inner)
        bytes += inner.finished()
    }

    func finished() -> [UInt8] { bytes + [UInt8(ascii: "}")] }

    private mutating func appendString(_ value: String) {
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes += [UInt8(ascii: "\\"), byte]
            case 0..<0x20:
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// A scalar value of a flat JSON object.
enum JSONScalar: Equatable, Sendable {
    case string(String)
    /// A number as written (checked to be a JSON number).
    case number(String)
    case bool(Bool)
    case null
    /// An array or object, skipped (its contents are not needed).
    case nested
}

/// Why a JSON object could not be read: what was wrong and at which byte.
struct JSONReadError: Error, Equatable, Sendable, CustomStringConvertible {
    var reason: String
    var offset: Int
    var description: String { "\(reason) at byte \(offset)" }
}

/// Reads one JSON object's members (RFC 8259), keeping scalars and skipping nested values.
struct JSONObjectReader {
    private let bytes: [UInt8]
    private var index = 0

    static func members(of bytes: [UInt8]) throws(JSONReadError) -> [(name: String, value: JSONScalar)] {
        var reader = JSONObjectReader(bytes: bytes)
        reader.skipSpace()
        let members = try reader.object()
        reader.skipSpace()
        guard reader.index == bytes.count else { throw reader.error("text after the object") }
        return members
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private func error(_ reason: String) -> JSONReadError { JSONReadError(reason: reason, offset: index) }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(JSONReadError) {
        guard current == byte else { throw error("expected \(what)") }
        index += 1
    }

    private mutating func object() throws(JSONReadError) -> [(name: String, value: JSONScalar)] {
        try expect(UInt8(ascii: "{"), "an object")
        var members: [(name: String, value: JSONScalar)] = []
        skipSpace()
        if current == UInt8(ascii: "}") {
            index += 1
            return members
        }
        while true {
            skipSpace()
            let name = try string()
            skipSpace()
            try expect(UInt8(ascii: ":"), "':'")
            skipSpace()
            members.append((name, try value(depth: 0)))
            skipSpace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"), "',' or '}'")
            return members
        }
    }

    private mutating func value(depth: Int) throws(JSONReadError) -> JSONScalar {
        guard depth < 32 else { throw error("nesting too deep") }
        switch current {
        case UInt8(ascii: "\"")?:
            return .string(try string())
        case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
            try skipNested(depth: depth)
            return .nested
        case UInt8(ascii: "t")?:
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f")?:
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n")?:
            try literal("null")
            return .null
        default:
            return .number(try number())
        }
    }

    private mutating func skipNested(depth: Int) throws(JSONReadError) {
        let close = current == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        let isObject = close == UInt8(ascii: "}")
        index += 1
        skipSpace()
        if current == close {
            index += 1
            return
        }
        while true {
            skipSpace()
            if isObject {
                _ = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"), "':'")
                skipSpace()
            }
            _ = try value(depth: depth + 1)
            skipSpace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(close, isObject ? "',' or '}'" : "',' or ']'")
            return
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONReadError) {
        let expected = Array(UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
        guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw error("expected a value")
        }
        index += expected.count
    }

    private mutating func number() throws(JSONReadError) -> String {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        func digits(_ reader: inout JSONObjectReader) -> Int {
            let from = reader.index
            while let byte = reader.current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { reader.index += 1 }
            return reader.index - from
        }
        let integerStart = index
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw error("expected a value") }
        guard bytes[integerStart] != UInt8(ascii: "0") || integerDigits == 1 else { throw error("a leading zero") }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw error("expected a digit") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw error("expected a digit") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func string() throws(JSONReadError) -> String {
        try expect(UInt8(ascii: "\""), "a string")
        var out: [UInt8] = []
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw error("an unfinished escape") }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard bytes.count - index >= 4,
                          let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                    else { throw error("a bad \\u escape") }
                    index += 4
                    // Surrogates stand for themselves as U+FFFD: names here are plain text.
                    let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                    out += Array(String(Character(scalar)).utf8)
                default:
                    throw error("a bad escape")
                }
            case 0..<0x20:
                throw error("a control character in a string")
            default:
                out.append(byte)
            }
        }
        throw error("an unterminated string")
    }
}
