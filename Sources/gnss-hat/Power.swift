// `gnss-hat power on|off|status`: the board's power strategies by hand, for bring-up.
import GNSSHat
import LinuxSystem

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
            On a simulator board the simulated hat exists only inside this process: 'on' and 'off' drive its
            simulated lines and report what the simulated receiver does; there is no hardware line to show.
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
        // Signals first, so no thread the hardware starts (a simulated hat's) dies of SIGTERM.
        let interruption = try Interruption()
        let hardware = try CommandHardware.providers().hardware(for: board, clock: TimerThreadClock())
        do {
            try await run(action, on: hardware, hold: hold, interruption: interruption)
        } catch {
            await hardware.shutdown()
            throw error
        }
        await hardware.shutdown()
    }

    private static func run(_ action: String, on hardware: any ReceiverHardware, hold: Duration?,
                            interruption: Interruption) async throws {
        if action == "status" {
            let status = hardware.status()
            StandardStream.output.write(status.lines.joined(separator: "\n") + "\n")
            if let unavailable = status.unavailable {
                throw CommandFailure(.hardwareUnavailable, "GPIO not available: \(unavailable)")
            }
            return
        }
        let power = BoardPower(on: hardware)
        defer { power.release() }
        let on = action == "on"
        let steps = try await (on ? power.switchOn() : power.switchOff())
        report(hardware.board, steps: steps, power: power, notes: await hardware.powerReport(afterPowerOn: on))
        if on {
            StandardStream.output.write(hold.map { "holding the lines for \(describe($0))\n" }
                ?? "holding the lines until Ctrl-C (a released line falls back to its pull resistor)\n")
            await interruption.wait(limit: hold)
        }
    }

    static func report(_ board: Board, steps: [String], power: BoardPower, notes: [String]) {
        var lines = steps.isEmpty ? ["\(board.name): no power strategy to run"] : steps
        for line in power.outputLines() {
            lines.append("line \(line.name): " + (line.asserted.map { $0 ? "asserted" : "inactive" } ?? "unreadable")
                + " (read back)")
        }
        StandardStream.output.write((lines + notes).joined(separator: "\n") + "\n")
    }

    static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}
