// Where the corrections come from, as the user spells it: `ntrip://[USER@]HOST[:PORT]/MOUNT` (plain,
// port 2101) or `ntrip+tls://...` (TLS, port 443). Not RTKLIB's `ntrips://`, which there means an
// NTRIP server (a source feeding a caster): a spelling that cannot be taken for it.

/// A caster, a user and a mountpoint: what an `ntrip://` or `ntrip+tls://` URL names. The password is
/// never part of it (it comes from a password file, so it is in no URL, log line or process list).
public struct CasterURL: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address (an IPv6 address without its brackets).
    public var host: String
    public var port: UInt16
    /// The user for Basic authentication; nil: none.
    public var user: String?
    /// The mountpoint; nil: none named (the nearest one in the sourcetable is chosen).
    public var mountpoint: String?
    /// TLS (`ntrip+tls://`).
    public var usesTLS: Bool

    public static let defaultPort: UInt16 = 2101
    public static let defaultTLSPort: UInt16 = 443

    public init(
        host: String, port: UInt16? = nil, user: String? = nil, mountpoint: String? = nil, usesTLS: Bool = false
    ) {
        self.host = host
        self.port = port ?? (usesTLS ? Self.defaultTLSPort : Self.defaultPort)
        self.user = user
        self.mountpoint = mountpoint
        self.usesTLS = usesTLS
    }

    /// Parses `ntrip://[USER@]HOST[:PORT][/MOUNT]` or `ntrip+tls://...`; `[IPV6]` in brackets.
    /// `USER:PASSWORD@` is refused: the password belongs in the password file. `%XX` escapes in the
    /// user and the mountpoint are decoded.
    public init(parsing text: String) throws(NTRIPConfigurationError) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("ntrip://") {
            usesTLS = false
            rest = text.dropFirst("ntrip://".count)
        } else if lower.hasPrefix("ntrip+tls://") {
            usesTLS = true
            rest = text.dropFirst("ntrip+tls://".count)
        } else if lower.hasPrefix("ntrips://") {
            throw .invalidURL(text, reason: "ntrips:// is RTKLIB's NTRIP server (a source); use ntrip+tls:// for TLS")
        } else {
            throw .invalidURL(text, reason: "expected ntrip://[USER@]HOST[:PORT]/MOUNT or ntrip+tls://...")
        }
        let slash = rest.firstIndex(of: "/")
        var authority = slash.map { rest[..<$0] } ?? rest
        let path = slash.map { rest[rest.index(after: $0)...] } ?? ""
        if let at = authority.lastIndex(of: "@") {
            let userPart = authority[..<at]
            if userPart.contains(":") {
                throw .invalidURL(
                    Self.redacted(text), reason: "a password in the URL; put it in the password file instead")
            }
            guard !userPart.isEmpty else { throw .invalidURL(text, reason: "an empty user before '@'") }
            user = try Self.decoded(String(userPart), in: text)
            authority = authority[authority.index(after: at)...]
        } else {
            user = nil
        }
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidURL(text, reason: "no ']' after the IPv6 address")
            }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw .invalidURL(text, reason: "expected ':PORT' after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        guard !host.isEmpty else { throw .invalidURL(text, reason: "no host") }
        if let portText {
            guard let value = UInt16(portText), value > 0 else {
                throw .invalidURL(text, reason: "the port must be a number from 1 to 65535")
            }
            port = value
        } else {
            port = usesTLS ? Self.defaultTLSPort : Self.defaultPort
        }
        let rawMount = path.hasSuffix("/") ? path.dropLast() : path
        guard !rawMount.contains("/"), !rawMount.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" }) else {
            throw .invalidURL(text, reason: "a mountpoint is one name, without '/' or spaces")
        }
        let mount = try Self.decoded(String(rawMount), in: text)
        mountpoint = mount.isEmpty ? nil : mount
    }

    /// `ntrip://user@host:port/MOUNT`: never a password.
    public var description: String {
        let scheme = usesTLS ? "ntrip+tls" : "ntrip"
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(user.map { $0 + "@" } ?? "")\(hostPart):\(port)/\(mountpoint ?? "")"
    }

    /// `host:port`, for log lines and the `Host:` field.
    public var authority: String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The same caster with another mountpoint.
    public func with(mountpoint: String?) -> CasterURL {
        var copy = self
        copy.mountpoint = mountpoint
        return copy
    }

    private static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text.lastIndex(of: "@"),
            let colon = text[schemeEnd.upperBound..<at].firstIndex(of: ":")
        else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    private static func decoded(_ text: String, in url: String) throws(NTRIPConfigurationError) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
                else { throw .invalidURL(url, reason: "a '%' not followed by two hexadecimal digits") }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// Whether `other` occurs in this string.
    func range(of other: String) -> Range<String.Index>? {
        guard !other.isEmpty else { return nil }
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(other) {
                return index..<self.index(index, offsetBy: other.count)
            }
            index = self.index(after: index)
        }
        return nil
    }
}
