// Telling a driver of a manual clock when everything is idle. A driver moves time only when no
// part of the system has work in progress, so that no time-out fires for a reply on its way and no
// wait is jumped over. Each part says whether it is idle and counts its changes: a driver that
// reads every part twice and finds the same counts knows they were all idle at the same time.
//
// `package`: the test driver's interface (GNSSHatTesting's HatDriver), not API for the library's users.

/// Whether a part of a system has work in progress, and how many times its work has changed.
package struct Activity: Sendable, Equatable, CustomStringConvertible {
    /// Nothing for this part to do until time moves or another part acts.
    package var isIdle: Bool
    /// The part's changes so far: the same count on two looks means nothing changed in between.
    package var changes: UInt64

    package init(isIdle: Bool, changes: UInt64) {
        self.isIdle = isIdle
        self.changes = changes
    }

    package var description: String { (isIdle ? "idle" : "working") + " (\(changes) changes)" }
}

/// A part of a system that tells a driver of a manual clock whether it has work in progress.
///
/// A part hands work on without a gap: whatever passes work to another part (resumes a waiting
/// task, writes bytes for a reader) makes that part busy before it lets go itself, so that there
/// is no moment at which both look idle while the work is on its way.
package protocol ActivityReporting: Sendable {
    /// Whether the part is idle now, with its count of changes.
    var activity: Activity { get }
    /// Suspends until `activity.changes` is no longer `changes` (at once if it is not already), or
    /// until the task is cancelled.
    func waitForActivity(after changes: UInt64) async
}
