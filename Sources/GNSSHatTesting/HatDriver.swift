// Drives a simulated hat on a manual clock, deterministically: time moves from one deadline to
// the next (a sleeper's, or the simulated receiver's next event), and only once no byte is in
// flight between host and receiver and the Receiver's power sequence is not working, so that a
// time-out can never fire for a reply on its way and time never jumps over work in progress.
public import GNSSHat
public import GNSSHatSimulator
import LinuxSystem
import Signals

/// Moves a `ManualClock` for a ``SimulatedHat`` made with `.driven` timing.
public final class HatDriver: Sendable {
    public let clock: ManualClock
    public let hat: SimulatedHat
    /// The Receiver on the hat, whose power sequence the driver waits for.
    public let receiver: Receiver?

    /// How many times the driver yields, with nothing due and nothing working, before it
    /// concludes that an operation is waiting for time (tasks woken by the clock get that long
    /// to act).
    static let idleYields = 10_000

    /// The driver's own time limit ran out before an operation finished.
    public struct TimeLimitReached: Error, CustomStringConvertible {
        public var limit: Duration
        public var description: String { "the operation did not finish within \(limit) of simulated time" }
    }

    public init(hat: SimulatedHat, clock: ManualClock, receiver: Receiver? = nil) {
        self.hat = hat
        self.clock = clock
        self.receiver = receiver
    }

    /// The next deadline: the earliest sleeper's, the simulated receiver's next event, or the
    /// end of a wait the Receiver's power sequence has begun (its sleeper may not be registered
    /// with the clock yet).
    public var nextDeadline: ManualClock.Instant? {
        let now = clock.now
        let candidates = [
            clock.nextDeadline,
            hat.receiver.timeToNextEvent.map { now.advanced(by: $0) },
            receiver?.timeToNextDeadline.map { now.advanced(by: $0) },
        ]
        return candidates.compactMap { $0 }.min()
    }

    /// Waits until no byte is in flight and the Receiver's power sequence is not working (or
    /// until the task is cancelled).
    public func settle() async {
        while !Task.isCancelled {
            await hat.settled()
            guard receiver?.isBusy == true else { return }
            await Task.yield()
        }
    }

    /// Moves the clock and the receiver, then lets the tasks the move woke run.
    private func move(to instant: ManualClock.Instant) async {
        clock.advance(to: instant)
        hat.receiver.tick()
        for _ in 0..<16 { await Task.yield() }
    }

    /// Moves time forward by `duration`, stopping at every deadline on the way.
    public func advance(by duration: Duration) async {
        let target = clock.now.advanced(by: duration)
        while !Task.isCancelled {
            await settle()
            guard let next = nextDeadline, next <= target else { break }
            await move(to: next)
        }
        await move(to: target)
        await settle()
    }

    /// Runs `operation` while moving time forward deadline by deadline, until it returns; at most
    /// `limit` of simulated time passes. Throws `CancellationError` (and cancels `operation`)
    /// when the calling task is cancelled, so that a test's time limit ends a drive that hangs.
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
        var idle = 0
        while true {
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            if Task.isCancelled {
                task.cancel()
                throw CancellationError()
            }
            await settle()
            if let outcome = result.withLock({ $0 }) { return try outcome.get() }
            if let next = nextDeadline, next <= end {
                idle = 0
                await move(to: next)
                continue
            }
            // Nothing due within the limit and nothing working: give woken tasks time to act,
            // then move to the end of the limit, then give up.
            idle += 1
            if idle < Self.idleYields {
                await Task.yield()
            } else if clock.now < end {
                idle = 0
                await move(to: end)
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
