// What a simulated receiver is doing, which decides what it sends and what it draws.

extension SimulatedReceiver {
    /// What the receiver is doing, which decides what it sends and what it draws.
    public enum Mode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// No main supply (or held in reset).
        case off
        /// Powered, starting up: silent until its boot messages.
        case booting
        /// Searching for satellites: epochs without a fix.
        case acquiring
        /// Tracking: epochs with a fix, and PPS pulses.
        case tracking
        /// u-blox GNSS stopped by CFG-RST: the interface answers, no navigation output.
        case gnssStopped
        /// MTK standby (`$PMTK161,0` or the standby line): silent until a byte (or the line) wakes it.
        case standby
        /// u-blox backup (RXM-PMREQ): silent until a wake-up source or the duration ends.
        case backup
        /// MTK perpetual backup (`$PMTK225,4`): silent until a FORCE_ON pulse.
        case perpetualBackup
        /// The receiver's own power save after its first fix (u-blox CFG-RXM lpMode 1, CFG-PMS or CFG-PM-* keys,
        /// MTK periodic `$PMTK225`): one fix per update period and nothing in between; draws the board's
        /// power-save current on average.
        case powerSave

        public var description: String { rawValue }

        /// Whether the receiver navigates (draws operating current) in this mode.
        public var isNavigating: Bool { self == .booting || self == .acquiring || self == .tracking }
    }

    /// A change of mode: the receiver entered `mode` at `at` (the receiver's clock: time since it was made).
    public struct ModeChange: Sendable, Hashable, CustomStringConvertible {
        public var at: Duration
        public var mode: Mode

        public init(at: Duration, mode: Mode) {
            self.at = at
            self.mode = mode
        }

        public var description: String { "\(mode) at \(at)" }
    }
}
