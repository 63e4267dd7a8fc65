// Which fixes one interval subscriber gets: a value-type rule, so that it is tested without a receiver.
public import GNSSProtocol

/// The fixes one subscriber of ``Receiver/fixes(every:maximumAge:accuracy:)`` is handed: the first
/// fix that meets its accuracy once a fix is due, then none until the next one is due, one interval
/// later (the schedule keeps its phase: a late fix does not push the next one).
///
/// A fix is due from a quarter of an interval before its time: a duty cycle powers the receiver on
/// ahead of the due time by its expected start (at most a quarter of the interval, or the planner
/// keeps the receiver on), and the fix it gets must count. When a duty cycle's power-on runs out of
/// time (``ReceiverEvent/fixWindowClosed(best:after:)``) while a fix is due, the subscriber gets the
/// best fix seen, or the `noFix` error.
public struct FixSchedule: Sendable, Hashable {
    public enum Decision: Sendable, Hashable {
        case skip
        case deliver(Fix)
        case noFix(after: Duration)
    }

    public let interval: Duration
    public let accuracy: Double?
    /// When the next fix is due (nil: at once, the first one).
    public private(set) var nextDue: Duration?

    public init(interval: Duration, accuracy: Double?) {
        self.interval = interval
        self.accuracy = accuracy
    }

    /// The schedule for `demand` (its interval, or its maximum age when that is shorter); nil for a
    /// continuous demand, whose subscriber gets every fix.
    public init?(demand: FixDemand) {
        guard let interval = PowerPlanner.effectiveInterval(of: demand) else { return nil }
        self.init(interval: interval, accuracy: demand.horizontalAccuracy)
    }

    /// How early before its due time a fix counts.
    public var window: Duration { interval / 4 }

    /// What to do with `event` at `now` (the receiver's clock).
    public mutating func handle(_ event: ReceiverEvent, now: Duration) -> Decision {
        switch event {
        case .fix(let fix):
            guard fix.hasPosition, meets(fix), isDue(now) else { return .skip }
            advance(now: now)
            return .deliver(fix)
        case .fixWindowClosed(let best, let after):
            guard isDue(now) else { return .skip }
            advance(now: now)
            return best.map(Decision.deliver) ?? .noFix(after: after)
        default:
            return .skip
        }
    }

    /// Whether `fix` is as accurate as asked (a fix without an accuracy estimate is not, when one is asked).
    public func meets(_ fix: Fix) -> Bool {
        guard let accuracy else { return true }
        guard let eph = fix.eph else { return false }
        return eph <= accuracy
    }

    private func isDue(_ now: Duration) -> Bool {
        guard let nextDue else { return true }
        return now >= nextDue - window
    }

    /// The next fix is due one interval after this one was; a fix later than a whole interval
    /// starts the schedule again from now.
    private mutating func advance(now: Duration) {
        let due = nextDue ?? now
        var next = due + interval
        if next - window <= now { next = now + interval }
        nextDue = next
    }
}
