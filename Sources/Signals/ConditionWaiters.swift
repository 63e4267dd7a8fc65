/// Tasks suspended until a condition on someone else's state holds, each let go early when its
/// task is cancelled (a test's time limit then ends a wait that would never end).
///
/// The owner of the state calls ``resumeAll()`` after a change that made the condition hold. A
/// waiter parks itself first and asks the condition after, so a change between the two cannot be
/// missed: either the waiter sees the condition hold, or the change's ``resumeAll()`` finds it
/// parked. Whoever takes a waiter out of the table resumes it, so it is resumed once.
package final class ConditionWaiters: Sendable {
    private struct Parked {
        var waiting: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var lastID: UInt64 = 0
    }

    private let parked = Lock(Parked())

    package init() {}

    /// Suspends until `condition()` is true or the task is cancelled. `condition` takes the
    /// owner's lock itself; it must not be called with a lock held that ``resumeAll()`` needs. A
    /// ``resumeAll()`` while the condition does not hold (an owner that resumes on every change,
    /// or one waiter's change waking another's) only makes the waiter look again.
    package func wait(until condition: () -> Bool) async {
        if condition() { return }
        while !Task.isCancelled {
            if await park(until: condition) || condition() { return }
        }
    }

    /// Resumes every waiting task; call it after a change that may have made a condition hold.
    package func resumeAll() {
        let all = parked.withLock { parked -> [CheckedContinuation<Bool, Never>] in
            defer { parked.waiting.removeAll() }
            return Array(parked.waiting.values)
        }
        for continuation in all { continuation.resume(returning: false) }
    }

    /// Parks until a ``resumeAll()`` or the task's cancellation; true when the look after parking
    /// found the condition holding already.
    private func park(until condition: () -> Bool) async -> Bool {
        let id = parked.withLock { parked -> UInt64 in
            parked.lastID += 1
            return parked.lastID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                parked.withLock { $0.waiting[id] = continuation }
                if condition() {
                    resume(id, holds: true)
                } else if Task.isCancelled {
                    resume(id, holds: false)
                }
            }
        } onCancel: {
            resume(id, holds: false)
        }
    }

    private func resume(_ id: UInt64, holds: Bool) {
        parked.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: holds)
    }
}
