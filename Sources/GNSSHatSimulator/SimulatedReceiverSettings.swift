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
        /// Time to first fix, from the aiding's arrival, after a cold boot given time, position and this
        /// receiver's own database back (u-blox M8 data sheets: "Aided starts 2 s", AssistNow Online, which
        /// also brings the ephemeris; a little more here for the records' transfer).
        public var aidedStart: Duration
        /// Time to first fix, from the aiding's arrival, with time and position but no database: the receiver
        /// still has to decode each satellite's ephemeris from the sky, which takes at least 18 s of clear
        /// view (u-blox ANTARIS 4 system integration manual, 4.5.4), so this is close to a cold start.
        public var timeAidedStart: Duration
        /// The chip's unique id (SEC-UNIQID: 5 bytes, 6 on M10); its database records carry it.
        public var uniqueID: [UInt8]

        public init(
            dialect: Dialect, simulation: Board.Simulation = Board.Simulation(), period: Duration = .seconds(1),
            startTime: GNSSTime = SimulatedReceiver.defaultStartTime, ephemerisLifetime: Duration = .seconds(4 * 3600),
            model: String = "ZED-F9P", seed: UInt64 = 1, replay: Replay? = nil, aidedStart: Duration = .seconds(3),
            timeAidedStart: Duration = .seconds(20), uniqueID: [UInt8]? = nil
        ) {
            self.dialect = dialect
            self.simulation = simulation
            self.period = period
            self.startTime = startTime
            self.ephemerisLifetime = ephemerisLifetime
            self.model = model
            self.seed = seed
            self.replay = replay
            self.aidedStart = aidedStart
            self.timeAidedStart = timeAidedStart
            // SEC-UNIQID version 2 (6 bytes) on M10 (protocol 34 and later), version 1 (5 bytes) before.
            var idLength = 5
            if case .ublox(let version) = dialect, version >= 34 { idLength = 6 }
            self.uniqueID = uniqueID ?? Self.uniqueID(seed: seed, length: idLength)
        }

        /// A stable id for a seed: the same simulated receiver every run, another for another seed.
        public static func uniqueID(seed: UInt64, length: Int = 5) -> [UInt8] {
            var generator = SeededGenerator(seed: seed ^ 0x5EC0_1D00)
            let bits = generator.next()
            return (0..<min(max(length, 1), 8)).map { UInt8(truncatingIfNeeded: bits >> (8 * UInt64($0))) }
        }

        /// The settings a board describes (its chip, its simulation section).
        public init(board: Board, startTime: GNSSTime = SimulatedReceiver.defaultStartTime, seed: UInt64 = 1) {
            self.init(dialect: Dialect(board.chip.family), simulation: board.simulation ?? Board.Simulation(),
                      startTime: startTime, model: board.chip.model ?? board.chip.family.rawValue, seed: seed)
        }
    }
}
