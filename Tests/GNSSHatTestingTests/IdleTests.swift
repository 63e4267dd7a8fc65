import Dispatch
import GNSSHat
import GNSSHatSimulator
@testable import GNSSHatTesting  // OperationExecutor
import LinuxSystem
import Signals
import Testing

/// A part a test scripts: busy or idle as told, and it says when somebody waits for it to change.
final class ScriptedPart: ActivityReporting {
    private struct State {
        var isIdle: Bool
        var changes: UInt64 = 0
        var waits = 0
        /// Runs on the next read of `activity`, then is gone.
        var onNextRead: (@Sendable () -> Void)?
    }

    private let state: Lock<State>
    private let changed = ConditionWaiters()
    private let waited = ConditionWaiters()

    init(idle: Bool) {
        state = Lock(State(isIdle: idle))
    }

    var activity: Activity {
        let (activity, hook) = state.withLock { state in
            defer { state.onNextRead = nil }
            return (Activity(isIdle: state.isIdle, changes: state.changes), state.onNextRead)
        }
        hook?()
        return activity
    }

    func waitForActivity(after changes: UInt64) async {
        state.withLock { $0.waits += 1 }
        waited.resumeAll()
        await changed.wait { state.withLock { $0.changes } != changes }
    }

    /// Becomes busy or idle (a change).
    func set(idle: Bool) {
        state.withLock { state in
            state.isIdle = idle
            state.changes &+= 1
        }
        changed.resumeAll()
    }

    /// Runs `body` on the next read of the activity (after the read).
    func onNextRead(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.onNextRead = body }
    }

    /// Suspends until somebody has waited for this part to change `count` times in all.
    func waitUntilWaitedOn(_ count: Int = 1) async {
        await waited.wait { state.withLock { $0.waits } >= count }
    }
}

/// An executor that can hold the jobs given to it until the test lets them run.
final class HeldJobs: TaskExecutor {
    private struct State {
        var holding = false
        var held: [UnownedJob] = []
    }

    private let state = Lock(State())

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let run = state.withLock { state -> Bool in
            if state.holding { state.held.append(job) }
            return !state.holding
        }
        if run { start(job) }
    }

    func hold() {
        state.withLock { $0.holding = true }
    }

    /// Runs the held jobs, and the ones to come at once.
    func release() {
        let held = state.withLock { state -> [UnownedJob] in
            state.holding = false
            defer { state.held.removeAll() }
            return state.held
        }
        for job in held { start(job) }
    }

    private func start(_ job: UnownedJob) {
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Suspends until `part` is idle (or the task is cancelled).
func waitUntilIdle(_ part: some ActivityReporting) async {
    while !Task.isCancelled {
        let activity = part.activity
        if activity.isIdle { return }
        await part.waitForActivity(after: activity.changes)
    }
}

@Suite("Telling when everything is idle", .timeLimit(.minutes(1)))
struct IdleTests {
    static func driver(alsoWaitingFor parts: [any ActivityReporting] = []) throws -> HatDriver {
        let clock = ManualClock()
        let board = try #require(try BoardCatalog.builtIn("simulator"))
        let hat = try SimulatedHat(board: board, clock: clock, connection: .inProcess, timing: .driven)
        return HatDriver(hat: hat, clock: clock, receiver: nil, alsoWaitingFor: parts)
    }

    @Test("the clock is not idle from an advance until the sleeper it woke has taken its wake-up")
    func clockUntilWakeUpTaken() async throws {
        let clock = ManualClock()
        let jobs = HeldJobs()
        let sleeper = Task(executorPreference: jobs) { try await clock.sleep(for: .seconds(1)) }
        await clock.waitForSleepers(1)
        #expect(clock.activity.isIdle, "asleep: nothing to do until time moves")
        jobs.hold()
        clock.advance(by: .seconds(1))
        let woken = clock.activity
        #expect(!woken.isIdle, "the woken sleeper's task has not run yet")
        jobs.release()
        try await sleeper.value
        #expect(clock.activity.isIdle)
        #expect(clock.activity.changes != woken.changes)
    }

    @Test("the driver's executor is not idle from a resumption until the job it made has run")
    func operationsUntilJobRun() async throws {
        let executor = OperationExecutor()
        let parked = Lock<CheckedContinuation<Void, Never>?>(nil)
        let block = DispatchSemaphore(value: 0)
        let task = Task(executorPreference: executor) {
            await withCheckedContinuation { continuation in parked.withLock { $0 = continuation } }
            // The job the resumption made is still running while this waits.
            block.wait()
        }
        await waitUntilIdle(executor)
        try #require(parked.withLock { $0 } != nil, "idle once the task is parked")
        parked.withLock { $0 }?.resume()
        #expect(!executor.activity.isIdle, "resumed: its job is queued or running")
        block.signal()
        await task.value
        await waitUntilIdle(executor)
        #expect(executor.activity.isIdle)
    }

    @Test("settle waits for a busy part, on its change")
    func settleWaitsForBusyPart() async throws {
        let part = ScriptedPart(idle: false)
        let driver = try Self.driver(alsoWaitingFor: [part])
        let settled = Lock(false)
        let settling = Task {
            await driver.settle()
            settled.withLock { $0 = true }
        }
        await part.waitUntilWaitedOn()
        #expect(!settled.withLock { $0 }, "the part is still busy")
        part.set(idle: true)
        await settling.value
        #expect(settled.withLock { $0 })
        await driver.hat.shutdown()
    }

    @Test("work that moves between two parts while the driver looks is not missed: it looks twice")
    func workMovingBetweenParts() async throws {
        let first = ScriptedPart(idle: true)
        let second = ScriptedPart(idle: true)
        let driver = try Self.driver(alsoWaitingFor: [first, second])
        // The hat and the clock idle first, so that the next look is the first of a settle.
        await driver.settle()
        // Read after `first`: as it is read, it hands work to `first`, which was read idle already.
        second.onNextRead { first.set(idle: false) }
        // The work takes one wait on `first` to finish.
        let worker = Task {
            await first.waitUntilWaitedOn()
            first.set(idle: true)
        }
        await driver.settle()
        #expect(first.activity.isIdle, "one look found every part idle; a second finds the work and waits for it")
        worker.cancel()
        await worker.value
        await driver.hat.shutdown()
    }

    @Test("advance(by:) moves no time once its task is cancelled")
    func advanceCancelled() async throws {
        let part = ScriptedPart(idle: false)
        let driver = try Self.driver(alsoWaitingFor: [part])
        let advancing = Task { await driver.advance(by: .seconds(10)) }
        await part.waitUntilWaitedOn()
        advancing.cancel()
        await advancing.value
        #expect(driver.clock.now == ManualClock.Instant(offset: .zero))
        await driver.hat.shutdown()
    }

    @Test("run waits for its operation after each wake-up: it moves time only to the deadlines it sleeps for")
    func runMovesToTheOperationsDeadlines() async throws {
        let driver = try Self.driver()
        let clock = driver.clock
        let seen = try await driver.run(limit: .seconds(100)) {
            var seen: [Duration] = []
            for step in 1...5 {
                try await clock.sleep(for: .seconds(step))
                // Work between the wake-up and the next sleep, on other tasks of the operation's.
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<10 { group.addTask { _ = (0..<1000).reduce(0, +) } }
                }
                seen.append(clock.now.offset)
            }
            return seen
        }
        #expect(seen == [.seconds(1), .seconds(3), .seconds(6), .seconds(10), .seconds(15)])
        #expect(clock.now.offset == .seconds(15), "no time moved after the operation returned")
        await driver.hat.shutdown()
    }
}
