// The simulator's hardware provider: for a simulator board, a new simulated hat (its receiver on a
// pseudo-terminal, its lines in memory) on the Receiver's clock, which may run at any speed.
public import GNSSHat
public import GNSSProtocol
import LinuxSystem

/// The provider of simulated hats: it serves the boards whose link is a simulated receiver.
public struct SimulatedHardware: HardwareProvider {
    /// How the host reaches each hat's receiver.
    public var connection: SimulatedHat.Connection
    /// UTC at the start of each hat's simulation (a fixed day by default, so that runs repeat).
    public var startTime: StartTime

    /// When a hat's simulated day begins.
    public enum StartTime: Sendable, Hashable {
        /// At this UTC time, whenever the hat is made.
        case fixed(GNSSTime)
        /// At the system's UTC when the hat is made: a receiver then running in real time tells the
        /// system's time (a chrony fed from `gnss-hat serve --board simulator` is not a day off).
        case systemTimeAtOpen
    }

    public init(
        connection: SimulatedHat.Connection = .pseudoTerminal,
        startTime: StartTime = .fixed(SimulatedReceiver.defaultStartTime)
    ) {
        self.connection = connection
        self.startTime = startTime
    }

    public func serves(_ board: Board) -> Bool {
        if case .simulator = board.link { true } else { false }
    }

    /// A new hat for `board`, its receiver running on `clock` by itself; it ends with the
    /// Receiver's `shutdown()`.
    public func open(_ board: Board, clock: any Clock<Duration>) throws -> any ReceiverHardware {
        let start = switch startTime {
        case let .fixed(time): time
        case .systemTimeAtOpen: GNSSTime(nanosecondsSinceEpoch: WallClock.now())
        }
        return try SimulatedHat(board: board, clock: clock, connection: connection,
                                settings: SimulatedReceiver.Settings(board: board, startTime: start))
    }

    /// A simulated receiver's time is the clock's, however fast it runs.
    public func canScaleTime(for board: Board) -> Bool { true }
}

extension HardwareProvider where Self == SimulatedHardware {
    /// Simulated hats for the simulator boards.
    public static var simulated: SimulatedHardware { SimulatedHardware() }
}

extension HardwareProvider where Self == HardwareProviders {
    /// The machine's own hardware for boards on a UART or an I2C bus, a simulated hat for the
    /// simulator boards.
    public static var systemOrSimulated: HardwareProviders {
        HardwareProviders(SystemHardware(), SimulatedHardware())
    }
}
