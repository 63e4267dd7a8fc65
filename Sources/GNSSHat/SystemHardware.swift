// The machine's own hardware: a board's UART or I2C bus and its GPIO lines, as its description
// says, reached through libgpiod, termios and i2c-dev (or through openers a test or a rig replaces).
public import LinuxSystem  // TimerThreadClock, the default clock
import PiHardware

/// The provider of the machine's hardware: it serves every board linked by a UART or an I2C bus.
public struct SystemHardware: HardwareProvider {
    /// The lines and openers the hardware it opens uses.
    public var access: HardwareAccess

    /// The system's lines and openers (`HardwareAccess.system()`), or others (a rig's, a test's).
    public init(access: HardwareAccess = .system()) {
        self.access = access
    }

    public func serves(_ board: Board) -> Bool {
        board.link.systemLink != nil
    }

    public func open(_ board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware {
        try BoardHardware(board: board, access: access, clock: clock)
    }
}

extension HardwareProvider where Self == SystemHardware {
    /// The machine's own hardware (libgpiod lines as `gnss-hat`, termios serial ports, i2c-dev).
    public static var system: SystemHardware { SystemHardware() }
}

/// The hardware a board's description names — its UART or I2C bus — reached through `access`.
public struct BoardHardware: ReceiverHardware {
    public let board: Board
    public let access: HardwareAccess
    public let link: HardwareLink
    public let clock: any Clock<Duration>

    /// Throws ``NoHardwareProvider`` for a board whose link is neither a UART nor an I2C bus.
    public init(board: Board, access: HardwareAccess = .system(), clock: any Clock<Duration> = TimerThreadClock())
        throws(NoHardwareProvider)
    {
        guard let link = board.link.systemLink else { throw NoHardwareProvider(board: board) }
        self.board = board
        self.access = access
        self.link = link
        self.clock = clock
    }

    /// The link's device (present or missing) and each GPIO line of the board with who holds it
    /// (`GPIOChip` line info through libgpiod).
    public func status() -> HardwareStatus {
        var lines = ["\(board.name): \(board.title)", "link: \(board.link)"]
        lines.append("  \(link.path): " + (FileSystem.exists(link.path) ? "present" : "missing"))
        lines.append("power strategies: " + board.power.strategies.map(\.description).joined(separator: ", "))
        let roles: [(String, Board.Line?)] = [
            ("enable", board.gpio.enable), ("standby", board.gpio.standby), ("force-on", board.gpio.forceOn),
            ("reset", board.gpio.reset), ("EXTINT", board.gpio.extint), ("PPS", board.gpio.pps),
        ]
        let wired = roles.compactMap { role, line in line.map { (role, $0) } }
        var unavailable: (any Error & Sendable)?
        if wired.isEmpty {
            lines.append("GPIO: none wired (power is switched by commands to the receiver)")
        } else {
            do throws(GPIOError) {
                let chip = try GPIOChip.open(board.gpio.chip)
                defer { chip.close() }
                lines.append("GPIO chip: \(chip.name)")
                for (role, line) in wired {
                    do throws(GPIOError) {
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
        return HardwareStatus(lines: lines, unavailable: unavailable)
    }
}
