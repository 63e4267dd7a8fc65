// The power strategies: each board lists some in order; power-on runs their `on` actions in
// that order, power-off their `off` actions in reverse. After the last `on` action the session
// waits for the receiver to show it is up (its first valid frame; a boot or wake-up message is
// one), with the board's time-out.
import GNSSProtocol

struct PowerStrategyRunner {
    let session: HardwareSession
    let transport: (any Transport)?

    var board: Board { session.board }
    var lines: PowerLines { session.lines }

    /// Bytes that wake a u-blox from backup through its UART: the first bytes after the
    /// wake-up are lost, and 0xFF is idle filler to every decoder.
    static let ubloxWakeBytes: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    /// `$PMTK000`, the MTK test packet: any UART byte wakes an MTK from standby, and this one
    /// is harmless whether it sleeps or not (it is answered by `$PMTK001,0,3`).
    static let mtkWake = PMTK.command(0)

    func powerOn(_ strategy: Board.PowerStrategy) async throws {
        switch strategy {
        case .gpioEnable:
            // Hold the receiver in reset while its supply comes up, where a reset line exists.
            try lines.set(.reset, asserted: true)
            try lines.set(.enable, asserted: true)
            try await session.sleep(for: board.power.onWait)
            try lines.set(.reset, asserted: false)
        case .standbyLine:
            try lines.set(.standby, asserted: false)
            try await session.sleep(for: board.power.onWait)
        case .forceOnPulse:
            try lines.set(.forceOn, asserted: true)
            try await session.sleep(for: board.gpio.forceOnPulse)
            try lines.set(.forceOn, asserted: false)
        case .ubloxBackup:
            if case .i2c = board.link {} else if let transport {
                try await session.send(Self.ubloxWakeBytes, through: transport)
            }
            if lines.holds(.extint) {
                try lines.set(.extint, asserted: true)
                try await session.sleep(for: board.gpio.extintPulse)
                try lines.set(.extint, asserted: false)
            }
        case .ubloxGNSSStop:
            if let transport { try await session.send(UBXCfgRst.gnssStart.frame, through: transport) }
        case .mtkStandby:
            if let transport { try await session.send(Self.mtkWake, through: transport) }
        }
    }

    /// How many times a power-off drives an output line before it gives up, and the pause
    /// between tries: a line left on is the one failure a power-off must not shrug off, and a
    /// set can fail once and succeed next time (an I/O error on a GPIO expander's bus, say).
    static let lineOffAttempts = 3
    static let lineOffRetryPause: Duration = .milliseconds(100)

    func powerOff(_ strategy: Board.PowerStrategy) async throws {
        switch strategy {
        case .gpioEnable:
            try await switchOff(.enable, asserted: false)
        case .standbyLine:
            try await switchOff(.standby, asserted: true)
        case .forceOnPulse:
            return
        case .ubloxBackup:
            guard let transport else { return }
            var sources: UBXRxmPmReq.WakeSources = []
            if case .i2c = board.link {} else { sources.insert(.uartRX) }
            if lines.holds(.extint) { sources.insert(.extint0) }
            try await session.send(UBXRxmPmReq.backup(wakeupSources: sources).frame, through: transport)
        case .ubloxGNSSStop:
            guard let transport else { return }
            try await session.send(UBXCfgRst.gnssStop.frame, through: transport)
        case .mtkStandby:
            guard let transport else { return }
            try await session.send(PMTK.standby, through: transport)
        }
    }

    /// Drives a line to its off level, trying again after a pause when the set fails and the
    /// line is still held (`PowerLines.set` drops a line that has gone away: nothing is left to
    /// drive). Throws the last failure after `lineOffAttempts` tries.
    private func switchOff(_ role: LineRole, asserted: Bool) async throws {
        var attempt = 1
        while true {
            do {
                try lines.set(role, asserted: asserted)
                return
            } catch {
                guard attempt < Self.lineOffAttempts, lines.holds(role) else {
                    if attempt == 1 { throw error }
                    throw RetriedFailure(attempts: attempt, last: error)
                }
                attempt += 1
                // A cancelled stop still tries every attempt, without the pause.
                try? await session.sleep(for: Self.lineOffRetryPause)
            }
        }
    }
}

/// The last failure of an action tried several times; only ever shown as text (a power-off's
/// failures are recorded in the statistics, not thrown to anyone).
struct RetriedFailure: Error, CustomStringConvertible {
    let attempts: Int
    let last: ReceiverError

    var description: String { "\(last) (tried \(attempts) times)" }
}
