// The delayed jobs of both executors (Swift 6.3's SchedulingExecutor), written once: they wait on the
// timer thread, then go to the executor that runs them.
#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

/// An executor whose delayed jobs wait on ``timers`` and then run as ``jobExecutor`` says
/// (``ThreadPoolExecutor``, ``MainThreadExecutor``).
protocol TimerSchedulingExecutor: SchedulingExecutor {
    var timers: TimerThread { get }
    /// This executor, as a queued job names it.
    var jobExecutor: JobExecutor { get }
}

extension TimerSchedulingExecutor {
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        timers.schedule(UnownedJob(job), after: delay, clock: clock, on: jobExecutor)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        timers.schedule(UnownedJob(job), after: clock.now.duration(to: instant), clock: clock, on: jobExecutor)
    }
}
#endif
