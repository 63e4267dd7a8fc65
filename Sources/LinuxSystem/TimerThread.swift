// The one thread that waits for delayed jobs and clock sleeps (see ThreadExecutors.swift).

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
    func schedule<C: Clock>(
        _ job: UnownedJob, after delay: C.Duration, clock: C, on executor: JobExecutor
    ) {
        guard let delay = delay as? Duration else {
            executor.put(QueuedJob(job: job, executor: executor))
            return
        }
        schedule(job, after: delay, on: executor)
    }

    /// Queues `job` on `executor` once `delay` has passed (at once if it is not positive).
    func schedule(_ job: UnownedJob, after delay: Duration, on executor: JobExecutor) {
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
enum TimerEntry: @unchecked Sendable {
    // The job's handle is passed between threads and run once, as QueuedJob's.
    case job(QueuedJob)
    case call(id: UInt64, @Sendable () -> Void)
}

extension ThreadCondition where State == DeadlineQueue<TimerEntry> {
    func schedule(_ job: TimerEntry, at deadline: MonotonicInstant) {
        withLock { pending in
            let earlier = pending.earliest.map { deadline < $0 } ?? true
            pending.insert(job, at: deadline)
            // Only a new earliest deadline changes how long the timer thread sleeps.
            if earlier { signalOne() }
        }
    }

    /// The jobs that are due, waiting until some are; nil once closed.
    func takeDue() -> [TimerEntry]? {
        waitHeld { pending in
            if pending.closed { return .done(nil) }
            let due = pending.removeDue(at: .now())
            if !due.isEmpty { return .done(due) }
            return .wait(until: pending.earliest)
        }
    }

    func close() {
        withLock(notify: true) { $0.close() }
    }
}
