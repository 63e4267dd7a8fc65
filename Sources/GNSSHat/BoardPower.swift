// Direct control of a board's power strategies, without a Receiver session: for bring-up, when
// one wants to see the enable line switch (or the standby command go out) whether or not the
// receiver answers. The same strategy code the Receiver runs, minus waiting for the receiver.
import Signals

/// A board's power switched by hand (`gnss-hat power on|off`).
///
/// `switchOn()` requests the board's output lines and runs each strategy's power-on action in
/// order; `switchOff()` runs the power-off actions in reverse. Software strategies (u-blox
/// backup or GNSS stop, MTK standby) open the link for the command and close it again. The
/// lines stay requested until ``release()``: a released line falls back to its pull resistor.
public final class BoardPower: Sendable {
    public let board: Board
    /// The hardware the strategies run on.
    public let hardware: any ReceiverHardware
    let session: HardwareSession

    /// Control of the board of `hardware` (the system's, a simulated hat), with the strategies'
    /// pauses (on-wait, pulses) on the hardware's clock.
    public init(on hardware: some ReceiverHardware) {
        board = hardware.board
        self.hardware = hardware
        session = HardwareSession(hardware: hardware, options: ReceiverOptions(configure: false))
    }

    /// Whether a strategy talks to the receiver (so the link must be open for it).
    static func needsLink(_ strategy: Board.PowerStrategy, on: Bool) -> Bool {
        switch strategy {
        case .gpioEnable, .standbyLine, .forceOnPulse: false
        case .ubloxGNSSStop, .mtkStandby: true
        // Waking from backup needs UART traffic on a UART board; EXTINT is a line.
        case .ubloxBackup: true
        }
    }

    /// Runs the power-on actions in the board's order; returns one line per strategy run.
    public func switchOn() async throws -> [String] {
        try await run(on: true)
    }

    /// Runs the power-off actions in reverse order; returns one line per strategy run.
    public func switchOff() async throws -> [String] {
        try await run(on: false)
    }

    private func run(on: Bool) async throws -> [String] {
        try await session.asSequence { try await runStrategies(on: on) }
    }

    private func runStrategies(on: Bool) async throws -> [String] {
        try session.lines.acquire()
        let strategies = on ? board.power.strategies : board.power.strategies.reversed()
        var transport: (any Transport)?
        if strategies.contains(where: { Self.needsLink($0, on: on) }) {
            let opened = try session.openTransport(hardware.link)
            // Bytes the receiver sends meanwhile are read and dropped, so the port never fills.
            opened.start(onBytes: { _ in .none }, onFailure: { _ in })
            transport = opened
        }
        let runner = PowerStrategyRunner(session: session, transport: transport)
        var done: [String] = []
        do {
            for strategy in strategies {
                if on {
                    try await runner.powerOn(strategy)
                } else {
                    try await runner.powerOff(strategy)
                }
                done.append(describe(strategy, on: on))
            }
        } catch {
            await transport?.close()
            throw error
        }
        await transport?.close()
        return done
    }

    private func describe(_ strategy: Board.PowerStrategy, on: Bool) -> String {
        let gpio = board.gpio
        switch strategy {
        case .gpioEnable:
            return "\(strategy): enable \(gpio.enable.map(\.description) ?? "(none)") "
                + (on ? "asserted (supply on)" : "released to inactive (supply off)")
        case .standbyLine:
            return "\(strategy): standby \(gpio.standby.map(\.description) ?? "(none)") "
                + (on ? "inactive (running)" : "asserted (standby)")
        case .forceOnPulse:
            return "\(strategy): " + (on ? "force-on line pulsed" : "nothing to do at power-off")
        case .ubloxBackup:
            return "\(strategy): " + (on ? "wake-up sent (UART bytes and/or EXTINT pulse)" : "UBX-RXM-PMREQ backup sent")
        case .ubloxGNSSStop:
            return "\(strategy): " + (on ? "UBX-CFG-RST GNSS start sent" : "UBX-CFG-RST GNSS stop sent")
        case .mtkStandby:
            return "\(strategy): " + (on ? "PMTK000 wake-up sent" : "PMTK161 standby sent")
        }
    }

    /// The output lines held and their logical values read back (`true`: function asserted).
    public func outputLines() -> [(name: String, asserted: Bool?)] {
        session.lines.levels().map { (name: $0.role.description, asserted: $0.asserted) }
    }

    /// Releases the lines (each falls back to what its pull resistor or the chip decides).
    public func release() {
        session.release()
    }
}
