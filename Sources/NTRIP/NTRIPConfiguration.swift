// How a client reaches its caster and how patiently: the URL, the password file, the protocol
// version, the GGA interval, the silence that counts as a dead link, the back-off, and the linger.
import LinuxSystem

/// The NTRIP protocol version a client speaks.
public enum NTRIPVersion: Sendable, Hashable, CustomStringConvertible {
    /// NTRIP 1: `GET /MOUNT HTTP/1.0`, answered `ICY 200 OK`; the GGA goes in the stream.
    case v1
    /// NTRIP 2: `GET /MOUNT HTTP/1.1` with `Ntrip-Version: Ntrip/2.0`, answered `HTTP/1.1 200 OK`, often
    /// chunked; the GGA goes in an `Ntrip-GGA` header too. Casters that speak only NTRIP 1 answer it
    /// with `ICY 200 OK`, which the client takes as well.
    case v2

    public var description: String { self == .v1 ? "NTRIP 1" : "NTRIP 2" }
}

/// When to try again after a failure: ``initialDelay`` doubling with every failure in a row up to
/// ``maximumDelay`` (10 s, 20 s, 40 s, ... 300 s by default, never faster: casters such as RTK2go ban
/// clients that reconnect quickly). A stream that delivered RTCM for ``stableAfter`` counts as good:
/// the next failure starts again from ``initialDelay``.
public struct NTRIPBackoff: Sendable, Hashable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var stableAfter: Duration

    public init(initialDelay: Duration = .seconds(10), maximumDelay: Duration = .seconds(300),
                stableAfter: Duration = .seconds(60)) {
        self.initialDelay = max(initialDelay, .zero)
        self.maximumDelay = max(maximumDelay, initialDelay)
        self.stableAfter = stableAfter
    }

    /// The wait after `failures` failures in a row (1 or more).
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(failures, 1) {
            delay = delay * 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}

/// Everything an ``NTRIPClient`` needs to know.
public struct NTRIPConfiguration: Sendable {
    /// The caster, the user and the mountpoint (none: the nearest RTCM 3 stream of the sourcetable).
    public var caster: CasterURL
    /// A file whose first line is the password (read at every attempt, so a fixed file is picked up
    /// without a restart); nil: no authentication.
    public var passwordFile: String?
    public var version: NTRIPVersion
    /// Goes into `User-Agent: NTRIP gnss-hat/VERSION` (the CLI passes `GNSSHatVersion.current`).
    public var softwareVersion: String
    /// How often the client's position goes to the caster as a GGA sentence (right after the 200
    /// answer, then at this interval); nil: never (a single-base mountpoint does not need it).
    public var ggaInterval: Duration?
    /// No RTCM frame for this long (from the attempt's start, or the last frame): the link is dead.
    public var dataTimeout: Duration
    public var backoff: NTRIPBackoff
    /// How long the connection stays up after the last subscriber leaves (see ``SignalConfiguration``):
    /// 10 s by default, enough for a demand that comes straight back (and no reconnect faster than a
    /// caster's rules allow), short beside a duty cycle's minutes off, when nothing uses the corrections.
    public var linger: Duration
    /// The CA certificates (PEM) a TLS caster's certificate must chain to; nil: the system's store.
    public var caFile: String?

    public init(
        caster: CasterURL, passwordFile: String? = nil, version: NTRIPVersion = .v2, softwareVersion: String,
        ggaInterval: Duration? = .seconds(10), dataTimeout: Duration = .seconds(15), backoff: NTRIPBackoff = .init(),
        linger: Duration = .seconds(10), caFile: String? = nil
    ) {
        self.caster = caster
        self.passwordFile = passwordFile
        self.version = version
        self.softwareVersion = softwareVersion
        self.ggaInterval = ggaInterval
        self.dataTimeout = dataTimeout
        self.backoff = backoff
        self.linger = linger
        self.caFile = caFile
    }

    /// The same from an `ntrip://` or `ntrip+tls://` URL.
    public init(
        url: String, passwordFile: String? = nil, version: NTRIPVersion = .v2, softwareVersion: String
    ) throws(NTRIPConfigurationError) {
        self.init(caster: try CasterURL(parsing: url), passwordFile: passwordFile, version: version,
                  softwareVersion: softwareVersion)
    }

    /// Whether connecting must wait for a position: to send a GGA at once, or to choose the nearest
    /// mountpoint.
    public var needsPosition: Bool { ggaInterval != nil || caster.mountpoint == nil }

    /// The credentials for Basic authentication, the password read from the first line of the
    /// password file now (`open`, `read`); nil without a user.
    public func credentials() throws(NTRIPConfigurationError) -> (user: String, password: String)? {
        guard let user = caster.user else {
            if passwordFile != nil { throw .credentials("a password file but no USER@ in the URL") }
            return nil
        }
        guard let passwordFile else { return (user, "") }
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.contents(of: passwordFile)
        } catch {
            throw .passwordFile(path: passwordFile, reason: "\(error)")
        }
        let firstLine = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
            .first ?? []
        let password = String(decoding: firstLine, as: UTF8.self).trimmingCharacters(in: "\r")
        guard !password.isEmpty else { throw .passwordFile(path: passwordFile, reason: "its first line is empty") }
        return (user, password)
    }
}
