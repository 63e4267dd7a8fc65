/// Tasks suspended until a condition on someone else's state holds, each let go early when its
/// task is cancelled (a test's time limit then ends a wait that would never end).
///
/// The owner of the state calls ``resumeAll()`` after a change that made the condition hold. A
/// waiter parks itself first and asks the condition after, so a change between the two cannot be
/// missed: either the waiter sees the condition hold, or the change's ``resumeAll()`` finds it
/// parked. Whoever takes a waiter out of the table resumes it, so it is resumed once.
package final class ConditionWaiters: Sendable {
    private struct Parked {
        var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var lastID: UInt64 = 0
    }

    private let parked = Lock(Parked())

    package init() {}

    /// Suspends until `condition()` is true or the task is cancelled. `condition` takes the
    /// owner's lock itself; it must not be called with a lock held that ``resumeAll()`` needs.
    package func wait(until condition: () -> Bool) async {
        if condition() { return }
        let id = parked.withLock { parked -> UInt64 in
            parked.lastID += 1
            return parked.lastID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                parked.withLock { $0.waiting[id] = continuation }
                if condition() || Task.isCancelled { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
    }

    /// Resumes every waiting task; call it after a change that made the condition hold.
    package func resumeAll() {
        let all = parked.withLock { parked -> [CheckedContinuation<Void, Never>] in
            defer { parked.waiting.removeAll() }
            return Array(parked.waiting.values)
        }
        for continuation in all { continuation.resume() }
    }

    private func resume(_ id: UInt64) {
        parked.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
    }
}
