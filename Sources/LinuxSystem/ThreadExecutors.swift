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

/// The executor of tasks that have no actor: `threads` worker threads taking jobs first in,
/// first out (priorities are not ordered), plus delayed jobs through a ``TimerThread``.
final class ThreadPoolExecutor: TaskExecutor, Sendable {
    private let queue = ThreadCondition(JobQueue<QueuedJob>())
    fileprivate let timers: TimerThread
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

    fileprivate func put(_ job: QueuedJob) {
        queue.put(job)
    }

}

#if compiler(>=6.3)
extension ThreadPoolExecutor: SchedulingExecutor {
    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        timers.schedule(UnownedJob(job), after: delay, clock: clock, on: .task(self))
    }

    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        timers.schedule(UnownedJob(job), after: clock.now.duration(to: instant), clock: clock, on: .task(self))
    }
}
#endif

/// The main actor's executor: runs its jobs on the thread that calls ``run()`` (the main
/// thread) until ``stop()``. (On Swift 6.2 only an actor whose executor it is: the main actor keeps
/// libdispatch's main queue there.)
final class MainThreadExecutor: SerialExecutor, Sendable {
    private let queue = ThreadCondition(JobQueue<QueuedJob>())
    private let timers: TimerThread
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

    fileprivate func put(_ job: QueuedJob) {
        queue.put(job)
    }
}

#if compiler(>=6.3)
extension MainThreadExecutor: MainExecutor, SchedulingExecutor {
    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        timers.schedule(UnownedJob(job), after: delay, clock: clock, on: .main(self))
    }

    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        timers.schedule(UnownedJob(job), after: clock.now.duration(to: instant), clock: clock, on: .main(self))
    }
}
#endif

/// Delayed jobs: one thread that sleeps until the earliest deadline (on `CLOCK_MONOTONIC`), or
/// with no timeout while none is pending, then hands due jobs to their executors.
final class TimerThread: Sendable {
    private let pending = ThreadCondition(DeadlineQueue<TimerEntry>())
    private let thread: LoopThread

    init() throws(SystemError) {
        let pending = pending
        thread = try LoopThread(name: "gnss-timers") {
            while let due = pending.takeDue() {
                for entry in due {
                    switch entry {
                    case .job(let job): job.executor.put(job)
                    case .call(_, let body): body()
                    }
                }
            }
        }
    }

    deinit {
        pending.close()
    }

    /// How many jobs and calls have waited here for their time (for tests).
    var scheduledCount: UInt64 { pending.withLock { $0.inserted } }

    /// How many wait now.
    var pendingCount: Int { pending.withLock { $0.count } }

    /// Ends the thread (jobs still waiting for their time are dropped) and waits for it.
    func shutdown() {
        pending.close()
        thread.join()
    }

    /// Queues `job` on `executor` after `delay` of `clock`. Delays of clocks measured in
    /// ``Duration`` (the continuous and suspending clocks) are timed here from now; a delay in
    /// another unit cannot be converted, so such a job runs at once (no such clock exists in this
    /// package).
    fileprivate func schedule<C: Clock>(
        _ job: UnownedJob, after delay: C.Duration, clock: C, on executor: JobExecutor
    ) {
        guard let delay = delay as? Duration else {
            executor.put(QueuedJob(job: job, executor: executor))
            return
        }
        schedule(job, after: delay, on: executor)
    }

    /// Queues `job` on `executor` once `delay` has passed (at once if it is not positive).
    fileprivate func schedule(_ job: UnownedJob, after delay: Duration, on executor: JobExecutor) {
        let queued = QueuedJob(job: job, executor: executor)
        guard delay > .zero else {
            executor.put(queued)
            return
        }
        pending.schedule(.job(queued), at: MonotonicInstant.now().advanced(by: delay))
    }

    /// Calls `body` on the timer thread once `deadline` has come (short work only: resuming a
    /// continuation); the number returned cancels it.
    func call(at deadline: MonotonicInstant, _ body: @escaping @Sendable () -> Void) -> UInt64 {
        pending.withLock { pending in
            let id = pending.inserted
            let earlier = pending.earliest.map { deadline < $0 } ?? true
            pending.insert(.call(id: id, body), at: deadline)
            if earlier { self.pending.signalOne() }
            return id
        }
    }

    /// Drops the call `id` if it has not been made: no wake-up is left behind for it. (The timer
    /// thread sleeps until the earliest deadline; when that was this call's, it is woken now to
    /// sleep until the next one, rather than later, for nothing, while the process may be idle.)
    func cancelCall(_ id: UInt64) {
        pending.withLock { pending in
            if pending.remove(where: { if case .call(id, _) = $0 { true } else { false } }) {
                self.pending.signalOne()
            }
        }
    }
}

/// What the timer thread waits for: a delayed job, or a call (a ``TimerThreadClock`` sleep's end).
fileprivate enum TimerEntry: @unchecked Sendable {
    // The job's handle is passed between threads and run once, as QueuedJob's.
    case job(QueuedJob)
    case call(id: UInt64, @Sendable () -> Void)
}

/// A job and the executor that runs it.
fileprivate struct QueuedJob: @unchecked Sendable {
    // An UnownedJob is handed from thread to thread and run exactly once.
    let job: UnownedJob
    let executor: JobExecutor

    func run() {
        switch executor {
        case .task(let pool): job.runSynchronously(on: pool.asUnownedTaskExecutor())
        case .main(let main): job.runSynchronously(on: main.asUnownedSerialExecutor())
        }
    }
}

fileprivate enum JobExecutor: Sendable {
    case task(ThreadPoolExecutor)
    case main(MainThreadExecutor)

    func put(_ job: QueuedJob) {
        switch self {
        case .task(let pool): pool.put(job)
        case .main(let main): main.put(job)
        }
    }
}

/// First in, first out, with `close()` for shutdown.
struct JobQueue<Element> {
    private var items: [Element] = []
    private var head = 0
    private(set) var closed = false

    var isEmpty: Bool { head == items.count }

    mutating func append(_ item: Element) {
        items.append(item)
    }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    mutating func close() {
        closed = true
    }
}

/// Items ordered by deadline (ties in the order they came), as a binary min-heap.
struct DeadlineQueue<Element> {
    private struct Entry {
        let deadline: MonotonicInstant
        let sequence: UInt64
        let item: Element

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0
    private(set) var closed = false

    var count: Int { heap.count }
    /// How many items were ever inserted.
    var inserted: UInt64 { nextSequence }
    /// The earliest deadline, if any.
    var earliest: MonotonicInstant? { heap.first?.deadline }

    mutating func insert(_ item: Element, at deadline: MonotonicInstant) {
        heap.append(Entry(deadline: deadline, sequence: nextSequence, item: item))
        nextSequence += 1
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the items due at `now`, earliest first.
    mutating func removeDue(at now: MonotonicInstant) -> [Element] {
        var due: [Element] = []
        while let first = heap.first, first.deadline <= now {
            due.append(first.item)
            let last = heap.removeLast()
            guard !heap.isEmpty else { break }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
                if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return due
    }

    /// Removes the items `predicate` picks (linear, then the heap is made again: for the few items
    /// a timer thread holds); true when that moved the earliest deadline (a wait until it is stale).
    @discardableResult
    mutating func remove(where predicate: (Element) -> Bool) -> Bool {
        let kept = heap.filter { !predicate($0.item) }
        guard kept.count != heap.count else { return false }
        let earliestBefore = earliest
        heap = []
        for entry in kept.sorted(by: { $0.precedes($1) }) { heap.append(entry) }
        return earliest != earliestBefore
    }

    mutating func close() {
        closed = true
    }
}

/// A point on `CLOCK_MONOTONIC`, in nanoseconds.
struct MonotonicInstant: Comparable, Hashable, Sendable {
    let nanoseconds: Int64

    static func now() -> MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    func advanced(by duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.clampedNanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    var time: timespec {
        timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }

    static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}

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
    fileprivate func wait(until deadline: MonotonicInstant?) {
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

    fileprivate func waitHeld<T>(_ body: (inout State) -> WaitStep<T>) -> T {
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

fileprivate enum WaitStep<T> {
    case done(T)
    case wait(until: MonotonicInstant?)
}

extension ThreadCondition {
    func put<Element>(_ item: Element) where State == JobQueue<Element> {
        withLock { queue in
            queue.append(item)
            signalOne()
        }
    }

    /// The next item, waiting for one; nil once closed and drained.
    func take<Element>() -> Element? where State == JobQueue<Element> {
        waitHeld { queue in
            if let item = queue.popFirst() { return .done(item) }
            return queue.closed ? .done(nil) : .wait(until: nil)
        }
    }

    func close<Element>() where State == JobQueue<Element> {
        withLock(notify: true) { $0.close() }
    }
}

extension ThreadCondition where State == DeadlineQueue<TimerEntry> {
    fileprivate func schedule(_ job: TimerEntry, at deadline: MonotonicInstant) {
        withLock { pending in
            let earlier = pending.earliest.map { deadline < $0 } ?? true
            pending.insert(job, at: deadline)
            // Only a new earliest deadline changes how long the timer thread sleeps.
            if earlier { signalOne() }
        }
    }

    /// The jobs that are due, waiting until some are; nil once closed.
    fileprivate func takeDue() -> [TimerEntry]? {
        waitHeld { pending in
            if pending.closed { return .done(nil) }
            let due = pending.removeDue(at: .now())
            if !due.isEmpty { return .done(due) }
            return .wait(until: pending.earliest)
        }
    }

    fileprivate func close() {
        withLock(notify: true) { $0.close() }
    }
}
