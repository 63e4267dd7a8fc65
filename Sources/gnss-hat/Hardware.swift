// The composition root's choice of hardware: every command that opens a board opens it through
// these providers, so no command asks whether its board is simulated.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import LinuxSystem

enum CommandHardware {
    /// The machine's own hardware for boards on a UART or an I2C bus, simulated hats for the
    /// simulator boards. `simulatedDayStartsNow`: the simulated receiver starts at the system's UTC
    /// (`watch`, `serve`: in real time it then tells the system's time), rather than at a fixed
    /// day's, which repeats from run to run.
    static func providers(simulatedDayStartsNow: Bool = false) -> HardwareProviders {
        let simulated = simulatedDayStartsNow
            ? SimulatedHardware(startTime: .systemTimeAtOpen)
            : SimulatedHardware()
        return HardwareProviders(SystemHardware(), simulated)
    }

    /// The clock for a command that may run its board's time faster (`--speed N`): a clock at `speed`
    /// (or `fallback` when no speed is given) on hardware whose time can be scaled, real time
    /// otherwise. Throws when a speed is asked of hardware that keeps real time.
    static func clock(speed: Double?, fallback: Double = 1, board: Board, providers: HardwareProviders)
        throws -> AcceleratedClock
    {
        guard providers.canScaleTime(for: board) else {
            if speed != nil {
                throw CommandFailure(.configuration, "--speed needs a board whose time is simulated; "
                    + "\(board.name) is real hardware (\(board.link))")
            }
            return AcceleratedClock(rate: 1)
        }
        return AcceleratedClock(rate: speed ?? fallback)
    }

    /// The board for a run at `rate` times real time: the simulated receiver answers in real time
    /// (its thread, the pseudo-terminal, the reader), which the faster clock cannot compress, so the
    /// wait for an acknowledgement is kept at 250 ms of real time at least (at 200x, 50 simulated
    /// seconds); an answer that comes at once ends the wait at once.
    static func board(_ board: Board, at rate: Double) -> Board {
        var board = board
        let floor = Duration.milliseconds(250) * rate
        if board.configuration.ackTimeout < floor { board.configuration.ackTimeout = floor }
        return board
    }
}
