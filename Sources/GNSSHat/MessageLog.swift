// Waiting for the receiver to say something: the session's recent messages, numbered, and the
// tasks waiting for one that matches, each with a time-out on the injected clock and a worker on
// the session's record of its work.
import GNSSProtocol
import LinuxSystem
import Signals

/// The messages of the current session and the waiters for them.
///
/// Every message gets a sequence number. A waiter asks for the first matching message *after*
/// a mark taken before the command it waits on was sent, so a reply that arrives before the
/// waiter is registered is still found (the last 256 messages are kept).
final class MessageLog: Sendable {
    typealias Found = (sequence: UInt64, message: Message)
    private struct Waiter {
        var after: UInt64
        var matches: @Sendable (Message) -> Bool
        var continuation: CheckedContinuation<Found?, any Error>
        var timeout: Task<Void, Never>?
        /// Whose wait this is: set working again before the waiter is resumed.
        var worker: ReceiverClock.Worker
    }

    private struct State {
        var sequence: UInt64 = 0
        var recent: [(sequence: UInt64, message: Message)] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var closed: (any Error)?
    }

    /// Messages kept at least (for a waiter that looks back to its mark).
    private static let kept = 256
    private let state = Lock(State())
    private let clock: ReceiverClock

    init(clock: ReceiverClock) {
        self.clock = clock
    }

    /// The sequence number of the latest message: wait for messages after it.
    var mark: UInt64 { state.withLock { $0.sequence } }

    /// Starts a new session: forgets old messages, accepts waiters again.
    func open() {
        state.withLock { state in
            state.recent.removeAll()
            state.closed = nil
        }
    }

    /// Records the messages among `outputs` and resumes the waiters they match. A resumed waiter's time-out is
    /// cancelled here, before this returns, so that a time-out can never fire for a reply that
    /// has been read.
    func record(_ outputs: [GNSSDecoder.Output]) {
        guard !outputs.isEmpty else { return }
        let resumed = state.withLock { state -> [(Waiter, Found)] in
            var resumed: [(Waiter, Found)] = []
            for case .message(let message) in outputs {
                state.sequence += 1
                state.recent.append((state.sequence, message))
                for (id, waiter) in state.waiters where waiter.after < state.sequence && waiter.matches(message) {
                    resumed.append((waiter, (state.sequence, message)))
                    state.waiters[id] = nil
                }
            }
            // Trimmed in batches: between `kept` and twice that many stay, and the array's elements
            // move once per `kept` messages rather than on every message (this runs on the path
            // from the receiver's bytes to the subscribers).
            if state.recent.count >= 2 * Self.kept { state.recent.removeFirst(state.recent.count - Self.kept) }
            return resumed
        }
        for (waiter, message) in resumed {
            waiter.timeout?.cancel()
            clock.resume(waiter.worker)
            waiter.continuation.resume(returning: message)
        }
    }

    /// Ends the session: every waiter gets `error`, and so does every later one until `open()`.
    func close(_ error: any Error) {
        let waiters = state.withLock { state -> [Waiter] in
            state.closed = error
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.timeout?.cancel()
            clock.resume(waiter.worker)
            waiter.continuation.resume(throwing: error)
        }
    }

    /// The first message after `mark` that `matches`, or nil when none arrives within `timeout`.
    /// Throws when the session ends first. The wait is `worker`'s (nil: a worker of its own).
    func first(
        after mark: UInt64, within timeout: Duration, as worker: ReceiverClock.Worker? = nil,
        where matches: @escaping @Sendable (Message) -> Bool
    ) async throws -> Message? {
        try await next(after: mark, within: timeout, as: worker, where: matches)?.message
    }

    /// Like ``first(after:within:as:where:)``, with the message's sequence number: a mark to wait
    /// for the message after it (a sequence of replies, read one by one).
    func next(
        after mark: UInt64, within timeout: Duration, as worker: ReceiverClock.Worker? = nil,
        where matches: @escaping @Sendable (Message) -> Bool
    ) async throws -> (sequence: UInt64, message: Message)? {
        let deadline = clock.now() + timeout
        let waiting = worker ?? clock.beginWork()
        clock.wait(waiting, until: deadline)
        defer { worker == nil ? clock.endWork(waiting) : clock.resume(waiting) }
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Found?, any Error>) in
            let early = state.withLock { state -> Result<Found?, any Error>? in
                if let error = state.closed { return .failure(error) }
                if let found = state.recent.first(where: { $0.sequence > mark && matches($0.message) }) {
                    return .success(found)
                }
                state.waiters[id] = Waiter(after: mark, matches: matches, continuation: continuation, worker: waiting)
                return nil
            }
            if let early {
                continuation.resume(with: early)
                return
            }
            let clock = clock
            let timeout = Task { [weak self] in
                do { try await clock.sleepUntil(deadline) } catch { return }
                self?.expire(id)
            }
            let stillWaiting = state.withLock { state -> Bool in
                guard state.waiters[id] != nil else { return false }
                state.waiters[id]?.timeout = timeout
                return true
            }
            if !stillWaiting { timeout.cancel() }
        }
    }

    private func expire(_ id: UInt64) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        clock.resume(waiter.worker)
        waiter.continuation.resume(returning: nil)
    }
}
