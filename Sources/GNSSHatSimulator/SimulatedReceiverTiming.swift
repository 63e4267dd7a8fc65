// Who moves a simulated receiver's time on: a task of its own, or its driver.

extension SimulatedReceiver {
    /// Who moves the receiver's time on.
    public enum Timing: Sendable, Hashable {
        /// A task of its own sleeps on the clock until the next event (boot end, next epoch).
        case selfTimed
        /// A test or benchmark calls ``tick()`` after moving the clock, and reads
        /// ``nextDeadline`` to know how far to move it.
        case driven
    }
}
