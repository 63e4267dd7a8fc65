// Why a client cannot start, an attempt failed, or the caster refused: each says its cause in words a
// user can act on (the log line of a failed attempt is this description and the retry delay).
public import LinuxSystem

/// A configuration that cannot work: a URL that does not parse, a password file that cannot be read.
public enum NTRIPConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalidURL(String, reason: String)
    /// The password file cannot be read or is empty.
    case passwordFile(path: String, reason: String)
    /// A user without a password file, or a password file without a user.
    case credentials(String)

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid NTRIP URL '\(url)': \(reason)"
        case .passwordFile(let path, let reason): "cannot read the NTRIP password file \(path): \(reason)"
        case .credentials(let reason): "NTRIP credentials: \(reason)"
        }
    }
}

/// Why an attempt to reach a caster failed, or what the caster said instead of corrections.
public enum NTRIPError: Error, Sendable, CustomStringConvertible {
    /// The caster's name has no address (`getaddrinfo`).
    case unresolved(SocketError)
    /// The TCP connection failed (refused, no route).
    case connectFailed(SocketError)
    /// A read or write on the connection failed.
    case io(SocketError)
    /// The TLS handshake, the certificate check or TLS I/O failed.
    case tls(TLSError)
    /// The answer is not NTRIP or HTTP.
    case malformedAnswer(NTRIPResponseError)
    /// 401: the caster refused the user or the password.
    case unauthorized(user: String?, mountpoint: String, statusLine: String)
    /// 403, or a caster message that says so: this client is banned (for reconnecting too fast, or
    /// connecting without sending data).
    case banned(String)
    /// Any other refusal: the status line (404, 500, `ERROR - ...`).
    case refused(String)
    /// A sourcetable came where RTCM was expected: the caster has no such mountpoint.
    case unknownMountpoint(String, available: [String])
    /// The sourcetable names no RTCM 3 stream with a position to choose from.
    case noStreamToChoose(available: [String])
    /// The caster closed the connection.
    case closedByCaster
    /// No RTCM frame for this long: the link is dead.
    case silent(Duration)
    /// The password file (read at every attempt) cannot be read.
    case configuration(NTRIPConfigurationError)
    /// The link's eventfd or thread could not be made.
    case system(SystemError)

    public var description: String {
        switch self {
        case .unresolved(let error): "\(error)"
        case .connectFailed(let error): "cannot connect: \(error)"
        case .io(let error): "connection failed: \(error)"
        case .tls(let error): "\(error)"
        case .malformedAnswer(let error): "the caster's answer is broken: \(error)"
        case .unauthorized(let user, let mountpoint, let statusLine):
            "the caster refused user '\(user ?? "")' for mountpoint \(mountpoint) (\(statusLine)): "
                + "check the user and the password file"
        case .banned(let message): "the caster banned this client (\(message))"
        case .refused(let statusLine): "the caster refused the request (\(statusLine))"
        case .unknownMountpoint(let mountpoint, let available):
            "the caster has no mountpoint \(mountpoint) (it sent its sourcetable instead); its mountpoints: "
                + (available.isEmpty ? "none" : available.joined(separator: ", "))
        case .noStreamToChoose(let available):
            "no RTCM 3 mountpoint with a position in the sourcetable to choose from (mountpoints: "
                + (available.isEmpty ? "none" : available.joined(separator: ", ")) + ")"
        case .closedByCaster: "the caster closed the connection"
        case .silent(let timeout): "no RTCM data for \(timeout.seconds) s: the link is dead"
        case .configuration(let error): "\(error)"
        case .system(let error): "cannot start the connection: \(error)"
        }
    }

    /// Whether the caster refused this client (a wrong password, a ban, an unknown mountpoint), as
    /// against a network failure.
    public var isRefusal: Bool {
        switch self {
        case .unauthorized, .banned, .refused, .unknownMountpoint, .noStreamToChoose: true
        default: false
        }
    }
}

extension Duration {
    /// Whole seconds when whole, else with a decimal: `10`, `2.5`.
    var seconds: String {
        let (whole, fraction) = components
        guard fraction != 0 else { return "\(whole)" }
        let tenths = Int64((Double(fraction) / 1e17).rounded())
        return tenths == 10 ? "\(whole + 1)" : "\(whole).\(tenths)"
    }
}
