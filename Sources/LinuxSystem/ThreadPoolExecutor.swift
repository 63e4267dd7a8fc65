// The worker threads that run the jobs of tasks without an actor (see ThreadExecutors.swift).
#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#endif

/// The executor of tasks that have no actor: `threads` worker threads taking jobs first in,
/// first out (priorities are not ordered), plus delayed jobs through a ``TimerThread``.
final class ThreadPoolExecutor: TaskExecutor, Sendable {
    private let queue = ThreadCondition(JobQueue<QueuedJob>())
    let timers: TimerThread
    private let ownsTimers: Bool
    private let threads: [LoopThread]

    /// Starts `threads` worker threads (`gnss-worker-N`) and a timer thread for delayed jobs.
    public convenience init(threads: Int) throws(SystemError) {
        try self.init(threads: threads, timers: TimerThread(), ownsTimers: true)
    }

    init(threads count: Int, timers: TimerThread, ownsTimers: Bool) throws(SystemError) {
        self.timers = timers
        self.ownsTimers = ownsTimers
        let queue = queue
        var threads: [LoopThread] = []
        do throws(SystemError) {
            for index in 0..<max(1, count) {
                threads.append(try LoopThread(name: "gnss-worker-\(index)") {
                    while let job = queue.take() { job.run() }
                })
            }
        } catch {
            queue.close()
            for thread in threads { thread.join() }
            throw error
        }
        self.threads = threads
    }

    deinit {
        queue.close()
    }

    /// How many jobs have waited for their time on this pool's timer thread (for tests).
    var timersScheduled: UInt64 { timers.scheduledCount }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.put(QueuedJob(job: UnownedJob(job), executor: .task(self)))
    }

    /// Stops taking jobs once the queue is empty and waits for the worker threads (and the
    /// timer thread it started) to end. Jobs still waiting for their time are dropped.
    public func shutdown() {
        queue.close()
        for thread in threads { thread.join() }
        if ownsTimers { timers.shutdown() }
    }

    func put(_ job: QueuedJob) {
        queue.put(job)
    }

}

#if compiler(>=6.3)
extension ThreadPoolExecutor: TimerSchedulingExecutor {
    var jobExecutor: JobExecutor { .task(self) }
}
#endif
