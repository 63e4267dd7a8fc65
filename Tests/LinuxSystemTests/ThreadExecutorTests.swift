#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) import _Concurrency
#endif
import Foundation
import Glibc
@testable import LinuxSystem
import TestSupport
import Testing

/// The name of the calling thread (`/proc/thread-self/comm`).
private func currentThreadName() -> String {
    (try? FileSystem.contents(of: "/proc/thread-self/comm")).map {
        String(decoding: $0, as: UTF8.self).trimmingSuffix(while: \.isNewline)
    } ?? "?"
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, predicate(last) { text.removeLast() }
        return text
    }
}

private actor Counter {
    var value = 0
    func increment() -> Int {
        value += 1
        return value
    }
}

/// An actor whose jobs run on a ``MainThreadExecutor``.
private actor OnExecutor {
    nonisolated let executor: MainThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(_ executor: MainThreadExecutor) {
        self.executor = executor
    }

    func whereAmI() -> (thread: String, isolating: Bool?) {
        (currentThreadName(), executor.isIsolatingCurrentContext())
    }
}

@Suite("Job and deadline queues")
struct ExecutorQueueTests {
    @Test("the job queue is first in, first out across its compaction")
    func fifo() {
        var queue = JobQueue<Int>()
        var taken: [Int] = []
        for value in 0..<300 { queue.append(value) }
        for _ in 0..<150 { taken.append(queue.popFirst() ?? -1) }
        for value in 300..<400 { queue.append(value) }
        while let value = queue.popFirst() { taken.append(value) }
        #expect(taken == Array(0..<400))
        #expect(queue.isEmpty && queue.popFirst() == nil)
    }

    @Test("deadlines come out earliest first, ties in the order they went in, only once due")
    func deadlines() {
        var queue = DeadlineQueue<String>()
        let base = MonotonicInstant(nanoseconds: 1_000)
        let order: [(String, Int64)] = [("c", 30), ("a", 10), ("b1", 20), ("e", 50), ("b2", 20), ("d", 40)]
        for (name, offset) in order { queue.insert(name, at: MonotonicInstant(nanoseconds: base.nanoseconds + offset)) }
        #expect(queue.earliest == MonotonicInstant(nanoseconds: 1_010))
        #expect(queue.removeDue(at: MonotonicInstant(nanoseconds: 1_009)).isEmpty)
        #expect(queue.removeDue(at: MonotonicInstant(nanoseconds: 1_020)) == ["a", "b1", "b2"])
        #expect(queue.removeDue(at: MonotonicInstant(nanoseconds: 1_045)) == ["c", "d"])
        #expect(queue.count == 1 && queue.earliest == MonotonicInstant(nanoseconds: 1_050))
        #expect(queue.removeDue(at: MonotonicInstant(nanoseconds: .max)) == ["e"])
        #expect(queue.earliest == nil)
    }

    @Test("removing items tells whether the earliest deadline moved (the timer thread's wait is then stale)")
    func removal() {
        var queue = DeadlineQueue<String>()
        for (name, at) in [("a", 10), ("b", 20), ("c", 30)] as [(String, Int64)] {
            queue.insert(name, at: MonotonicInstant(nanoseconds: at))
        }
        #expect(!queue.remove { $0 == "b" })
        #expect(!queue.remove { $0 == "none" })
        #expect(queue.earliest == MonotonicInstant(nanoseconds: 10))
        #expect(queue.remove { $0 == "a" })
        #expect(queue.earliest == MonotonicInstant(nanoseconds: 30))
        #expect(queue.remove { $0 == "c" })
        #expect(queue.earliest == nil && queue.count == 0)
    }

    @Test("a deadline past the end of time saturates instead of overflowing")
    func saturates() {
        let late = MonotonicInstant(nanoseconds: .max - 5).advanced(by: .seconds(1))
        #expect(late.nanoseconds == .max)
    }
}

@Suite("Thread executors")
struct ThreadExecutorTests {
    @Test("tasks, actors and task groups run on the pool's threads and all finish")
    func tasks() async throws {
        let pool = try ThreadPoolExecutor(threads: 2)
        defer { pool.shutdown() }
        let counter = Counter()
        let names = await Task(executorPreference: pool) {
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        _ = await counter.increment()
                        return currentThreadName()
                    }
                }
                var names: Set<String> = []
                for await name in group { names.insert(name) }
                return names
            }
        }.value
        #expect(await counter.value == 200)
        #expect(names.isSubset(of: ["gnss-worker-0", "gnss-worker-1"]), "\(names)")
    }

    // A task executor preference alone routes sleeps to the pool on Swift 6.3 (the pool is a
    // SchedulingExecutor); on 6.2 only the installed runtime hooks do (ThreadExecutorInstallTests).
    #if compiler(>=6.3)
    @Test("sleeps go through the pool's timer thread and do not return early",
          arguments: [SleepKind.taskSleepFor, .taskSleepNanoseconds, .continuousClock, .suspendingClock])
    func sleeps(kind: SleepKind) async throws {
        let pool = try ThreadPoolExecutor(threads: 2)
        defer { pool.shutdown() }
        let before = pool.timersScheduled
        let elapsed = try await Task(executorPreference: pool) {
            let start = ContinuousClock.now
            try await kind.sleep(.milliseconds(20))
            return (ContinuousClock.now - start, currentThreadName())
        }.value
        #expect(elapsed.0 >= .milliseconds(20))
        #expect(elapsed.1.hasPrefix("gnss-worker-"))
        #expect(pool.timersScheduled == before + 1)
    }
    #endif

    @Test("a cancelled sleep ends at once and the task goes on")
    func cancelledSleep() async throws {
        let pool = try ThreadPoolExecutor(threads: 2)
        defer { pool.shutdown() }
        let task = Task(executorPreference: pool) {
            do {
                try await Task.sleep(for: .seconds(3600))
                return "slept"
            } catch {
                return "cancelled"
            }
        }
        task.cancel()
        #expect(await task.value == "cancelled")
    }

    @Test("a main executor runs its actor's jobs on the thread that runs it, until stopped")
    func mainExecutor() async throws {
        let timers = try TimerThread()
        defer { timers.shutdown() }
        let main = MainThreadExecutor(timers: timers)
        let thread = try LoopThread(name: "test-main") { main.run() }
        let actor = OnExecutor(main)
        let seen = await actor.whereAmI()
        #expect(seen.thread == "test-main")
        #expect(seen.isolating == true)
        #expect(main.isIsolatingCurrentContext() == false)
        main.stop()
        thread.join()
    }

    @Test("a serial thread runs calls in order on one thread, and reports what they throw")
    func serialThread() async throws {
        struct Failure: Error, Equatable {}
        let serial = SerialThread(name: "test-serial")
        let order = ThreadCondition<[Int]>([])
        for value in 0..<50 {
            try serial.async { order.withLock { $0.append(value) } }
        }
        let name = try await serial.run { currentThreadName() }
        #expect(name == "test-serial")
        #expect(order.withLock { $0 } == Array(0..<50))
        await #expect(throws: Failure.self) { try await serial.run { throw Failure() } }
    }
}

enum SleepKind: String, CustomTestStringConvertible, Sendable {
    case taskSleepFor, taskSleepNanoseconds, continuousClock, suspendingClock

    var testDescription: String { rawValue }

    func sleep(_ duration: Duration) async throws {
        switch self {
        case .taskSleepFor: try await Task.sleep(for: duration)
        case .taskSleepNanoseconds: try await Task.sleep(nanoseconds: UInt64(duration.clampedNanoseconds))
        case .continuousClock: try await ContinuousClock().sleep(for: duration)
        case .suspendingClock: try await SuspendingClock().sleep(for: duration)
        }
    }
}

@Suite("Thread executors installed for the process")
struct ThreadExecutorInstallTests {
    @Test("every sleep, actor, task group and detached task runs on our threads; no other thread is made")
    func probe() throws {
        let run = try CommandRun.run(executable: TestPaths.builtExecutable("thread-executors-probe"), [])
        #expect(run.status == 0, "\(run.err)")
        var seen: [String: String] = [:]
        for line in run.out.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { seen[String(parts[0])] = String(parts[1]) }
        }
        let workers: Set<String> = ["gnss-worker-0", "gnss-worker-1"]
        var kinds = ["start", "timer-thread-clock", "actor", "detached"]
        #if compiler(>=6.3)
        // Swift 6.2 sends these to libdispatch whatever the executors (ThreadExecutors.swift says why).
        kinds += ["task-sleep-for", "task-sleep-nanoseconds", "continuous-clock", "suspending-clock"]
        #expect(seen["main-actor"] == "thread-executor", "the main actor's job ran on \(seen["main-actor"] ?? "nothing")")
        #endif
        for kind in kinds {
            #expect(seen[kind].map(workers.contains) == true, "\(kind) ran on \(seen[kind] ?? "nothing")")
        }
        #expect(seen["timer-thread-clock-slept-enough"] == "true")
        #expect(seen["cancelled-waiting-sleep"] == "cancelled")
        #expect(seen["timers-pending"] == "0")
        let group = Set((seen["task-group"] ?? "").split(separator: ",").map(String.init))
        #expect(!group.isEmpty && group.isSubset(of: workers), "\(group)")
        #expect(seen["cancelled-sleep"] == "cancelled")
        // The main thread, two workers, the timer thread: no libdispatch worker (its workqueue monitor
        // would wake the process once a second for good; its threads take the name of the thread that
        // started them, so one would show as a second gnss-worker-N). Under qemu-user (the aarch64 run,
        // scripts/test-aarch64.sh sets GNSSHAT_EMULATED) the process also shows qemu's own RCU thread.
        var threads = (seen["threads"] ?? "").split(separator: ",").map(String.init)
        if ProcessInfo.processInfo.environment["GNSSHAT_EMULATED"] == "qemu-user" {
            threads.removeAll { $0 == "call_rcu" }
        }
        #expect(threads == ["gnss-timers", "gnss-worker-0", "gnss-worker-1", "thread-executor"], "\(run.out)")
    }
}

@Suite("Scheduling priority")
struct SchedulingPriorityTests {
    @Test("without the privilege every thread is tried, the first errno is thrown and nothing changes")
    func refused() throws {
        let mock = SeamMock()
        let threads = try FileSystem.entries(of: "/proc/self/task").count
        mock.fail("setpriority", with: .permissionDenied, times: 10_000)
        let before = SchedulingPriority.currentNice
        #expect(throws: Errno.permissionDenied) {
            try SeamMock.$current.withValue(mock) { try SchedulingPriority.setNice(-10) }
        }
        // Threads may come and go while the directory is read: at least the ones counted before
        // that are still there were tried.
        #expect(mock.count("setpriority") >= 1 && mock.count("setpriority") <= threads + 64)
        #expect(SchedulingPriority.currentNice == before)
    }
}
