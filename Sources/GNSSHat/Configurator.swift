// Configuration on every power-on: u-blox through MON-VER then CFG-VALSET (protocol 27+) or
// CFG-RATE and CFG-MSG (older), MTK through PMTK314 and PMTK220. Every command waits for its
// acknowledgement with a time-out and is sent again up to the board's number of attempts.
import GNSSProtocol

struct Configurator {
    let session: HardwareSession
    let transport: any Transport

    var board: Board { session.board }
    var timeout: Duration { board.configuration.ackTimeout }
    var attempts: Int { board.configuration.attempts }

    /// The first u-blox protocol version configured with CFG-VALSET.
    static let valsetProtocol = 27.0

    func configure() async throws {
        if board.chip.family.isUBlox {
            try await configureUBlox()
        } else {
            try await configureMTK()
        }
    }

    /// Milliseconds in a duration (rounded down): the unit of CFG-RATE, CFG-VALSET's rate and PMTK220.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    // MARK: - u-blox

    /// The configuration keys of the messages to enable, for the port in use; with `rtcm`, the RTCM 3
    /// input on that port and RXM-RTCM output on it (each message's use confirmed).
    static func valsetItems(period: Duration, i2c: Bool, rtcm: Bool = false) -> [UBXConfigItem] {
        let milliseconds = UInt64(clamping: Self.milliseconds(period))
        var rtcmItems: [UBXConfigItem] = []
        if rtcm {
            // CFG-I2CINPROT-RTCM3X / CFG-UART1INPROT-RTCM3X (L) and CFG-MSGOUT-UBX_RXM_RTCM_I2C / _UART1 (U1),
            // checked against pyubx2's configuration database.
            rtcmItems = [
                UBXConfigItem(key: i2c ? UBXConfigItem.i2cInputRTCM3 : UBXConfigItem.uart1InputRTCM3, value: 1),
                UBXConfigItem(key: i2c ? UBXConfigItem.rxmRTCMOutputI2C : UBXConfigItem.rxmRTCMOutputUART1, value: 1),
            ]
        }
        return rtcmItems + [
            UBXConfigItem(key: UBXConfigItem.rateMeas, value: milliseconds),
            // CFG-MSGOUT-UBX_NAV_PVT, _NAV_SAT, _NAV_TIMEUTC on I2C or UART1 (checked against
            // pyubx2's configuration database).
            UBXConfigItem(key: i2c ? 0x2091_0006 : 0x2091_0007, value: 1),
            UBXConfigItem(key: i2c ? 0x2091_0015 : 0x2091_0016, value: 1),
            UBXConfigItem(key: i2c ? 0x2091_005B : 0x2091_005C, value: 1),
        ]
    }

    func configureUBlox() async throws {
        let reply = try await request(UBX.poll(.monVER), named: "MON-VER poll") { message in
            if case .ubx(.monVER) = message { return true }
            return false
        }
        var version: Double?
        if case .ubx(.monVER(let monver)) = reply { version = monver.protocolVersion }
        // Without PROTVER (old firmware prints none) the chip family decides.
        let useValset = version.map { $0 >= Self.valsetProtocol } ?? (board.chip.family != .ubloxGen8)
        var i2c = false
        if case .i2c = board.link { i2c = true }
        if useValset {
            let rtcm = board.corrections.rtcm3
            let valset = UBXCfgValSet(
                layers: .ram, items: Self.valsetItems(period: session.period, i2c: i2c, rtcm: rtcm))
            try await command(valset.frame, named: "CFG-VALSET", acknowledging: .cfgVALSET)
        } else {
            let milliseconds = Self.milliseconds(session.period)
            let rate = UBXCfgRate(measRate: UInt16(clamping: milliseconds), navRate: 1, timeRef: 1)
            try await command(rate.frame, named: "CFG-RATE", acknowledging: .cfgRATE)
            for message in [UBX.MessageID.navPVT, .navSAT, .navTimeUTC] {
                // The 3-byte form sets the rate on the port the command arrives on.
                let enable = UBXCfgMsg(message: message, rates: [1])
                try await command(enable.frame, named: "CFG-MSG \(message)", acknowledging: .cfgMSG)
            }
        }
    }

    /// Sends a UBX command and waits for its ACK-ACK; ACK-NAK throws at once.
    func command(_ frame: [UInt8], named name: String, acknowledging id: UBX.MessageID) async throws {
        let reply = try await request(frame, named: name) { message in
            switch message {
            case .ubx(.ack(let ack)), .ubx(.nak(let ack)): ack.acknowledged == id
            default: false
            }
        }
        if case .ubx(.nak) = reply {
            throw ReceiverError.configurationRejected(command: name, detail: "UBX-ACK-NAK")
        }
    }

    /// Sends `bytes` and returns the first reply that matches, sending again after each
    /// time-out up to the board's number of attempts.
    func request(
        _ bytes: [UInt8], named name: String, reply matches: @escaping @Sendable (Message) -> Bool
    ) async throws -> Message {
        for _ in 0..<attempts {
            let mark = session.log.mark
            try await session.send(bytes, through: transport)
            if let reply = try await session.firstMessage(after: mark, within: timeout, where: matches) { return reply }
        }
        throw ReceiverError.configurationTimedOut(command: name, attempts: attempts)
    }

    // MARK: - MTK

    func configureMTK() async throws {
        try await mtkCommand(PMTK.setOutput(PMTK.SentenceRates(gll: 0, rmc: 1, vtg: 1, gga: 1, gsa: 1, gsv: 1)),
                             number: 314)
        let milliseconds = Self.milliseconds(session.period)
        try await mtkCommand(PMTK.fixInterval(milliseconds: Int(milliseconds)), number: 220)
    }

    /// Sends a PMTK command and checks its `$PMTK001,number,flag` (3 = success).
    func mtkCommand(_ bytes: [UInt8], number: Int) async throws {
        let reply = try await request(bytes, named: "PMTK\(number)") { message in
            if case .nmea(.pmtk(.ack(let command, _))) = message { return command == number }
            return false
        }
        if case .nmea(.pmtk(.ack(_, let flag))) = reply, flag != 3 {
            let meaning = ["invalid command", "unsupported command", "action failed"]
            let detail = "PMTK001 flag \(flag)" + ((0..<3).contains(flag) ? ": \(meaning[flag])" : "")
            throw ReceiverError.configurationRejected(command: "PMTK\(number)", detail: detail)
        }
    }
}
