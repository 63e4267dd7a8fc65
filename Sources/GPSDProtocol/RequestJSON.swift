// The JSON argument of a request (`?WATCH={...};`): one object of attributes, read without Foundation.
// Values nested in arrays or objects are read and kept only as their kind, since no request this
// service answers takes them; attribute types are checked against a table the way gpsd's microjson
// does, with its error messages. `package`: the MQTT bridge reads a consumer's demand object with it.

/// One attribute value of a request object.
package enum RequestValue: Equatable, Sendable {
    case string(String)
    /// A bare token: a number, `true`, `false`, `null` or anything else gpsd would read as a token.
    case token(String)
    case array
    case object
}

/// Why a request's JSON could not be read, worded as gpsd's `json_error_string`.
package enum RequestJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    case objectStart
    case attributeStart
    case attributeTooLong
    case badTrail
    case badString
    case tokenTooLong
    case unexpectedArray
    case unexpectedObject
    case quotedWhereNonString
    case unquotedWhereString
    case empty

    package var description: String {
        switch self {
        case .objectStart: "non-whitespace when expecting object start"
        case .attributeStart: "non-whitespace when expecting attribute start"
        case .attributeTooLong: "attribute name too long"
        case .badTrail: "garbage while expecting comma or } or ]"
        case .badString: "error while string parsing"
        case .tokenTooLong: "token value too long"
        case .unexpectedArray: "saw [ when not expecting array"
        case .unexpectedObject: "saw { when not expecting object"
        case .quotedWhereNonString: "saw quoted value when expecting nonstring"
        case .unquotedWhereString: "didn't see quoted value when expecting string"
        case .empty: "input was empty or white-space only"
        }
    }
}

/// Reads one JSON object's attributes in order; `end` is the index after its closing `}`.
package struct RequestObjectReader {
    static let maxAttributeLength = 31
    static let maxValueLength = 512

    private let bytes: ArraySlice<UInt8>
    private var index: Int

    package static func read(_ bytes: ArraySlice<UInt8>) throws(RequestJSONError) -> (
        attributes: [(name: String, value: RequestValue)], end: Int
    ) {
        var reader = RequestObjectReader(bytes: bytes, index: bytes.startIndex)
        reader.skipSpace()
        guard reader.index < bytes.endIndex else { throw .empty }
        let attributes = try reader.object()
        return (attributes, reader.index)
    }

    private mutating func object() throws(RequestJSONError) -> [(name: String, value: RequestValue)] {
        guard peek == UInt8(ascii: "{") else { throw .objectStart }
        index += 1
        var attributes: [(name: String, value: RequestValue)] = []
        skipSpace()
        if peek == UInt8(ascii: "}") {
            index += 1
            return attributes
        }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\"") else { throw .attributeStart }
            let name = try string(limit: Self.maxAttributeLength, tooLong: .attributeTooLong)
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw .badTrail }
            index += 1
            skipSpace()
            let value = try value()
            attributes.append((name, value))
            skipSpace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "}"):
                index += 1
                return attributes
            default:
                throw .badTrail
            }
        }
    }

    private mutating func value() throws(RequestJSONError) -> RequestValue {
        switch peek {
        case UInt8(ascii: "\""):
            return .string(try string(limit: Self.maxValueLength, tooLong: .tokenTooLong))
        case UInt8(ascii: "["):
            try skipNested(open: UInt8(ascii: "["), close: UInt8(ascii: "]"))
            return .array
        case UInt8(ascii: "{"):
            try skipNested(open: UInt8(ascii: "{"), close: UInt8(ascii: "}"))
            return .object
        case nil:
            throw .badTrail
        default:
            let start = index
            while let byte = peek, !Self.isSpace(byte), byte != UInt8(ascii: ","), byte != UInt8(ascii: "}") {
                index += 1
            }
            guard index > start else { throw .badTrail }
            guard index - start <= Self.maxValueLength else { throw .tokenTooLong }
            return .token(String(decoding: bytes[start..<index], as: UTF8.self))
        }
    }

    /// A quoted string with JSON escapes; `index` is at the opening quote.
    private mutating func string(limit: Int, tooLong: RequestJSONError) throws(RequestJSONError) -> String {
        index += 1
        var utf8: [UInt8] = []
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { throw .badString }
                index += 1
                let replacement: UInt8?
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): replacement = escaped
                case UInt8(ascii: "b"): replacement = 8
                case UInt8(ascii: "f"): replacement = 12
                case UInt8(ascii: "n"): replacement = 10
                case UInt8(ascii: "r"): replacement = 13
                case UInt8(ascii: "t"): replacement = 9
                case UInt8(ascii: "u"):
                    replacement = nil
                    guard index + 4 <= bytes.endIndex,
                          let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16),
                          let scalar = Unicode.Scalar(code)
                    else { throw .badString }
                    index += 4
                    utf8.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw .badString
                }
                if let replacement { utf8.append(replacement) }
            case 0..<0x20:
                throw .badString
            default:
                utf8.append(byte)
            }
            if utf8.count > limit { throw tooLong }
        }
        throw .badString
    }

    /// Skips a nested array or object, strings included.
    private mutating func skipNested(open: UInt8, close: UInt8) throws(RequestJSONError) {
        var depth = 0
        var inString = false
        while let byte = peek {
            index += 1
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return }
            default: break
            }
        }
        throw .badTrail
    }

    private var peek: UInt8? { index < bytes.endIndex ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte = peek, Self.isSpace(byte) { index += 1 }
    }

    package static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

/// Typed reads of attribute values, with gpsd's type errors.
extension RequestValue {
    func bool() throws(RequestJSONError) -> Bool {
        switch self {
        case .token(let text): return text == "true"
        case .string: throw .quotedWhereNonString
        case .array: throw .unexpectedArray
        case .object: throw .unexpectedObject
        }
    }

    /// An integer as C's `atoi` reads a token (gpsd's microjson does): leading digits, else 0.
    func int() throws(RequestJSONError) -> Int {
        switch self {
        case .token(let text):
            var digits = Substring(text)
            let negative = digits.first == "-"
            if negative || digits.first == "+" { digits = digits.dropFirst() }
            let value = Int(digits.prefix { $0.isASCII && $0.isNumber }.prefix(18)) ?? 0
            return negative ? -value : value
        case .string: throw .quotedWhereNonString
        case .array: throw .unexpectedArray
        case .object: throw .unexpectedObject
        }
    }

    func double() throws(RequestJSONError) -> Double {
        switch self {
        case .token(let text): return Double(text) ?? 0
        case .string: throw .quotedWhereNonString
        case .array: throw .unexpectedArray
        case .object: throw .unexpectedObject
        }
    }

    func string() throws(RequestJSONError) -> String {
        switch self {
        case .string(let text): return text
        case .token: throw .unquotedWhereString
        case .array: throw .unexpectedArray
        case .object: throw .unexpectedObject
        }
    }
}
