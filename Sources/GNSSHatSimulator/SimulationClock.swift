// The simulated receiver's view of its clock: any `Clock<Duration>`, its instants as offsets from
// when the receiver was made, so that the receiver's state can do arithmetic on plain durations.

/// Any `Clock<Duration>`, with instants as offsets from the moment it was wrapped.
struct SimulationClock: Sendable {
    /// Time since the reference instant.
    let now: @Sendable () -> Duration
    /// Sleeps until the given offset; throws `CancellationError` when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let reference = clock.now
        now = { reference.duration(to: clock.now) }
        sleepUntil = { offset in try await clock.sleep(until: reference.advanced(by: offset), tolerance: nil) }
    }
}
