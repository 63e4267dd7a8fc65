// A simulated receiver's settings: its dialect, its board's simulation section, its period and
// start time, and what it plays back.
public import GNSSHat
public import GNSSProtocol

extension SimulatedReceiver {
    /// The simulation's settings.
    public struct Settings: Sendable {
        public var dialect: Dialect
        public var simulation: Board.Simulation
        /// The navigation period after boot (configuration may change it).
        public var period: Duration
        /// UTC at the clock's reading when the receiver was made.
        public var startTime: GNSSTime
        /// How long ephemeris kept in backup RAM allows a hot start.
        public var ephemerisLifetime: Duration
        /// The module name MON-VER reports.
        public var model: String
        /// Seeds the noise of `garbage` faults.
        public var seed: UInt64
        /// A capture to play back instead of the scripted trajectory (nil: the trajectory).
        public var replay: Replay?

        public init(
            dialect: Dialect, simulation: Board.Simulation = Board.Simulation(), period: Duration = .seconds(1),
            startTime: GNSSTime = SimulatedReceiver.defaultStartTime, ephemerisLifetime: Duration = .seconds(4 * 3600),
            model: String = "ZED-F9P", seed: UInt64 = 1, replay: Replay? = nil
        ) {
            self.dialect = dialect
            self.simulation = simulation
            self.period = period
            self.startTime = startTime
            self.ephemerisLifetime = ephemerisLifetime
            self.model = model
            self.seed = seed
            self.replay = replay
        }

        /// The settings a board describes (its chip, its simulation section).
        public init(board: Board, startTime: GNSSTime = SimulatedReceiver.defaultStartTime, seed: UInt64 = 1) {
            self.init(dialect: Dialect(board.chip.family), simulation: board.simulation ?? Board.Simulation(),
                      startTime: startTime, model: board.chip.model ?? board.chip.family.rawValue, seed: seed)
        }
    }
}
