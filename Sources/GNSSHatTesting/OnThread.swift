// Blocking waits tested from two threads: one waits, this one wakes it.
import LinuxSystem

/// `onThread` joined its thread but found no result (a thread that ended without running its
/// body).
public struct ThreadLeftNoResult: Error {}

/// Runs `body` on a thread of its own (a `LoopThread`) while `meanwhile` runs on the calling
/// thread, then joins it and returns what `body` returned (or throws what it threw). `body` may
/// be waiting already when `meanwhile` runs, or not have started yet: a test must pass either way.
/// For blocking calls that another thread ends: an edge wait and the wake that ends it.
public func onThread<T: Sendable>(
    named name: String = "test-waiter", _ body: @escaping @Sendable () throws -> T, meanwhile: () throws -> Void
) throws -> T {
    let result = Lock<Result<T, any Error>?>(nil)
    let thread = try LoopThread(name: name) {
        let outcome = Result { try body() }
        result.withLock { $0 = outcome }
    }
    try meanwhile()
    thread.join()
    guard let outcome = result.withLock({ $0 }) else { throw ThreadLeftNoResult() }
    return try outcome.get()
}
