// `gnss-hat info`: which receiver sits on the board, and how it talks.
import GNSSHat
import LinuxSystem
import PiHardware

enum InfoCommand: Subcommand {
    static let spec = CommandSpec(
        name: "info",
        summary: "detect the board's receiver: chip, firmware, protocol version, link speed",
        options: [.flag("json", "one JSON object instead of text")],
        details: """
            Powers the receiver on (read-only: no configuration), finds its speed on a UART (the board's, then
            the common ones), asks for its version (u-blox MON-VER, MTK PMTK605), reports, and powers it off.
            On I2C an SMBus quick write (libi2c) first checks that the address answers.
            example: gnss-hat info --board sparkfun-gps-rtk2
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let board = try BoardChoice.load(arguments)
        var lines: [String] = ["board: \(board.name) (\(board.title))"]
        if case .i2c(let i2c) = board.link {
            let answered = try probe(i2c)
            lines.append("I2C: address 0x\(String(i2c.address, radix: 16)) on \(i2c.path) "
                + (answered ? "acknowledges (SMBus quick write)" : "does not acknowledge yet"))
            if !answered && board.gpio.enable == nil && board.gpio.standby == nil {
                throw CommandFailure(.hardwareUnavailable, "nothing acknowledges address 0x"
                    + String(i2c.address, radix: 16) + " on \(i2c.path) (wiring? i2cdetect -y \(i2c.bus))")
            }
        }
        let receiver = try Receiver(
            board: board, options: ReceiverOptions(linger: try arguments.seconds("linger") ?? .zero, configure: false),
            hardware: CommandHardware.providers())
        let identity: ReceiverIdentity
        do {
            identity = try await receiver.identify()
        } catch {
            await receiver.shutdown()
            throw error
        }
        await receiver.shutdown()
        if arguments.flag("json") {
            StandardStream.output.write(json(identity, board: board) + "\n")
            return
        }
        lines.append("device: \(identity.device)")
        lines.append("link: " + (identity.speed.map { "\($0) baud" } ?? "\(board.link)"))
        lines.append("chip: \(identity.family)" + (identity.model.map { " \($0)" } ?? ""))
        lines.append("firmware: \(identity.firmware ?? "unknown")")
        if let hardware = identity.hardware { lines.append("hardware: \(hardware)") }
        if let version = identity.protocolVersion { lines.append("protocol version: \(version)") }
        if !identity.answeredVersionQuery {
            lines.append("note: the receiver sent valid frames but did not answer the version query")
        }
        if !identity.talkers.isEmpty { lines.append("NMEA talkers: " + identity.talkers.joined(separator: " ")) }
        StandardStream.output.write(lines.joined(separator: "\n") + "\n")
    }

    /// The SMBus quick-write probe of the receiver's address.
    static func probe(_ i2c: Board.I2C) throws -> Bool {
        let bus = try I2CAdapter(bus: i2c.bus)
        defer { bus.close() }
        return try bus.probe(address: i2c.address)
    }

    static func json(_ identity: ReceiverIdentity, board: Board) -> String {
        func text(_ value: String?) -> String {
            value.map { "\"" + WatchSession.escape($0) + "\"" } ?? "null"
        }
        let fields = [
            "\"class\":\"INFO\"",
            "\"board\":\(text(board.name))",
            "\"device\":\(text(identity.device))",
            "\"speed\":" + (identity.speed.map(String.init) ?? "null"),
            "\"family\":\(text(identity.family.rawValue))",
            "\"model\":\(text(identity.model))",
            "\"firmware\":\(text(identity.firmware))",
            "\"hardware\":\(text(identity.hardware))",
            "\"protocolVersion\":" + (identity.protocolVersion.map { "\($0)" } ?? "null"),
            "\"answered\":\(identity.answeredVersionQuery)",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }
}
