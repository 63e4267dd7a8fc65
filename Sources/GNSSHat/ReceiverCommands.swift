// Talking to a running receiver from outside the power sequence: send a command, wait for its
// reply, identify the chip, read back the lines the session drives. For bring-up tools (gnss-hat
// info, ttff) and users who need a message the Receiver does not configure.
public import GNSSProtocol
import LinuxSystem
import Signals

/// What a receiver says about itself.
public struct ReceiverIdentity: Sendable, Hashable {
    /// The board's chip family (what the board file says).
    public var family: Board.ChipFamily
    /// The module, from MON-VER's `MOD=` or the MTK firmware reply, else the board's.
    public var model: String?
    /// The firmware: MON-VER's software version and `FWVER=`, or the MTK release string.
    public var firmware: String?
    /// The hardware version (MON-VER).
    public var hardware: String?
    /// The u-blox protocol version (`PROTVER=`).
    public var protocolVersion: Double?
    /// MON-VER's extension strings, as sent.
    public var extensions: [String]
    /// The UART speed the receiver answered at (nil on I2C).
    public var speed: Int?
    /// The device the receiver was read from.
    public var device: String
    /// The NMEA talkers seen (GP, GN, GL, ...), sorted.
    public var talkers: [String]
    /// Whether the receiver answered the version query (MON-VER or PMTK605).
    public var answeredVersionQuery: Bool

    public init(family: Board.ChipFamily, model: String? = nil, firmware: String? = nil, hardware: String? = nil,
                protocolVersion: Double? = nil, extensions: [String] = [], speed: Int? = nil, device: String,
                talkers: [String] = [], answeredVersionQuery: Bool = false) {
        self.family = family
        self.model = model
        self.firmware = firmware
        self.hardware = hardware
        self.protocolVersion = protocolVersion
        self.extensions = extensions
        self.speed = speed
        self.device = device
        self.talkers = talkers
        self.answeredVersionQuery = answeredVersionQuery
    }
}

extension Receiver {
    /// Sends `bytes` to the receiver of the running session. Throws `ReceiverError.notRunning`
    /// when no session runs (subscribe first).
    public func send(_ bytes: [UInt8]) async throws {
        guard let transport = session.currentTransport else { throw ReceiverError.notRunning }
        try await session.send(bytes, through: transport)
    }

    /// Sends `bytes` and returns the first message after them that `matches`, or nil when none
    /// came within `timeout` (on the receiver's clock).
    public func request(
        _ bytes: [UInt8], within timeout: Duration, where matches: @escaping @Sendable (Message) -> Bool
    ) async throws -> Message? {
        guard let transport = session.currentTransport else { throw ReceiverError.notRunning }
        let mark = session.log.mark
        try await session.send(bytes, through: transport)
        return try await session.log.first(after: mark, within: timeout, where: matches)
    }

    /// The output lines the session holds (enable, standby, force-on, reset, EXTINT) and their
    /// logical values read back from the GPIO driver (`true`: the line's function asserted;
    /// nil: the read failed). Lines are held from the first power-on to `shutdown()`.
    public func outputLines() -> [(name: String, asserted: Bool?)] {
        session.lines.levels().map { (name: $0.role.description, asserted: $0.asserted) }
    }

    /// Identifies the receiver: powers it on (a subscription for the duration), asks for its
    /// version (u-blox MON-VER, MTK PMTK605) up to `attempts` times, each waiting `timeout`,
    /// and reports what it said with the speed it answered at. Throws the power-on's
    /// `ReceiverError` when the receiver does not come up.
    public func identify(timeout: Duration = .seconds(1), attempts: Int = 3) async throws -> ReceiverIdentity {
        let talkers = Lock<Set<String>>([])
        let failure = Lock<(any Error)?>(nil)
        let token = messages.subscribe(onValue: { message in
            if case .nmea(let sentence) = message, let talker = sentence.talker {
                talkers.withLock { _ = $0.insert("\(talker)") }
            }
        }, onCompletion: { completion in
            if case .failure(let error) = completion { failure.withLock { $0 = error } }
        })
        defer { token.cancel() }
        await waitForPower { $0 == .on || $0 == .failed }
        if let error = failure.withLock({ $0 }) { throw error }
        if powerState == .failed { throw ReceiverError.notRunning }
        var identity = ReceiverIdentity(family: board.chip.family, model: board.chip.model, device: devicePath)
        let family = board.chip.family
        let query = family.isUBlox ? UBX.poll(.monVER) : PMTK.queryFirmware
        for _ in 0..<max(attempts, 1) {
            let reply = try await request(query, within: timeout) { message in
                switch message {
                case .ubx(.monVER): family.isUBlox
                case .nmea(.pmtk(.firmware)): !family.isUBlox
                default: false
                }
            }
            guard let reply else { continue }
            identity.answeredVersionQuery = true
            switch reply {
            case .ubx(.monVER(let version)):
                identity.firmware = version.softwareVersion
                identity.hardware = version.hardwareVersion
                identity.protocolVersion = version.protocolVersion
                identity.extensions = version.extensions
                for text in version.extensions {
                    if text.hasPrefix("MOD=") { identity.model = String(text.dropFirst(4)) }
                    if text.hasPrefix("FWVER=") { identity.firmware = version.softwareVersion + " " + text }
                }
            case .nmea(.pmtk(.firmware(let release, _, let model, _))):
                identity.firmware = release
                if !model.isEmpty { identity.model = model }
            default: break
            }
            break
        }
        identity.speed = statistics.linkSpeed
        identity.talkers = talkers.withLock { $0 }.sorted()
        return identity
    }
}
