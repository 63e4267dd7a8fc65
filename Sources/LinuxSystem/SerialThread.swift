// Blocking calls off Swift's cooperative pool without libdispatch: a serial DispatchQueue's
// worker would arm libdispatch's once-a-second workqueue monitor for the rest of the process.

/// A thread of its own that runs blocking calls one at a time, in the order they came. It starts
/// with the first call, sleeps with no timeout while there is nothing to do, and ends once the
/// calls queued before the object was released have run.
public final class SerialThread: Sendable {
    /// The thread's name (at most 15 bytes are kept), for `ps -L` and errors.
    public let name: String
    private let queue = ThreadCondition(JobQueue<@Sendable () -> Void>())
    private let started = ThreadCondition(false)

    public init(name: String) {
        self.name = name
    }

    deinit {
        queue.close()
    }

    /// Queues `body` to run on the thread; throws if the thread cannot be started
    /// (`pthread_create`).
    public func async(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
        try start()
        queue.put(body)
    }

    /// Runs `body` on the thread and returns its result; throws what `body` throws, or a
    /// ``SystemError`` if the thread cannot be started.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            do {
                try async { continuation.resume(with: Result { try body() }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    private func start() throws(SystemError) {
        try started.withLock { started throws(SystemError) in
            guard !started else { return }
            let queue = queue
            // The thread holds the queue, not this object: releasing the object closes the
            // queue, and the thread ends once it has drained it.
            let thread = try LoopThread(name: name) {
                while let body = queue.take() { body() }
            }
            thread.detach()
            started = true
        }
    }
}
