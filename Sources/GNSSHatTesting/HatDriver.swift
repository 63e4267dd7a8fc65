// Drives a simulated hat on a manual clock, deterministically: time moves from one deadline to
// the next (a sleeper's, the simulated receiver's next event, a wait of the Receiver's session),
// and only once everything is idle, so that a time-out can never fire for a reply on its way and
// time never jumps over work in progress.
public import GNSSHat
public import GNSSHatSimulator
import LinuxSystem
import Signals

/// Moves a `ManualClock` for a ``SimulatedHat`` made with `.driven` timing.
///
/// **Idle** means that nothing will happen until time moves, and the driver knows it exactly,
/// without yielding and hoping: it asks each part whether it has work in progress (its
/// `ActivityReporting`), waits for a busy part to change, and moves time only when every part was
/// idle at the same moment — it reads every part twice and finds the same counts of changes, since
/// a part that hands work on makes the next part busy before it lets go itself. The parts:
///
/// - the hat: no byte in flight either way, no PPS edge on its way to the host's reader;
/// - the clock: every sleeper it resumed has taken its wake-up;
/// - the Receiver (if given): its session only waits for time (no power sequence, poll, command or
///   failure being worked on; no wait past its deadline) and no signal has a transition due;
/// - the operations of ``run(limit:_:)``: they run on an executor of the driver's, which holds no
///   job. Their child tasks run there too; unstructured tasks they start do not, and are not
///   waited for.
///
/// A part outside these (a task of the test's own sleeping on the clock and doing more than one
/// step when woken) is not seen: give it to ``run(limit:_:)`` instead. (Parts of this package that
/// report their activity, such as the MQTT bridge, are passed in `alsoWaitingFor`.)
public final class HatDriver: Sendable {
    public let clock: ManualClock
    public let hat: SimulatedHat
    /// The Receiver on the hat, whose session and signals the driver waits for.
    public let receiver: Receiver?
    /// Where the operations of ``run(limit:_:)`` run, so that the driver sees when they are idle.
    private let operations = OperationExecutor()
    /// Parts of the caller's to wait for too.
    private let others: [any ActivityReporting]

    /// The driver's own time limit ran out before an operation finished.
    public struct TimeLimitReached: Error, CustomStringConvertible {
        public var limit: Duration
        public var description: String { "the operation did not finish within \(limit) of simulated time" }
    }

    /// A driver of `clock` for `hat` (made with `.driven` timing), waiting for `receiver`.
    public convenience init(hat: SimulatedHat, clock: ManualClock, receiver: Receiver? = nil) {
        self.init(hat: hat, clock: clock, receiver: receiver, alsoWaitingFor: [])
    }

    /// A driver that also waits for the parts in `alsoWaitingFor` (components that report their
    /// activity: the package's own, such as the MQTT bridge; the interface is not public).
    package init(
        hat: SimulatedHat, clock: ManualClock, receiver: Receiver?, alsoWaitingFor others: [any ActivityReporting]
    ) {
        self.hat = hat
        self.clock = clock
        self.receiver = receiver
        self.others = others
    }

    /// The next deadline: the earliest sleeper's, the simulated receiver's next event, or the
    /// end of a wait the Receiver's session has begun (its sleeper may not be registered with the
    /// clock yet).
    public var nextDeadline: ManualClock.Instant? {
        let now = clock.now
        let candidates = [
            clock.nextDeadline,
            hat.receiver.timeToNextEvent.map { now.advanced(by: $0) },
            receiver?.timeToNextDeadline.map { now.advanced(by: $0) },
        ]
        return candidates.compactMap { $0 }.min()
    }

    /// The parts the driver waits for, in the order it looks at them.
    private var parts: [any ActivityReporting] {
        var parts: [any ActivityReporting] = [hat, clock, operations]
        if let receiver { parts.append(receiver) }
        return parts + others
    }

    /// Each part's activity as it reads now, by name (for a test's diagnostics).
    package var activity: [String: Activity] {
        var activity = ["hat": hat.activity, "clock": clock.activity, "operations": operations.activity]
        activity["receiver"] = receiver?.activity
        for (index, part) in others.enumerated() { activity["part \(index)"] = part.activity }
        return activity
    }

    /// Suspends until every part is idle at the same moment (see the type's description), or until
    /// the task is cancelled.
    public func settle() async {
        let parts = parts
        while !Task.isCancelled {
            let first = parts.map(\.activity)
            if let busy = first.firstIndex(where: { !$0.isIdle }) {
                await parts[busy].waitForActivity(after: first[busy].changes)
                continue
            }
            // Idle one after the other; unchanged on a second look, so idle all at once.
            if parts.map(\.activity) == first { return }
        }
    }

    /// Moves the clock and the simulated receiver to `instant`. Whatever that wakes reports itself
    /// busy at once (a due wait, a resumed sleeper, bytes in flight), so the next `settle()` waits
    /// for it.
    private func move(to instant: ManualClock.Instant) {
        clock.advance(to: instant)
        hat.receiver.tick()
    }

    /// Moves time forward by `duration`, stopping at every deadline on the way; a cancelled task
    /// moves no further.
    public func advance(by duration: Duration) async {
        let target = clock.now.advanced(by: duration)
        while true {
            await settle()
            // Cancelled: not even the final move to the target (a test's time limit ends the drive).
            if Task.isCancelled { return }
            guard let next = nextDeadline, next <= target else { break }
            move(to: next)
        }
        move(to: target)
        await settle()
    }

    /// Runs `operation` while moving time forward deadline by deadline, until it returns; at most
    /// `limit` of simulated time passes. Throws `CancellationError` (and cancels `operation`)
    /// when the calling task is cancelled, so that a test's time limit ends a drive that hangs.
    public func run<T: Sendable>(
        limit: Duration = .seconds(600), _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let result = Lock<Result<T, any Error>?>(nil)
        let task = Task(executorPreference: operations) {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
        }
        let end = clock.now.advanced(by: limit)
        while true {
            await settle()
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            if Task.isCancelled {
                task.cancel()
                throw CancellationError()
            }
            // Everything is idle and the operation waits: only time can move it on.
            if let next = nextDeadline, next <= end {
                move(to: next)
            } else if clock.now < end {
                move(to: end)
            } else {
                task.cancel()
                throw TimeLimitReached(limit: limit)
            }
        }
    }

    /// Moves time until the receiver's power state satisfies `condition`.
    public func run(
        limit: Duration = .seconds(600), untilPower condition: @escaping @Sendable (PowerState) -> Bool,
        of receiver: Receiver
    ) async throws {
        try await run(limit: limit) { await receiver.waitForPower(condition) }
    }
}
