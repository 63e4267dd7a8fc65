// `gnss-hat power on|off|status`: the board's power strategies by hand, for bring-up.
import GNSSHat
import LinuxSystem
import PiHardware

enum PowerCommand: Subcommand {
    static let spec = CommandSpec(
        name: "power",
        summary: "switch the board's receiver on or off by hand, or show its lines (bring-up)",
        arguments: "on|off|status",
        argumentCount: 1...1,
        options: [],
        details: """
            on      runs the board's power-on actions in order (enable line, standby line, force-on pulse,
                    wake-up commands) and holds the lines until Ctrl-C or SIGTERM, or for --linger SECONDS;
                    a released line falls back to its pull resistor, so the hold is what keeps it on.
            off     runs the power-off actions in reverse order (enable line inactive, backup or standby
                    command) and exits.
            status  shows each GPIO line of the board (who holds it) and whether the link's device exists.
            On a simulator board the simulated hat exists only inside this process: 'on' drives its simulated
            enable line and reports what the simulated receiver does; there is no hardware line to show.
            examples:
              gnss-hat power status --board uputronics-gps-rtc
              gnss-hat power on --board ./my-hat.json --linger 30
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let action = arguments.arguments[0]
        guard ["on", "off", "status"].contains(action) else {
            throw UsageError("expected on, off or status, not '\(action)'")
        }
        let hold = try arguments.seconds("linger")
        let board = try BoardChoice.load(arguments)
        if case .simulator = board.link {
            try await simulated(action, board: board, hold: hold)
            return
        }
        if action == "status" {
            try status(board)
            return
        }
        let interruption = try Interruption()
        let power = BoardPower(board: board, hardware: .system())
        defer { power.release() }
        let steps = try await (action == "on" ? power.switchOn() : power.switchOff())
        report(board, steps: steps, power: power)
        if action == "on" {
            StandardStream.output.write(hold.map { "holding the lines for \(describe($0))\n" }
                ?? "holding the lines until Ctrl-C (a released line falls back to its pull resistor)\n")
            await interruption.wait(limit: hold)
        }
    }

    static func report(_ board: Board, steps: [String], power: BoardPower) {
        var lines = steps.isEmpty ? ["\(board.name): no power strategy to run"] : steps
        for line in power.outputLines() {
            lines.append("line \(line.name): " + (line.asserted.map { $0 ? "asserted" : "inactive" } ?? "unreadable")
                + " (read back)")
        }
        StandardStream.output.write(lines.joined(separator: "\n") + "\n")
    }

    static func status(_ board: Board) throws {
        var lines = ["\(board.name): \(board.title)", "link: \(board.link)"]
        let device: String? = switch board.link {
        case .uart(let uart): uart.path
        case .i2c(let i2c): i2c.path
        case .simulator: nil
        }
        if let device {
            lines.append("  \(device): " + (FileSystem.exists(device) ? "present" : "missing"))
        }
        lines.append("power strategies: " + board.power.strategies.map(\.description).joined(separator: ", "))
        let roles: [(String, Board.Line?)] = [
            ("enable", board.gpio.enable), ("standby", board.gpio.standby), ("force-on", board.gpio.forceOn),
            ("reset", board.gpio.reset), ("EXTINT", board.gpio.extint), ("PPS", board.gpio.pps),
        ]
        let wired = roles.compactMap { role, line in line.map { (role, $0) } }
        var unavailable: (any Error)?
        if wired.isEmpty {
            lines.append("GPIO: none wired (power is switched by commands to the receiver)")
        } else {
            do {
                let chip = try GPIOChip.open(board.gpio.chip)
                defer { chip.close() }
                lines.append("GPIO chip: \(chip.name)")
                for (role, line) in wired {
                    do {
                        let info = try chip.lineInfo(line.line)
                        let holder = info.isUsed ? "held by \(info.consumer ?? "an unnamed consumer")" : "free"
                        lines.append("  \(role): \(line) = offset \(info.offset)"
                            + (info.name.map { " (\($0))" } ?? "") + ", \(holder)")
                    } catch {
                        lines.append("  \(role): \(line): \(error)")
                        unavailable = unavailable ?? error
                    }
                }
            } catch {
                lines.append("GPIO chip \(board.gpio.chip): \(error)")
                unavailable = error
            }
        }
        if board.power.strategies.contains(where: { ![.gpioEnable, .standbyLine, .forceOnPulse].contains($0) }) {
            lines.append("software power state: not readable without talking to the receiver (gnss-hat info does)")
        }
        StandardStream.output.write(lines.joined(separator: "\n") + "\n")
        if let unavailable { throw CommandFailure(.hardwareUnavailable, "GPIO not available: \(unavailable)") }
    }

    /// The simulator: no hardware, so say so, and for `on`/`off` drive the simulated hat this
    /// process creates and report what its receiver does.
    static func simulated(_ action: String, board: Board, hold: Duration?) async throws {
        let note = "\(board.name) is simulated: its enable \(board.gpio.enable.map(\.description) ?? "(none)") "
            + "and receiver exist only inside a gnss-hat process; no hardware line is touched."
        if action == "status" {
            StandardStream.output.write(note + "\n"
                + "For a simulated receiver other programs can open, run 'gnss-hat simulate'.\n")
            return
        }
        let clock = ContinuousClock()
        let hat = try SimulatedHat(board: board, clock: clock)
        let power = BoardPower(board: board, hardware: hat.hardware, clock: clock)
        var lines = [note]
        lines += try await power.switchOn()
        // Let the simulated receiver boot, so its mode says what the power-on did.
        let boot = board.simulation?.boot ?? .milliseconds(300)
        try await Task.sleep(for: boot + .milliseconds(200))
        lines.append("simulated receiver: \(hat.receiver.mode) after power-on")
        if action == "off" {
            lines += try await power.switchOff()
            try await Task.sleep(for: .milliseconds(100))
            lines.append("simulated receiver: \(hat.receiver.mode) after power-off")
        } else {
            lines.append("(the simulated hat goes away when this command ends)")
        }
        power.release()
        await hat.shutdown()
        StandardStream.output.write(lines.joined(separator: "\n") + "\n")
    }

    static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}
