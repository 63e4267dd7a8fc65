/// Any `Clock<Duration>` with its instants expressed as offsets from the moment the signal was
/// made, so the state machine can do arithmetic on plain durations.
@usableFromInline
struct SignalClock: Sendable {
    /// Time since the reference instant.
    @usableFromInline let now: @Sendable () -> Duration
    /// Sleeps until the given offset from the reference instant (returns at once if it has
    /// passed); throws `CancellationError` when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        // The system clocks are read on every value sent: give them a concrete, unboxed path
        // (the generic one goes through witness tables for every instant).
        if let continuous = clock as? ContinuousClock {
            self.init(concrete: continuous)
        } else if let suspending = clock as? SuspendingClock {
            self.init(concrete: suspending)
        } else {
            self.init(concrete: clock)
        }
    }

    @inline(__always)
    private init<C: Clock>(concrete clock: C) where C.Duration == Duration {
        let reference = clock.now
        now = { reference.duration(to: clock.now) }
        sleepUntil = { offset in
            try await clock.sleep(until: reference.advanced(by: offset), tolerance: nil)
        }
    }
}
