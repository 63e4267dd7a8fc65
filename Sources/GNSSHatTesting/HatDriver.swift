// Drives a simulated hat on a manual clock, deterministically: time moves from one deadline to
// the next (a sleeper's, or the simulated receiver's next event), and only once no byte is in
// flight between host and receiver, so a time-out can never fire for a reply on its way.
public import GNSSHat
import Signals

/// Moves a `ManualClock` for a ``SimulatedHat`` made with `.driven` timing.
///
/// Between two moves it waits until the hat is settled (every byte sent has been processed by
/// the other side). Work that needs no time (a task resuming, a port closing) simply happens
/// before the next move; work that needs time gets it one deadline at a time.
public final class HatDriver: Sendable {
    public let clock: ManualClock
    public let hat: SimulatedHat

    /// The driver's own time limit ran out before an operation finished.
    public struct TimeLimitReached: Error, CustomStringConvertible {
        public var limit: Duration
        public var description: String { "the operation did not finish within \(limit) of simulated time" }
    }

    public init(hat: SimulatedHat, clock: ManualClock) {
        self.hat = hat
        self.clock = clock
    }

    /// The next deadline: the earliest sleeper's or the receiver's next event.
    public var nextDeadline: ManualClock.Instant? {
        let sleeper = clock.nextDeadline
        let event = hat.receiver.timeToNextEvent.map { clock.now.advanced(by: $0) }
        switch (sleeper, event) {
        case let (sleeper?, event?): return min(sleeper, event)
        case let (sleeper?, nil): return sleeper
        case let (nil, event?): return event
        case (nil, nil): return nil
        }
    }

    /// Moves the clock and the receiver, then lets the tasks the move woke run: the driver's own
    /// loop would otherwise keep a thread of the cooperative pool busy and starve them.
    private func move(to instant: ManualClock.Instant) async {
        clock.advance(to: instant)
        hat.receiver.tick()
        for _ in 0..<4 { await Task.yield() }
    }

    /// Moves time forward by `duration`, stopping at every deadline on the way.
    public func advance(by duration: Duration) async {
        let target = clock.now.advanced(by: duration)
        while true {
            await hat.settled()
            guard let next = nextDeadline, next <= target else { break }
            await move(to: next)
        }
        await move(to: target)
        await hat.settled()
    }

    /// Runs `operation` while moving time forward deadline by deadline, until it returns; at most
    /// `limit` of simulated time passes. While nothing is due, the driver only yields, so that
    /// tasks and I/O threads finish what needs no time.
    public func run<T: Sendable>(
        limit: Duration = .seconds(600), _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let result = Lock<Result<T, any Error>?>(nil)
        let task = Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
        }
        let end = clock.now.advanced(by: limit)
        while true {
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            await hat.settled()
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            if let next = nextDeadline, next <= end {
                await move(to: next)
                continue
            }
            if clock.now >= end {
                task.cancel()
                throw TimeLimitReached(limit: limit)
            }
            await Task.yield()
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
