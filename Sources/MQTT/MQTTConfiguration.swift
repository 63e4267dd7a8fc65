// Where the broker is and how to talk to it: `mqtt://[user@]host[:port]` or `mqtts://...`, the
// password read from a file (never from the command line), the CA file for TLS, the device name.
public import LinuxSystem

/// The MQTT protocol version a client speaks (`MQTT_PROTOCOL_V311`, `MQTT_PROTOCOL_V5`).
public enum MQTTProtocolVersion: Sendable, Hashable {
    /// MQTT 3.1.1: every broker speaks it; a broker acknowledges a message its ACL drops.
    case v311
    /// MQTT 5.0: acknowledgements carry a reason code, so a message an ACL refuses is reported.
    case v5
}

/// Why a broker URL, a device name or a credential file cannot be used; one line each.
public enum MQTTConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    case badScheme(url: String)
    case missingHost(url: String)
    case badHost(url: String, host: String)
    case badPort(url: String, port: String)
    case passwordInURL(url: String)
    case pathInURL(url: String)
    case badUser(url: String)
    case passwordWithoutUser
    case unreadableFile(role: String, path: String, Errno)
    case emptyPasswordFile(path: String)
    case badDeviceName(String, reason: String)
    case badOwnTracksUser(String, reason: String)

    public var description: String {
        switch self {
        case let .badScheme(url):
            "'\(url)' is not an MQTT URL: it starts with mqtt:// (or mqtts:// for TLS)"
        case let .missingHost(url):
            "'\(url)' names no broker host (mqtt://[user@]host[:port])"
        case let .badHost(url, host):
            "'\(url)': '\(host)' is not a host name or address"
        case let .badPort(url, port):
            "'\(url)': the port '\(port)' is not a number from 1 to 65535"
        case let .passwordInURL(url):
            "'\(url)' holds a password: give it in a file with --mqtt-password-file instead"
        case let .pathInURL(url):
            "'\(url)' has a path: an MQTT URL is only mqtt://[user@]host[:port]"
        case let .badUser(url):
            "'\(url)': the user name before '@' is empty"
        case .passwordWithoutUser:
            "a password needs a user name: put it in the URL (mqtt://USER@host)"
        case let .unreadableFile(role, path, errno):
            "cannot read the \(role) '\(path)': \(errno)"
        case let .emptyPasswordFile(path):
            "the password file '\(path)' is empty"
        case let .badDeviceName(name, reason):
            "'\(name)' cannot be a device name: \(reason)"
        case let .badOwnTracksUser(name, reason):
            "'\(name)' cannot be an OwnTracks user: \(reason)"
        }
    }
}

/// A broker's address, parsed from `mqtt://[user@]host[:port]` (port 1883) or `mqtts://...` (TLS, 8883).
public struct BrokerAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var usesTLS: Bool
    public var username: String?

    public init(host: String, port: Int? = nil, usesTLS: Bool = false, username: String? = nil) {
        self.host = host
        self.port = port ?? (usesTLS ? 8883 : 1883)
        self.usesTLS = usesTLS
        self.username = username
    }

    /// Parses a broker URL. An IPv6 address goes in brackets (`mqtt://[::1]:1883`); a password, a path
    /// or a query is refused with the reason.
    public init(url: String) throws(MQTTConfigurationError) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            (tls, rest) = (false, url.dropFirst(7))
        } else if url.hasPrefix("mqtts://") {
            (tls, rest) = (true, url.dropFirst(8))
        } else {
            throw .badScheme(url: url)
        }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        if authority.contains("/") || authority.contains("?") || authority.contains("#") { throw .pathInURL(url: url) }
        var username: String?
        if let at = authority.lastIndex(of: "@") {
            let user = authority[..<at]
            if user.contains(":") { throw .passwordInURL(url: url) }
            guard !user.isEmpty else { throw .badUser(url: url) }
            username = String(user)
            authority = authority[authority.index(after: at)...]
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .badHost(url: url, host: String(authority)) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .badHost(url: url, host: String(authority)) }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .badHost(url: url, host: String(host))
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "." || c == "_") }
            if !host.isEmpty && !host.allSatisfy(allowed) { throw .badHost(url: url, host: String(host)) }
        }
        guard !host.isEmpty else { throw .missingHost(url: url) }
        var port: Int?
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isNumber) else {
                throw .badPort(url: url, port: String(portText))
            }
            port = value
        }
        self.init(host: String(host), port: port, usesTLS: tls, username: username)
    }

    /// The URL again, without any secret (there is none in it).
    public var description: String {
        let user = username.map { $0 + "@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return (usesTLS ? "mqtts://" : "mqtt://") + user + shownHost + ":\(port)"
    }
}

/// A device's name in topics (`gnss-hat/DEVICE/...`): letters, digits, `-`, `_` and `.`, as host names
/// are, so it needs no escaping in a topic, a client id or a Home Assistant object id.
public struct DeviceName: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(_ name: String) throws(MQTTConfigurationError) {
        guard !name.isEmpty else { throw .badDeviceName(name, reason: "it is empty") }
        guard name.utf8.count <= 64 else { throw .badDeviceName(name, reason: "it is longer than 64 characters") }
        let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_" || c == ".") }
        guard name.allSatisfy(allowed) else {
            throw .badDeviceName(name, reason: "only letters, digits, '-', '_' and '.' may appear in a topic level")
        }
        rawValue = name
    }

    /// This machine's host name (`gethostname`), up to its first dot: the default device name.
    public static func hostName() throws(MQTTConfigurationError) -> DeviceName {
        let full: String
        do throws(SystemError) {
            full = try Host.name()
        } catch {
            throw .badDeviceName("", reason: "\(error)")
        }
        return try DeviceName(String(full.split(separator: ".", omittingEmptySubsequences: false).first ?? ""))
    }

    public var description: String { rawValue }
}

/// Everything a ``MQTTClient`` needs to reach a broker.
public struct MQTTConfiguration: Sendable {
    public var broker: BrokerAddress
    /// Sent with the user name from the URL (`mosquitto_username_pw_set`); read from a file by
    /// ``readPassword(from:)``, never taken from the command line.
    public var password: String?
    /// PEM file of the certificate authorities a TLS broker's certificate must chain to
    /// (`mosquitto_tls_set`); `nil` with `mqtts://` trusts the system's authorities (`MOSQ_OPT_TLS_USE_OS_CERTS`).
    public var caFile: String?
    /// The client identifier: unique per device, so a second process for the same device replaces the first.
    public var clientID: String
    public var keepAlive: Duration
    public var protocolVersion: MQTTProtocolVersion
    /// Published by the broker when the connection dies without a DISCONNECT (`mosquitto_will_set`).
    public var will: OutgoingMessage?
    public var reconnect: ReconnectPolicy.Configuration

    public init(
        broker: BrokerAddress, password: String? = nil, caFile: String? = nil, clientID: String,
        keepAlive: Duration = .seconds(30), protocolVersion: MQTTProtocolVersion = .v5, will: OutgoingMessage? = nil,
        reconnect: ReconnectPolicy.Configuration = .init()
    ) {
        self.broker = broker
        self.password = password
        self.caFile = caFile
        self.clientID = clientID
        self.keepAlive = keepAlive
        self.protocolVersion = protocolVersion
        self.will = will
        self.reconnect = reconnect
    }

    /// Checks what can be checked before connecting: a password has a user, the CA file is readable.
    public func validate() throws(MQTTConfigurationError) {
        if password != nil && broker.username == nil { throw .passwordWithoutUser }
        if let caFile { _ = try readCredentialFile(caFile, role: "CA file") }
    }

    /// Reads a password file: its first line, without the line end. A missing, unreadable or empty
    /// file is an error naming the path (never the contents).
    public static func readPassword(from path: String) throws(MQTTConfigurationError) -> String {
        let bytes = try readCredentialFile(path, role: "password file")
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        guard !line.isEmpty else { throw .emptyPasswordFile(path: path) }
        return String(decoding: line, as: UTF8.self)
    }
}

/// A small file's first 1 MiB (a password or a CA bundle): LinuxSystem's `open` and `read`, `EINTR`
/// retried.
func readCredentialFile(_ path: String, role: String) throws(MQTTConfigurationError) -> [UInt8] {
    do throws(FileError) {
        return try FileSystem.contents(of: path, upTo: 1 << 20)
    } catch {
        throw .unreadableFile(role: role, path: path, error.failure.errno ?? .ioError)
    }
}
