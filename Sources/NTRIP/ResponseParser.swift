// The caster's answer, parsed incrementally: give it bytes in any chunking, take back what is
// complete (the head once, then the body's bytes, de-chunked, then its end). A pure function of
// the bytes: no I/O, no clock.

/// One complete piece of a caster's answer, in order: ``head(_:)`` once, then ``body(_:)`` bytes
/// (never empty), then ``end`` when the body has an end (its length, the last chunk, or the close).
public enum NTRIPResponsePart: Sendable, Hashable {
    case head(NTRIPResponseHead)
    case body([UInt8])
    case end
}

/// Why an answer cannot be read. The texts show the offending bytes, non-printable ones as `\xHH`.
public enum NTRIPResponseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The first line is none of `ICY`, `SOURCETABLE` or `HTTP/` with a status code (a caster's own
    /// message such as `ERROR - Bad Password`, or binary data): the line up to the first byte that
    /// cannot be in one.
    case unrecognisedStatusLine(String)
    /// A status or header line longer than the limit, or a chunk-size line.
    case lineTooLong(limit: Int)
    /// A header line that is not `Name: value`.
    case malformedField(String)
    /// More header fields than the limit.
    case tooManyFields(limit: Int)
    /// A chunk-size line that is not a hexadecimal size.
    case malformedChunkSize(String)
    /// A chunk's data not followed by CRLF.
    case missingChunkTerminator
    /// The connection closed in the middle of `part`.
    case truncated(part: String)

    public var description: String {
        switch self {
        case .unrecognisedStatusLine(let line): "not an NTRIP or HTTP answer: '\(line)'"
        case .lineTooLong(let limit): "a line of the answer is longer than \(limit) bytes"
        case .malformedField(let line): "a header line is not 'Name: value': '\(line)'"
        case .tooManyFields(let limit): "more than \(limit) header fields"
        case .malformedChunkSize(let line): "a chunk size is not hexadecimal: '\(line)'"
        case .missingChunkTerminator: "a chunk is not followed by CRLF"
        case .truncated(let part): "the connection closed in the middle of the \(part)"
        }
    }
}

/// Parses a caster's answer (NTRIP 1 or 2) from a byte stream in any chunking.
///
/// ```swift
/// var parser = NTRIPResponseParser()
/// parser.append(contentsOf: received)
/// while let part = try parser.next() { ... }   // nil: needs more bytes
/// parser.finish()                              // the connection closed
/// ```
///
/// It copes with what casters really send: RTKLIB's `ICY 200 OK` followed by data with no empty line,
/// pygnssutils' NTRIP 2 status line that runs into its first header field, LF without CR, chunked
/// bodies with extensions and trailers. The head of an `ICY` answer is returned as soon as its status
/// line is complete (a caster may send nothing more until it has a GGA); header lines after it are
/// skipped. After an error, ``next()`` throws the same error again.
public struct NTRIPResponseParser: Sendable {
    /// Bounds that tell a broken answer from a real one.
    public struct Limits: Sendable, Hashable {
        public var maxLineLength: Int
        public var maxFields: Int
        public var maxChunkSize: Int

        public init(maxLineLength: Int = 4096, maxFields: Int = 100, maxChunkSize: Int = 1 << 24) {
            self.maxLineLength = max(maxLineLength, 16)
            self.maxFields = max(maxFields, 1)
            self.maxChunkSize = max(maxChunkSize, 1)
        }
    }

    enum State: Sendable {
        case statusLine
        /// After `ICY 200 OK`: an optional empty line or header lines, then the data.
        case icyPreamble
        case fields
        case untilClose
        case length(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailer
        case finished
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    private var start = 0
    private var state = State.statusLine
    private var head: NTRIPResponseHead?
    private var closed = false
    private var failure: NTRIPResponseError?

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes received and not yet returned.
    public var pendingByteCount: Int { buffer.count - start }

    /// Whether the whole answer has been returned (its ``NTRIPResponsePart/end``).
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Appends received bytes.
    public mutating func append<Bytes: Sequence<UInt8>>(contentsOf bytes: Bytes) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Declares the end of the stream (the caster closed the connection).
    public mutating func finish() {
        closed = true
    }

    /// The next complete part, or nil when more bytes are needed (or the answer is finished).
    public mutating func next() throws(NTRIPResponseError) -> NTRIPResponsePart? {
        if let failure { throw failure }
        do {
            return try step()
        } catch {
            failure = error
            throw error
        }
    }

    // MARK: - States

    private mutating func step() throws(NTRIPResponseError) -> NTRIPResponsePart? {
        while true {
            switch state {
            case .statusLine:
                guard let line = try takeLine(statusLine: true) else { return try needMore("status line") }
                let head = NTRIPResponseHead(status: try Self.status(line))
                if case .icy = head.status {
                    state = .icyPreamble
                    return .head(head)
                }
                self.head = head
                state = .fields
            case .icyPreamble:
                if try skipICYPreamble() { continue }
                return nil
            case .fields:
                guard let line = try takeLine(statusLine: false) else {
                    // str2str's 401 is its status line alone, then the close: the head is what came.
                    guard closed else { return nil }
                    start = buffer.count
                    return .head(endOfHead())
                }
                if line.isEmpty { return .head(endOfHead()) }
                try addField(line)
            case .untilClose:
                if let bytes = takeBody(max: pendingByteCount) { return .body(bytes) }
                guard closed else { return nil }
                state = .finished
                return .end
            case .length(let remaining):
                if remaining == 0 || (closed && pendingByteCount == 0) {
                    state = .finished
                    return .end
                }
                guard let bytes = takeBody(max: remaining) else { return nil }
                state = .length(remaining: remaining - bytes.count)
                return .body(bytes)
            case .chunkSize:
                guard let line = try takeLine(statusLine: false) else { return try needMore("chunked body") }
                let size = try chunkSize(line)
                state = size == 0 ? .trailer : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard let bytes = takeBody(max: remaining) else { return try needMore("chunked body") }
                state = bytes.count == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - bytes.count)
                return .body(bytes)
            case .chunkDataEnd:
                guard try takeChunkTerminator() else { return try needMore("chunked body") }
                state = .chunkSize
            case .trailer:
                guard let line = try takeLine(statusLine: false) else { return try needMore("chunked body") }
                if line.isEmpty {
                    state = .finished
                    return .end
                }
            case .finished:
                start = buffer.count
                return nil
            }
        }
    }

    /// Nil while the connection is open; the truncation error once it has closed.
    private func needMore(_ part: String) throws(NTRIPResponseError) -> NTRIPResponsePart? {
        if closed { throw .truncated(part: part) }
        return nil
    }

    private mutating func endOfHead() -> NTRIPResponseHead {
        let head = self.head ?? NTRIPResponseHead(status: .http(version: "HTTP/1.1", code: 0, reason: ""))
        self.head = nil
        if head.isChunked {
            state = .chunkSize
        } else if let length = head.contentLength {
            state = .length(remaining: length)
        } else {
            state = .untilClose
        }
        return head
    }

    private mutating func addField(_ line: String) throws(NTRIPResponseError) {
        guard var head else { return }
        if line.first == " " || line.first == "\t", let last = head.fields.indices.last {
            // An obsolete folded line continues the previous field.
            head.fields[last].value += " " + line.trimmingSpaces
        } else {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .malformedField(line)
            }
            guard head.fields.count < limits.maxFields else { throw .tooManyFields(limit: limits.maxFields) }
            head.fields.append(NTRIPHeaderField(
                name: line[..<colon].trimmingSpaces, value: line[line.index(after: colon)...].trimmingSpaces))
        }
        self.head = head
    }

    /// Skips what may follow `ICY 200 OK` before the data: an empty line, or header lines. Returns
    /// true when the data begins (the state has moved on), false when more bytes are needed.
    private mutating func skipICYPreamble() throws(NTRIPResponseError) -> Bool {
        guard pendingByteCount > 0 else {
            if closed { state = .untilClose }
            return closed
        }
        let first = buffer[start]
        if first == UInt8(ascii: "\n") {
            start += 1
            state = .untilClose
        } else if first == UInt8(ascii: "\r") {
            guard pendingByteCount > 1 || closed else { return false }
            start += pendingByteCount > 1 && buffer[start + 1] == UInt8(ascii: "\n") ? 2 : 1
            state = .untilClose
        } else if Self.isLetter(first) {
            switch fieldLineAhead() {
            case .some(true): return true  // a field line was skipped; look again
            case .some(false): state = .untilClose
            case .none:
                guard closed else { return false }
                state = .untilClose
            }
        } else {
            state = .untilClose
        }
        return true
    }

    /// Whether the pending bytes begin with a whole `Name: value` line (skipped when they do); nil
    /// while they may still become one.
    private mutating func fieldLineAhead() -> Bool? {
        var index = start
        var colon = false
        while index < buffer.count {
            let byte = buffer[index]
            if byte == UInt8(ascii: "\n") {
                guard colon else { return false }
                start = index + 1
                return true
            }
            if byte == UInt8(ascii: ":") { colon = true }
            if byte == UInt8(ascii: "\r") {
                // Only as the CR of the line's CRLF.
                guard index + 1 < buffer.count else { return nil }
                guard buffer[index + 1] == UInt8(ascii: "\n") else { return false }
            } else if !Self.isLineByte(byte) || index - start >= limits.maxLineLength {
                return false
            }
            index += 1
        }
        return nil
    }

    // MARK: - Lines and bytes

    /// The next whole line without its CRLF (or LF), or nil when it has not all come. Every byte up to
    /// the LF must be printable ASCII (or a tab, or the CR before the LF).
    private mutating func takeLine(statusLine: Bool) throws(NTRIPResponseError) -> String? {
        var index = start
        while index < buffer.count {
            let byte = buffer[index]
            if byte == UInt8(ascii: "\n") {
                var end = index
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = index + 1
                return line
            }
            // The length first: a byte past the limit makes the line too long whatever it is, so the error does
            // not depend on whether the byte after it (which tells a CR of CRLF from a stray one) has come yet.
            if index - start >= limits.maxLineLength { throw .lineTooLong(limit: limits.maxLineLength) }
            let crBeforeLF = byte == UInt8(ascii: "\r")
                && (index + 1 == buffer.count || buffer[index + 1] == UInt8(ascii: "\n"))
            if !Self.isLineByte(byte) && !crBeforeLF {
                let shown = Self.shown(buffer[start...index])
                throw statusLine ? .unrecognisedStatusLine(shown) : .malformedField(shown)
            }
            index += 1
        }
        return nil
    }

    /// Up to `max` pending bytes (at least one), or nil when none are pending.
    private mutating func takeBody(max: Int) -> [UInt8]? {
        let count = min(max, pendingByteCount)
        guard count > 0 else { return nil }
        defer { start += count }
        return Array(buffer[start..<start + count])
    }

    /// Consumes the CRLF (or LF) after a chunk's data: false when it has not come yet.
    private mutating func takeChunkTerminator() throws(NTRIPResponseError) -> Bool {
        guard pendingByteCount > 0 else { return false }
        if buffer[start] == UInt8(ascii: "\n") {
            start += 1
            return true
        }
        guard buffer[start] == UInt8(ascii: "\r") else { throw .missingChunkTerminator }
        guard pendingByteCount > 1 else { return false }
        guard buffer[start + 1] == UInt8(ascii: "\n") else { throw .missingChunkTerminator }
        start += 2
        return true
    }

    private func chunkSize(_ line: String) throws(NTRIPResponseError) -> Int {
        let digits = (line.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            .trimmingSpaces
        guard !digits.isEmpty, digits.count <= 8, let size = Int(digits, radix: 16), size <= limits.maxChunkSize
        else { throw .malformedChunkSize(line) }
        return size
    }

    // MARK: - The status line

    static func status(_ line: String) throws(NTRIPResponseError) -> NTRIPResponseHead.Status {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { throw .unrecognisedStatusLine(line) }
        let protocolName = String(parts[0])
        let rest = parts[1]
        // pygnssutils' NTRIP 2 answer runs on into its first field (`200 OKNtrip-Version: ...`): only
        // the three digits matter.
        let codeText = rest.prefix(3)
        guard codeText.count == 3, codeText.allSatisfy({ $0.isASCII && $0.isNumber }), let code = Int(codeText),
            rest.dropFirst(3).first.map({ $0 == " " }) ?? true
        else { throw .unrecognisedStatusLine(line) }
        let reason = rest.dropFirst(3).trimmingSpaces
        switch protocolName.uppercased() {
        case "ICY": return .icy(code: code, reason: reason)
        case "SOURCETABLE": return .sourcetable(code: code, reason: reason)
        case let name where name.hasPrefix("HTTP/") || name.hasPrefix("RTSP/"):
            return .http(version: protocolName, code: code, reason: reason)
        default: throw .unrecognisedStatusLine(line)
        }
    }

    @inline(__always)
    static func isLineByte(_ byte: UInt8) -> Bool {
        (byte >= 0x20 && byte < 0x7F) || byte == UInt8(ascii: "\t")
    }

    @inline(__always)
    static func isLetter(_ byte: UInt8) -> Bool {
        let upper = byte & 0xDF  // ASCII letters differ from their capitals in bit 5 only
        return upper >= UInt8(ascii: "A") && upper <= UInt8(ascii: "Z")
    }

    /// At most 80 bytes, non-printable ones as `\xHH`.
    static func shown(_ bytes: ArraySlice<UInt8>) -> String {
        var text = ""
        for byte in bytes.prefix(80) {
            if isLineByte(byte) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }
}
