// The simulator's hardware provider: for a simulator board, a new simulated hat (its receiver on a
// pseudo-terminal, its lines in memory) on the Receiver's clock, which may run at any speed.
public import GNSSHat
public import GNSSProtocol

/// The provider of simulated hats: it serves the boards whose link is a simulated receiver.
public struct SimulatedHardware: HardwareProvider {
    /// How the host reaches each hat's receiver.
    public var connection: SimulatedHat.Connection
    /// UTC at the start of each hat's simulation (a fixed day by default, so that runs repeat).
    public var startTime: GNSSTime

    public init(
        connection: SimulatedHat.Connection = .pseudoTerminal,
        startTime: GNSSTime = SimulatedReceiver.defaultStartTime
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
        try SimulatedHat(board: board, clock: clock, connection: connection,
                         settings: SimulatedReceiver.Settings(board: board, startTime: startTime))
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
