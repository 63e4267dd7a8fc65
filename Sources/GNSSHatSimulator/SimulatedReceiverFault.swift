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
        /// The next database dump (MGA-DBD poll) holds one record with bad contents, still in a valid UBX
        /// frame; the receiver refuses that record (MGA-ACK type 0) when it is sent back.
        case corruptDatabaseRecord
        /// Refuses its own power save, as some MAX-M10S firmware does: ACK-NAK to CFG-PM2, CFG-RXM power save,
        /// CFG-PMS and a CFG-VALSET with CFG-PM keys; `$PMTK001,225,1` to a periodic `$PMTK225`.
        case refusePowerSave
    }
}
