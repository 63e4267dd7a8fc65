// Swift concurrency on threads of our own. The default executors hand every job and every
// `Task.sleep` to libdispatch, whose workqueue monitor then wakes the process once a second for
// as long as it lives, listeners or not. A service that must not wake while nobody watches runs
// its tasks here instead: a few worker threads and a timer thread that sleep on condition
// variables with no timeout while there is nothing to do.
//
// Swift 6.3 installs them as the process's executors through an executor factory. Swift 6.2 (Debian's
// toolchain, which builds the aarch64 binary) has no factory: there the runtime's global-executor hook
// hands the pool every job of a task without an actor, but `Task.sleep` and the standard clocks'
// sleeps still wait on libdispatch's timers, and main-actor jobs go to libdispatch's main queue. So
// the package's own sleeps wait on ``TimerThreadClock`` (this timer thread on either toolchain), and
// nothing in gnss-hat hops to the main actor.
#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#endif
internal import CLinuxShims
internal import Glibc

/// Replaces Swift concurrency's default and main executors with ``ThreadPoolExecutor`` and
/// ``MainThreadExecutor`` for the whole process.
public enum ThreadExecutors {
    /// Installs the executors (Swift 6.3's `_createExecutors`, an experimental runtime interface; on
    /// Swift 6.2 the runtime's global-executor hook, see the file's header). Call it once, first thing in a synchronous `main.swift`, before any task exists; later
    /// calls do nothing. Starts `workers` threads (default: one per online processor, at least
    /// two) and the timer thread; throws if a thread cannot be started.
    public static func install(workers: Int? = nil) throws(SystemError) {
        let installed = try Installation.shared.withLock { installation throws(SystemError) -> Bool in
            guard installation == nil else { return false }
            let timers = try TimerThread()
            let count = workers ?? max(2, Int(sysconf(CInt(_SC_NPROCESSORS_ONLN))))
            let pool = try ThreadPoolExecutor(threads: count, timers: timers, ownsTimers: false)
            installation = Installation(pool: pool, main: MainThreadExecutor(timers: timers))
            return true
        }
        guard installed else { return }
        #if compiler(>=6.3)
        _createExecutors(factory: Factory.self)
        #else
        RuntimeHooks.install()
        #endif
    }

    /// Runs `body` as a task and serves the main actor on the calling thread (the main thread)
    /// until `body` returns; returns its result. Needs ``install(workers:)`` first.
    public static func runMain<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) -> Result {
        let main = Factory.installed.main
        let result = ThreadCondition<Result?>(nil)
        Task.detached {
            let value = await body()
            result.withLock { $0 = value }
            main.stop()
        }
        main.run()
        // `stop()` comes after the result is stored, so it is there.
        guard let value = result.withLock({ $0 }) else { preconditionFailure("the main task ended without a result") }
        return value
    }

    fileprivate struct Installation: @unchecked Sendable {
        // Written once under the lock in `install`, read only after it.
        static let shared = ThreadCondition<Installation?>(nil)
        let pool: ThreadPoolExecutor
        let main: MainThreadExecutor
    }

    /// The installed pool's timer thread, if ``install(workers:)`` has run.
    static var timers: TimerThread? {
        Installation.shared.withLock { $0?.pool.timers }
    }

    /// How many delayed jobs and clock sleeps the installed timer thread holds (0 before
    /// ``install(workers:)``): none while the process is idle.
    public static var pendingTimers: Int {
        timers?.pendingCount ?? 0
    }

    fileprivate enum Factory {
        static var installed: Installation {
            guard let installation = Installation.shared.withLock({ $0 }) else {
                preconditionFailure("ThreadExecutors.install() has not run")
            }
            return installation
        }
    }
}

#if compiler(>=6.3)
extension ThreadExecutors.Factory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { installed.main }
    static var defaultExecutor: any TaskExecutor { installed.pool }
}
#else
/// Swift 6.2: the runtime's global-executor hook sends the jobs of tasks without an actor or a
/// preference to the installed pool, as the 6.3 factory's default executor receives them.
private enum RuntimeHooks {
    static func install() {
        cshim_install_global_executor_hook { job in
            let pool = ThreadExecutors.Factory.installed.pool
            // The runtime's `Job *` as the standard library's handle of it (a struct of that one pointer).
            pool.put(QueuedJob(job: unsafeBitCast(job, to: UnownedJob.self), executor: .task(pool)))
        }
    }
}
#endif
