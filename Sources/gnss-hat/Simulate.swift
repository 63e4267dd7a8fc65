// `gnss-hat simulate`: the simulated receiver on a pseudo-terminal, for other programs (gpsd,
// gpspipe, minicom) to open as if it were a hat's serial port.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import LinuxSystem

enum SimulateCommand: Subcommand {
    static let spec = CommandSpec(
        name: "simulate",
        summary: "a simulated receiver on a pseudo-terminal; prints its path, runs until Ctrl-C or SIGTERM",
        options: [
            .value("duration", "SECONDS", "stop after this many seconds (default: until SIGINT or SIGTERM)"),
        ],
        details: """
            The simulated enable line is switched on at once, so the receiver boots and cold-starts; it answers
            UBX (MON-VER, CFG-*, RXM-PMREQ) and NMEA like the board's chip. The path goes to standard output.
            --board must be a simulator board. example:
              gpsd -N -n $(gnss-hat simulate | head -n 1)    # or: gnss-hat simulate & gpsd ... /dev/pts/N
            """
    )

    static func run(_ arguments: ParsedArguments) async throws {
        let duration = try arguments.seconds("duration")
        let board = try BoardChoice.load(arguments)
        guard SimulatedHardware().serves(board) else {
            throw CommandFailure(.configuration, "board \(board.name) is real hardware (\(board.link)); "
                + "simulate needs a simulator board, e.g. --board simulator")
        }
        // Signals first, so no thread the hat starts dies of SIGTERM.
        let interruption = try Interruption()
        let clock = TimerThreadClock()
        let now = GNSSTime(nanosecondsSinceEpoch: WallClock.now())
        let hat = try SimulatedHat(board: board, clock: clock,
                                   settings: SimulatedReceiver.Settings(board: board, startTime: now))
        let power = BoardPower(on: hat)
        let steps = try await power.switchOn()
        StandardStream.output.write(hat.devicePath + "\n")
        if arguments.verbose {
            for step in steps { StandardStream.error.write("gnss-hat simulate: \(step)\n") }
            StandardStream.error.write("gnss-hat simulate: \(board.title) at \(hat.baud) baud on \(hat.devicePath)\n")
        }
        await interruption.wait(limit: duration)
        _ = try? await power.switchOff()
        power.release()
        await hat.shutdown()
        if arguments.verbose {
            StandardStream.error.write("gnss-hat simulate: stopped after \(hat.receiver.epochsSent) epochs\n")
        }
    }
}
