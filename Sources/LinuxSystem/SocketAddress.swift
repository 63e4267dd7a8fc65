// Socket addresses: IPv4, IPv6 and Unix paths, parsed from the `ADDR:PORT` forms a command line uses
// and converted to and from `sockaddr_in`, `sockaddr_in6` and `sockaddr_un`.
internal import CLinuxShims
internal import Glibc

/// Where a socket listens or connects.
public enum SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address in dotted form (`127.0.0.1`, `0.0.0.0` for every interface) and a TCP port.
    case ipv4(String, port: UInt16)
    /// An IPv6 address (`::1`, `::` for every interface) and a TCP port.
    case ipv6(String, port: UInt16)
    /// A Unix socket path.
    case unix(String)

    /// Parses `ADDR:PORT`, `[IPV6]:PORT`, `ADDR` (with `defaultPort`), `:PORT` or `*:PORT` (every IPv4
    /// interface), or a path starting with `/` or `.` (a Unix socket). `localhost` means `127.0.0.1`.
    /// Host names are not resolved: a service binds addresses, not names.
    public init(parsing text: String, defaultPort: UInt16) throws(SocketError) {
        if text.hasPrefix("/") || text.hasPrefix(".") {
            try Self.checkUnixPath(text)
            self = .unix(text)
            return
        }
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw .invalidAddress(text, reason: "no ']' after the IPv6 address")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { throw .invalidAddress(text, reason: "expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if text.filter({ $0 == ":" }).count > 1 {
            host = Substring(text)  // a bare IPv6 address
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = Substring(text)
        }
        var port = defaultPort
        if let portText {
            guard let value = UInt16(portText) else {
                throw .invalidAddress(text, reason: "the port must be a number from 0 to 65535")
            }
            port = value
        }
        if host.isEmpty || host == "*" { host = "0.0.0.0" }
        if host == "localhost" { host = "127.0.0.1" }
        if Self.isValid(String(host), family: AF_INET) {
            self = .ipv4(String(host), port: port)
        } else if Self.isValid(String(host), family: AF_INET6) {
            self = .ipv6(String(host), port: port)
        } else {
            throw .invalidAddress(text, reason: "not a numeric IPv4 or IPv6 address (names are not resolved)")
        }
    }

    /// The TCP port, or `nil` for a Unix socket.
    public var port: UInt16? {
        switch self {
        case .ipv4(_, let port), .ipv6(_, let port): port
        case .unix: nil
        }
    }

    /// `127.0.0.1:2947`, `[::1]:2947` or the Unix path.
    public var description: String {
        switch self {
        case .ipv4(let host, let port): "\(host):\(port)"
        case .ipv6(let host, let port): "[\(host)]:\(port)"
        case .unix(let path): path
        }
    }

    /// The same address with another port (an ephemeral port 0 replaced by the one the kernel chose).
    func with(port: UInt16) -> SocketAddress {
        switch self {
        case .ipv4(let host, _): .ipv4(host, port: port)
        case .ipv6(let host, _): .ipv6(host, port: port)
        case .unix: self
        }
    }

    var family: CInt {
        switch self {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(SocketError) -> R {
        switch self {
        case .ipv4(let host, let port):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard system_inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw .invalidAddress(description, reason: "not an IPv4 address")
            }
            return withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6(let host, let port):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard system_inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw .invalidAddress(description, reason: "not an IPv6 address")
            }
            return withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        case .unix(let path):
            try Self.checkUnixPath(path)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let length = MemoryLayout<sa_family_t>.size + path.utf8.count + 1
            return withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
            }
        }
    }

    /// Reads an IPv4 or IPv6 `sockaddr` (as `getsockname` or `accept` filled it).
    static func from(_ storage: UnsafePointer<sockaddr_storage>) -> SocketAddress? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch CInt(storage.pointee.ss_family) {
        case AF_INET:
            return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin_addr
                guard system_inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
                return .ipv4(Self.string(text), port: UInt16(bigEndian: pointer.pointee.sin_port))
            }
        case AF_INET6:
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin6_addr
                guard system_inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
                return .ipv6(Self.string(text), port: UInt16(bigEndian: pointer.pointee.sin6_port))
            }
        default:
            return nil
        }
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isValid(_ host: String, family: CInt) -> Bool {
        var buffer = sockaddr_in6()  // large enough for either family's address
        return withUnsafeMutableBytes(of: &buffer) { raw in
            guard let base = raw.baseAddress else { return false }
            return system_inet_pton(family, host, base) == 1
        }
    }

    private static func checkUnixPath(_ path: String) throws(SocketError) {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard !path.isEmpty, path.utf8.count < capacity else {
            throw .invalidAddress(path, reason: "a Unix socket path must be 1 to \(capacity - 1) bytes")
        }
        guard !path.utf8.contains(0) else { throw .invalidAddress(path, reason: "the path contains a NUL byte") }
    }
}
