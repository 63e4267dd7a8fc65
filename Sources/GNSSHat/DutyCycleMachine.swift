/// The decisions of a duty cycle, as a value-type state machine (events in, ordered actions out,
/// in the manner of Signals' `LifecycleMachine`): when to power the receiver on, which fix to hand
/// the subscribers, when to power off, and when to wake next. It does no I/O and reads no clock;
/// instants are offsets on the Receiver's clock.
///
/// One cycle: off until `due - leadTime`; on; the first fix that meets the accuracy is delivered
/// and the receiver powers off at once; if `budget` passes first, the best fix seen is delivered
/// (or, with none, a `noFix` outcome) and the receiver powers off. The next fix is due one
/// interval after this one was due, so late fixes do not push the schedule.
public struct DutyCycleMachine: Sendable, Hashable {
    public enum Phase: Sendable, Hashable {
        /// Powered off until `wakeAt`, the power-on for the fix due at `due`.
        case sleeping(wakeAt: Duration, due: Duration)
        /// Power-on requested at `since`, for the fix due at `due`.
        case acquiring(since: Duration, due: Duration, best: Candidate?)
        /// A power-off has been requested and has not yet been reported done.
        case poweringOff(nextDue: Duration)
    }

    /// A fix seen during an acquisition, with its horizontal accuracy (metres; nil: unknown).
    public struct Candidate: Sendable, Hashable {
        public var sequence: Int
        public var accuracy: Double?
    }

    public enum Event: Sendable, Hashable {
        /// The plan began (or changed) at `now`: a fix is due at once.
        case begin(now: Duration)
        /// The timer the machine asked for fired.
        case timer(now: Duration)
        /// The receiver produced fix number `sequence` with this horizontal accuracy.
        case fix(sequence: Int, accuracy: Double?, now: Duration)
        /// The power-off the machine asked for is done.
        case poweredOff(now: Duration)
    }

    public enum Action: Sendable, Hashable {
        case powerOn
        case powerOff
        /// Hand fix `sequence` to the subscribers; `metAccuracy` false: the budget ran out first.
        case deliver(sequence: Int, metAccuracy: Bool)
        /// No fix at all within the budget: the subscribers get a `noFix` error.
        case noFix(after: Duration)
        /// Call back with `.timer` at this instant (replaces any earlier request).
        case wake(at: Duration)
        /// How long the power-on took to give a fix that met the accuracy (for the start-time history).
        case measuredStart(Duration)
    }

    public let interval: Duration
    public private(set) var leadTime: Duration
    public private(set) var budget: Duration
    /// The accuracy a fix must meet to end the acquisition early; nil: the first fix.
    public let accuracy: Double?
    public private(set) var phase: Phase?

    public init(interval: Duration, leadTime: Duration, budget: Duration, accuracy: Double?) {
        self.interval = interval
        self.leadTime = leadTime
        self.budget = budget
        self.accuracy = accuracy
    }

    /// Takes a new lead time and budget (learned from measured starts) from the next cycle on.
    public mutating func retime(leadTime: Duration, budget: Duration) {
        self.leadTime = leadTime
        self.budget = budget
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (event, phase) {
        case let (.begin(now), _):
            phase = .acquiring(since: now, due: now, best: nil)
            return [.powerOn, .wake(at: now + budget)]
        case let (.timer(now), .sleeping(wakeAt, due)) where now >= wakeAt:
            phase = .acquiring(since: now, due: due, best: nil)
            return [.powerOn, .wake(at: now + budget)]
        case let (.timer(now), .acquiring(since, due, best)) where now >= since + budget:
            var actions: [Action] = best.map { [.deliver(sequence: $0.sequence, metAccuracy: false)] }
                ?? [.noFix(after: now - since)]
            actions += [.powerOff]
            phase = .poweringOff(nextDue: due + interval)
            return actions
        case let (.fix(sequence, fixAccuracy, now), .acquiring(since, due, best)):
            let candidate = Candidate(sequence: sequence, accuracy: fixAccuracy)
            if meets(fixAccuracy) {
                phase = .poweringOff(nextDue: due + interval)
                return [.deliver(sequence: sequence, metAccuracy: true), .measuredStart(now - since), .powerOff]
            }
            phase = .acquiring(since: since, due: due, best: Self.better(best, candidate))
            return []
        case let (.poweredOff(now), .poweringOff(nextDue)):
            // A cycle that overran (a long budget) skips the due times it missed.
            var due = nextDue
            while due - leadTime < now { due += interval }
            phase = .sleeping(wakeAt: due - leadTime, due: due)
            return [.wake(at: due - leadTime)]
        default:
            // A timer that fired early or late for a phase that moved on, a fix while off: nothing to do.
            return []
        }
    }

    private func meets(_ fixAccuracy: Double?) -> Bool {
        guard let accuracy else { return true }
        guard let fixAccuracy else { return false }
        return fixAccuracy <= accuracy
    }

    /// The more accurate of two fixes (a known accuracy beats an unknown one; on a tie the later).
    private static func better(_ a: Candidate?, _ b: Candidate) -> Candidate {
        guard let a else { return b }
        switch (a.accuracy, b.accuracy) {
        case let (x?, y?): return y <= x ? b : a
        case (nil, _): return b
        case (_?, nil): return a
        }
    }
}
