// How a simulated receiver's start went: cold, or hot on the ephemeris its backup RAM kept.

extension SimulatedReceiver {
    /// How a start went: without or with the ephemeris kept in backup RAM.
    public enum Start: String, Sendable, Hashable {
        case cold, hot
    }
}
