// A clock that runs faster than real time, to watch a simulated receiver in fast motion.
import LinuxSystem

/// A clock whose time runs `rate` times as fast as the continuous clock: with rate 5, a 26 s
/// cold start of the simulated receiver takes about 5 s to watch.
public struct AcceleratedClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made, at its own rate.
        public var offset: Duration

        public init(offset: Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    /// How many seconds of this clock pass in one real second. Its sleeps wait on a
    /// ``TimerThreadClock``.
    public let rate: Double
    private let start: ContinuousClock.Instant

    /// A clock starting now; `rate` below 1 is taken as 1.
    public init(rate: Double) {
        self.rate = max(rate, 1)
        start = ContinuousClock.now
    }

    public var now: Instant { Instant(offset: start.duration(to: ContinuousClock.now) * rate) }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let remaining = now.duration(to: deadline)
        guard remaining > .zero else { return }
        try await TimerThreadClock().sleep(for: remaining / rate)
    }
}
