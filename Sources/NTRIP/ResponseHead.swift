// What a caster answers before its data: the status line (NTRIP 1's `ICY 200 OK` and
// `SOURCETABLE 200 OK`, or HTTP's) and the header fields.

/// A caster's status line and header fields.
public struct NTRIPResponseHead: Sendable, Hashable {
    /// The first line of the answer.
    public enum Status: Sendable, Hashable {
        /// NTRIP 1's stream answer: `ICY 200 OK`.
        case icy(code: Int, reason: String)
        /// NTRIP 1's sourcetable answer: `SOURCETABLE 200 OK`.
        case sourcetable(code: Int, reason: String)
        /// An HTTP status line (NTRIP 2, and the errors of NTRIP 1 casters): `HTTP/1.1 401 Unauthorized`.
        case http(version: String, code: Int, reason: String)
    }

    public var status: Status
    /// The header fields in the order they came (names as the caster spelt them).
    public var fields: [NTRIPHeaderField]

    public init(status: Status, fields: [NTRIPHeaderField] = []) {
        self.status = status
        self.fields = fields
    }

    /// The status code: 200, 401, ...
    public var code: Int {
        switch status {
        case .icy(let code, _), .sourcetable(let code, _), .http(_, let code, _): code
        }
    }

    /// The reason phrase after the code.
    public var reason: String {
        switch status {
        case .icy(_, let reason), .sourcetable(_, let reason), .http(_, _, let reason): reason
        }
    }

    /// The value of the first field named `name` (case-insensitive), if any.
    public func field(_ name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// `Transfer-Encoding: chunked` (NTRIP 2 streams).
    public var isChunked: Bool {
        field("Transfer-Encoding")?.lowercased().containsBytes(of: "chunked") ?? false
    }

    /// `Content-Length`, when given as a number.
    public var contentLength: Int? {
        field("Content-Length").flatMap { Int($0.trimmingSpaces) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Whether the answer is a sourcetable: NTRIP 1's `SOURCETABLE 200 OK`, or an NTRIP 2 200 whose
    /// `Content-Type` is `gnss/sourcetable`.
    public var isSourcetable: Bool {
        switch status {
        case .sourcetable: true
        case .icy: false
        case .http: code == 200 && (field("Content-Type")?.lowercased().containsBytes(of: "sourcetable") ?? false)
        }
    }

    /// The status line as it would be written (for log lines).
    public var statusLine: String {
        switch status {
        case .icy(let code, let reason): "ICY \(code) \(reason)"
        case .sourcetable(let code, let reason): "SOURCETABLE \(code) \(reason)"
        case .http(let version, let code, let reason): "\(version) \(code) \(reason)"
        }
    }
}

/// One header field: `Name: value`.
public struct NTRIPHeaderField: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        // On the UTF-8 bytes (a space or tab is one byte, never part of another character's), and the string
        // itself when there is nothing to trim: rebuilt scalar by scalar, each of an STR record's 18 fields
        // was most of the time of a sourcetable's parse.
        var text = String(self)
        let kept = { (byte: UInt8) in byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") }
        let range = text.withUTF8 { bytes -> Range<Int>? in
            guard let first = bytes.firstIndex(where: kept), let last = bytes.lastIndex(where: kept) else { return nil }
            return first..<(last + 1)
        }
        guard let range else { return "" }
        if range.count == text.utf8.count { return text }
        return text.withUTF8 { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }
}
