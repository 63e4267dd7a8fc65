// How a simulated receiver's start went: cold, hot on the ephemeris its backup RAM kept, or aided by
// what the host sent after a cold boot.

extension SimulatedReceiver {
    /// How a start went.
    public enum Start: String, Sendable, Hashable {
        /// Nothing kept and no aiding: the board's cold-start time.
        case cold
        /// The ephemeris kept in backup RAM: the board's hot-start time.
        case hot
        /// A cold boot aided by time, position and this receiver's own navigation database (MGA-INI-TIME_UTC,
        /// MGA-INI-POS_LLH, MGA-DBD) before the fix: ``Settings/aidedStart``.
        case aided
        /// A cold boot aided by time and position only (u-blox MGA-INI, MTK `$PMTK740` and `$PMTK741`), which
        /// still has to collect the ephemeris from the sky: ``Settings/timeAidedStart``.
        case timeAided
    }
}
