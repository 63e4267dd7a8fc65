// The main actor's jobs on the main thread (see ThreadExecutors.swift).
#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#endif
internal import Glibc

/// The main actor's executor: runs its jobs on the thread that calls ``run()`` (the main
/// thread) until ``stop()``. (On Swift 6.2 only an actor whose executor it is: the main actor keeps
/// libdispatch's main queue there.)
final class MainThreadExecutor: SerialExecutor, Sendable {
    private let queue = ThreadCondition(JobQueue<QueuedJob>())
    let timers: TimerThread
    private let runner = ThreadCondition<pthread_t?>(nil)

    init(timers: TimerThread) {
        self.timers = timers
    }

    /// Runs main-actor jobs on the calling thread until ``stop()``.
    public func run() {
        runner.withLock { $0 = pthread_self() }
        while let job = queue.take() { job.run() }
        runner.withLock { $0 = nil }
    }

    public func runUntil(_ condition: () -> Bool) {
        runner.withLock { $0 = pthread_self() }
        while !condition(), let job = queue.take() { job.run() }
        runner.withLock { $0 = nil }
    }

    /// Makes ``run()`` return once the jobs already queued have run.
    public func stop() {
        queue.close()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.put(QueuedJob(job: UnownedJob(job), executor: .main(self)))
    }

    public func isIsolatingCurrentContext() -> Bool? {
        runner.withLock { runner in runner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    func put(_ job: QueuedJob) {
        queue.put(job)
    }
}

#if compiler(>=6.3)
extension MainThreadExecutor: MainExecutor, TimerSchedulingExecutor {
    var jobExecutor: JobExecutor { .main(self) }
}
#endif
