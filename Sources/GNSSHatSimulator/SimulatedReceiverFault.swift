// The misbehaviour a simulated receiver shows on request.

extension SimulatedReceiver {
    /// Misbehaviour on request.
    public enum Fault: Sendable, Hashable {
        /// Sends this many random bytes at once (noise on the line).
        case garbage(Int)
        /// The next this many frames go out with a wrong checksum.
        case corruptFrames(Int)
        /// Sends nothing for this long, though powered and navigating.
        case stall(Duration)
        /// Sends nothing at all and ignores every command, until the faults are cleared.
        case silent
        /// Refuses every configuration command (ACK-NAK, `$PMTK001,n,2`).
        case rejectConfiguration
        /// Never acknowledges configuration commands.
        case ignoreConfiguration
    }
}
