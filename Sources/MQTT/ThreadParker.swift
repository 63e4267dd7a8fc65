// Where the client's network thread waits out a back-off: a pthread condition variable on the
// monotonic clock, woken early by a stop. (LinuxSystem's thread primitives may take its place.)
internal import Glibc

/// One thread parks here until woken or until a timeout passes (`pthread_cond_timedwait` on
/// `CLOCK_MONOTONIC`). A wake that comes before the park is not lost: the next park returns at once.
final class ThreadParker: @unchecked Sendable {
    // The mutex and condition live at fixed addresses for their whole life, as pthreads requires;
    // `woken` is read and written only with the mutex held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var woken = false

    init() {
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

    /// Waits until ``wake()`` or until `timeout` has passed (`nil`: no limit).
    func park(timeout: Duration?) {
        var deadline = timespec()
        if let timeout {
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let (seconds, attoseconds) = max(timeout, .zero).components
            let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
            deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
            deadline.tv_nsec = nanoseconds % 1_000_000_000
        }
        pthread_mutex_lock(mutex)
        while !woken {
            let result = timeout == nil
                ? pthread_cond_wait(condition, mutex) : pthread_cond_timedwait(condition, mutex, &deadline)
            if result == ETIMEDOUT { break }
        }
        woken = false
        pthread_mutex_unlock(mutex)
    }

    /// Ends the current park, or the next one if none is in progress.
    func wake() {
        pthread_mutex_lock(mutex)
        woken = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }
}
