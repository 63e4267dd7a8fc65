// A mutex and a condition variable on CLOCK_MONOTONIC around a value, for threads that sleep until
// there is work.
internal import Glibc

/// A value guarded by a `pthread_mutex_t` with a `pthread_cond_t` on `CLOCK_MONOTONIC`, for
/// threads that sleep until there is work: the waits have no timeout unless a deadline is
/// pending, so an idle thread never wakes.
final class ThreadCondition<State>: @unchecked Sendable {
    // All access to `state` holds `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the state locked; wakes every waiter if `notify`.
    func withLock<T, E: Error>(notify: Bool = false, _ body: (inout State) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer {
            if notify { pthread_cond_broadcast(condition) }
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Waits (the lock held) until woken or `deadline` passes; nil waits with no timeout.
    private func wait(until deadline: MonotonicInstant?) {
        if let deadline {
            var time = deadline.time
            pthread_cond_timedwait(condition, mutex, &time)
        } else {
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Wakes one waiter (the lock held).
    func signalOne() {
        pthread_cond_signal(condition)
    }

    func waitHeld<T>(_ body: (inout State) -> WaitStep<T>) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            switch body(&state) {
            case .done(let value): return value
            case .wait(let deadline): wait(until: deadline)
            }
        }
    }
}

enum WaitStep<T> {
    case done(T)
    case wait(until: MonotonicInstant?)
}
