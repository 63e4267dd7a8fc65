// A small JSON reader for board files. It exists (rather than JSONDecoder) so that every error
// can name the line and column of bad syntax and the exact field of a bad value, and so that a
// misspelt field is an error instead of being ignored.

/// A parsed JSON value, with the position where it starts (for error messages).
struct JSONValue: Sendable {
    enum Kind: Sendable {
        case object([(key: String, value: JSONValue)])
        case array([JSONValue])
        case string(String)
        case number(Double, text: String)
        case bool(Bool)
        case null
    }

    var kind: Kind
    var line: Int
    var column: Int

    /// A short name of the value's type, for "expected X, found Y" messages.
    var typeName: String {
        switch kind {
        case .object: "an object"
        case .array: "a list"
        case .string(let text): "the text \"\(text)\""
        case .number(_, let text): "the number \(text)"
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        }
    }
}

/// A JSON syntax error at a line and column.
struct JSONSyntaxError: Error, Sendable {
    var line: Int
    var column: Int
    var problem: String
}

/// A recursive-descent parser over UTF-8 bytes (RFC 8259; nesting limited to 64 levels).
struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    /// Parses one JSON document (a value and nothing after it but white space).
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(text)
        parser.skipSpace()
        let value = try parser.parseValue()
        parser.skipSpace()
        if parser.index < parser.bytes.count { throw parser.error("unexpected text after the end of the document") }
        return value
    }

    private var column: Int { index - lineStart + 1 }

    private func error(_ problem: String) -> JSONSyntaxError {
        JSONSyntaxError(line: line, column: column, problem: problem)
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\n"):
                index += 1
                line += 1
                lineStart = index
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            default:
                return
            }
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of the document") }
        let (startLine, startColumn) = (line, column)
        let kind: JSONValue.Kind
        switch bytes[index] {
        case UInt8(ascii: "{"): kind = try parseObject()
        case UInt8(ascii: "["): kind = try parseArray()
        case UInt8(ascii: "\""): kind = .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); kind = .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); kind = .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): kind = try parseNumber()
        case let byte:
            throw error("unexpected character '\(Character(Unicode.Scalar(byte)))'")
        }
        return JSONValue(kind: kind, line: startLine, column: startColumn)
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        for expected in word.utf8 {
            guard index < bytes.count, bytes[index] == expected else { throw error("expected '\(word)'") }
            index += 1
        }
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > 64 { throw error("nesting deeper than 64 levels") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue.Kind {
        try enter()
        defer { depth -= 1 }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a field name in double quotes")
            }
            let keyStart = (line: line, column: column)
            let key = try parseString()
            if members.contains(where: { $0.key == key }) {
                throw JSONSyntaxError(line: keyStart.line, column: keyStart.column,
                                      problem: "field \"\(key)\" appears twice")
            }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after \"\(key)\"")
            }
            index += 1
            skipSpace()
            members.append((key, try parseValue()))
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of the document inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue.Kind {
        try enter()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            elements.append(try parseValue())
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of the document inside a list") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) {
            scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flush(index)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("control character inside a string (a line break needs \\n)") }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            flush(index)
            index += 1
            guard index < bytes.count else { break }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if (0xD800..<0xDC00).contains(code) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else { throw error("unpaired surrogate in \\u escape") }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape") }
                scalars.append(scalar)
            default:
                throw error("unknown escape '\\\(Character(Unicode.Scalar(escaped)))'")
            }
            run = index
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("\\u needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("\\u needs four hex digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue.Kind {
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        guard digits() > 0 else { throw error("a number needs digits") }
        if bytes[integerStart] == UInt8(ascii: "0"), index - integerStart > 1 {
            throw error("a number cannot start with 0")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("a number needs digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { throw error("a number needs digits in its exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text) else { throw error("number \(text) is out of range") }
        return .number(value, text: text)
    }
}
