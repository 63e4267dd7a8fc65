/// A signal's progress as a driver of a manual clock reads it, in one look under the signal's lock:
/// whether it still has a transition to make without time moving, which starts of derived signals
/// wait for it to run, and a count of the changes of both, so that a driver can tell that nothing
/// changed between two looks.
package struct SignalProgress: Sendable, Equatable {
    /// The lifecycle state.
    package var state: SignalState
    /// A transition is still due: a hook in progress (start, re-plan, stop), or an armed timer
    /// whose deadline has passed but that has not acted yet.
    package var isPending: Bool
    /// A re-plan hook is in progress (a producer whose re-plan is its own sequence of work, like
    /// a start or a stop, is read as working while that sequence does).
    package var isReplanning: Bool = false
    /// How many derived signals' starts wait for this signal to run (they wait, rather than work,
    /// while this signal waits).
    package var startsWaitingForRunning: Int
    /// How long until the armed timer's deadline (zero once it has passed; nil with no timer armed):
    /// its task may not be asleep on the clock yet, so a driver reads the deadline here.
    package var timeToTimer: Duration?
    /// Counts the transitions and the derived starts that began to wait; anything above that
    /// changes changes it too.
    package var changes: UInt64
}
