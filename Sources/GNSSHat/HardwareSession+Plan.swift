// The session's power plan: the Receiver's aggregate demand in, the receiver's power out. Every
// change (the signal's start, re-plan and stop, a duty cycle's timer, a fix during its acquisition)
// is a job, and the jobs run one at a time, each as the session's power sequence: so no two power
// sequences ever overlap, and a driver of a manual clock sees each one work or wait. The decisions
// are the pure parts' (PowerPlanner, DutyCycleMachine, PowerSaveNegotiation, the aiding machines);
// these files do what they say: the jobs, the choice and the power here, the duty cycle and its timer
// in +DutyCycle, the receiver's power save in +PowerSave, aiding across a supply cut in +Aiding, and
// the message-driven conversations both of those hold with the receiver in +Conversation.
import GNSSProtocol
import LinuxSystem
import Signals

/// One change for the plan to handle.
enum PlanJob: Sendable {
    case start(SignalEmitter<ReceiverEvent>, FixDemand?, Ticket)
    case replan(FixDemand?, Ticket)
    case stop(Ticket)
    /// A duty cycle's timer fired (`generation`: the one armed last, or stale).
    case timer(generation: UInt64, Ticket)
    /// A fix with a position arrived during a duty cycle's acquisition.
    case fix(Fix, Ticket)

    /// The job's place in the session's work until it runs, and who waits for it to finish.
    struct Ticket: Sendable {
        var worker: ReceiverClock.Worker
        var done: CheckedContinuation<Void, any Error>?
    }

    var ticket: Ticket {
        switch self {
        case .start(_, _, let ticket), .replan(_, let ticket), .stop(let ticket), .timer(_, let ticket),
            .fix(_, let ticket):
            ticket
        }
    }

    /// The jobs a signal hook waits for, before they have their ticket.
    enum Request: Sendable {
        case start(SignalEmitter<ReceiverEvent>, FixDemand?)
        case replan(FixDemand?)
        case stop
    }
}

/// The plan's state, under its own lock (read by the Receiver's `powerPlan` at any time).
struct PlanState: Sendable {
    var demand: FixDemand?
    var choice = PowerPlanChoice(plan: .off, reason: "nobody needs a fix", candidates: [])
    var phase = PowerPlanStatus.Phase.off
    var machine: DutyCycleMachine?
    /// Whether the receiver has been powered on (and not yet off) by the plan.
    var hardwareOn = false
    /// Whether the receiver runs its own power save now (and with which commands to leave it).
    var powerSaveLeave: [PowerSaveCommand]?
    var powerSaveRefused = false
    var starts = StartTimeHistory()
    /// The start the current power-on makes.
    var startKind = StartKind.cold
    /// When the receiver last powered off (for the start kind of the next power-on).
    var poweredOffAt: Duration?
    /// Fixes of the current acquisition, by the sequence the duty cycle knows them by.
    var candidates: [Int: Fix] = [:]
    var fixSequence = 0
    var acquiringSince: Duration?
    var timer: Task<Void, Never>?
    var timerGeneration: UInt64 = 0
    var statistics = PowerPlanStatistics()
    var planSince: Duration = .zero
}

/// The state observers of ``Receiver/powerPlans()``.
final class PlanObservers: Sendable {
    private struct State {
        var next = 0
        var continuations: [Int: AsyncStream<PowerPlanStatus>.Continuation] = [:]
        var finished = false
    }

    private let state = Lock(State())

    func add(_ continuation: AsyncStream<PowerPlanStatus>.Continuation, current: PowerPlanStatus) {
        let added = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            state.next += 1
            state.continuations[state.next] = continuation
            // Under the lock: a change that comes meanwhile follows the current status.
            continuation.yield(current)
            return state.next
        }
        guard let added else {
            continuation.yield(current)
            continuation.finish()
            return
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: added) }
        }
    }

    func tell(_ status: PowerPlanStatus) {
        state.withLock { state in
            for continuation in state.continuations.values { continuation.yield(status) }
        }
    }

    func finish() {
        let all = state.withLock { state in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in all { continuation.finish() }
    }
}

extension HardwareSession {
    // MARK: - Jobs

    /// Runs a hook's job and waits until it is done.
    func runPlanJob(_ request: PlanJob.Request) async throws {
        let worker = clock.beginWork()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ticket = PlanJob.Ticket(worker: worker, done: continuation)
            let job: PlanJob =
                switch request {
                case let .start(emitter, demand): .start(emitter, demand, ticket)
                case let .replan(demand): .replan(demand, ticket)
                case .stop: .stop(ticket)
                }
            if case .terminated = planJobs.yield(job) {
                clock.endWork(worker)
                continuation.resume()
            }
        }
    }

    /// Queues a job nobody waits for (a fix, a timer), as work from now until it runs.
    func enqueuePlanJob(_ make: (PlanJob.Ticket) -> PlanJob, worker: ReceiverClock.Worker? = nil) {
        let ticket = PlanJob.Ticket(worker: worker ?? clock.beginWork(), done: nil)
        if case .terminated = planJobs.yield(make(ticket)) { clock.endWork(ticket.worker) }
    }

    func startPlanLoop(_ jobs: AsyncStream<PlanJob>) {
        Task { [weak self] in
            for await job in jobs {
                guard let self else { return }
                await self.run(job)
            }
        }
    }

    private func run(_ job: PlanJob) async {
        let ticket = job.ticket
        do {
            try await asSequence {
                // The ticket's work ends once the sequence's has begun: no gap a driver could see as idle.
                clock.endWork(ticket.worker)
                try await handle(job)
            }
            ticket.done?.resume()
        } catch {
            ticket.done?.resume(throwing: error)
        }
    }

    private func handle(_ job: PlanJob) async throws {
        switch job {
        case let .start(emitter, demand, _):
            setEmitter(emitter)
            plan.withLock { $0.demand = demand }
            corrections.demand(needsRTK: needsRTK(demand))
            // A failure here is the start's: the signal then runs `stop`, which powers off for it.
            do {
                try await apply(choosePlan())
            } catch {
                hardwarePower.noteFailure(error)
                throw error
            }
        case let .replan(demand, _):
            guard emitter != nil else { return }
            plan.withLock { $0.demand = demand }
            corrections.demand(needsRTK: needsRTK(demand))
            let choice = choosePlan()
            guard choice.plan != plan.withLock({ $0.choice.plan }) else {
                updatePlan { $0.choice = choice }
                return
            }
            await failing { try await self.apply(choice) }
        case .stop:
            await endPlan()
        case let .timer(generation, _):
            guard generation == plan.withLock({ $0.timerGeneration }) else { return }
            await failing { try await self.dutyCycle(.timer(now: self.clock.now())) }
        case let .fix(fix, _):
            let sequence = plan.withLock { plan -> Int? in
                guard plan.machine != nil, plan.acquiringSince != nil else { return nil }
                plan.fixSequence += 1
                plan.candidates[plan.fixSequence] = fix
                return plan.fixSequence
            }
            guard let sequence else { return }
            await failing {
                try await self.dutyCycle(.fix(sequence: sequence, accuracy: fix.eph, now: self.clock.now()))
            }
        }
    }

    /// Runs `body`; a failure fails the signal (which then stops the session).
    private func failing(_ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            hardwarePower.noteFailure(error)
            emitter?.fail(error)
        }
    }

    // MARK: - Choosing

    /// Whether `demand` needs RTK corrections on this board (its accuracy at or below the board's threshold).
    func needsRTK(_ demand: FixDemand?) -> Bool {
        board.corrections.needsRTK(accuracy: demand?.horizontalAccuracy)
    }

    func choosePlan() -> PowerPlanChoice {
        let (demand, starts, refused) = plan.withLock { ($0.demand, $0.starts, $0.powerSaveRefused) }
        guard let demand else {
            // A run without any demand (a `hold` or a subscription that says nothing): continuous.
            return PowerPlanChoice(plan: .continuous, reason: "no subscriber said what it needs", candidates: [])
        }
        // A start waits for RTK fixed too when the demand needs it and a source of corrections is attached.
        let rtk = needsRTK(demand) && corrections.status.sourceAttached
        guard let inputs = PowerPlanInputs(
            board: board, measured: starts, aidingAvailable: aidingRestorable, powerSaveRefused: refused,
            needsRTK: rtk)
        else {
            if demand.isContinuous { return PowerPlanner.choose(for: demand, inputs: Self.unknownCurrents) }
            return PowerPlanChoice(
                plan: .continuous, reason: "\(demand): the board gives no currents to plan with", candidates: [])
        }
        return PowerPlanner.choose(for: demand, inputs: inputs)
    }

    /// Planner inputs for a board without current figures (only a continuous demand is planned with them).
    private static let unknownCurrents = PowerPlanInputs(
        acquisitionMilliamps: 0, trackingMilliamps: 0, powerSaveMilliamps: nil, offMilliamps: 0,
        offKeepsBackup: true, startTimes: StartTimes(hot: .seconds(1), aided: .seconds(3), cold: .seconds(30)))

    // MARK: - Applying

    func apply(_ choice: PowerPlanChoice) async throws {
        cancelTimer()
        let now = clock.now()
        updatePlan { plan in
            if plan.choice.plan != choice.plan {
                plan.statistics.add(plan.choice.plan, since: plan.planSince, until: now)
                plan.statistics.changes += 1
                plan.planSince = now
            }
            plan.choice = choice
            plan.machine = nil
        }
        reportFixes(false)
        switch choice.plan {
        case .off:
            return
        case .continuous:
            try await ensureOn(for: .demand)
            await leavePowerSave()
            updatePlan { $0.phase = .on }
        case .receiverPowerSave(let interval):
            try await ensureOn(for: .demand)
            if let refusal = await enterPowerSave(interval: interval) {
                updatePlan { plan in
                    plan.powerSaveRefused = true
                    plan.statistics.powerSaveRefusals += 1
                }
                let fallback = choosePlan()
                notice("the receiver refused its power save (\(refusal)): \(fallback.plan) instead")
                try await apply(fallback)
                return
            }
            updatePlan { $0.phase = .powerSave(interval: interval) }
        case let .dutyCycle(interval, leadTime, budget):
            await leavePowerSave()
            let accuracy = plan.withLock { $0.demand?.horizontalAccuracy }
            var machine = DutyCycleMachine(interval: interval, leadTime: leadTime, budget: budget, accuracy: accuracy)
            let actions = machine.handle(.begin(now: now))
            updatePlan { $0.machine = machine }
            try await perform(actions)
        }
    }

    // MARK: - Power

    /// Powers the receiver on for `reason` unless the plan already has; restores aiding after a
    /// supply cut. The hardware is `powering on` from the start of the sequence, `on` once it is done.
    func ensureOn(for reason: HardwarePowerChange.Reason) async throws {
        let now = clock.now()
        let alreadyOn = plan.withLock { plan -> Bool in
            if plan.hardwareOn { return true }
            // Counted on before it is: whatever point the power-on reaches, the power-off undoes it.
            plan.hardwareOn = true
            // Backup RAM keeps the ephemeris for a hot start while it is valid; a cut loses it.
            let off = plan.poweredOffAt.map { now - $0 }
            let hot = board.power.offKeepsBackup && off.map { $0 <= .seconds(4 * 3600) } == true
            plan.startKind = hot ? .hot : .cold
            return false
        }
        guard !alreadyOn else { return }
        recordPower(.poweringOn, reason)
        try await hardwareOn()
        if !board.power.offKeepsBackup, await restoreAiding() {
            plan.withLock { $0.startKind = .aided }
        }
        recordPower(.on, reason)
    }

    /// Powers the receiver off for `reason` (saving the aiding first when the supply is cut) if the
    /// plan powered it on. The hardware is `powering off` from the start, then what the board's
    /// power-off leaves (off, standby, backup); a power-off that may have left it powered says why.
    func powerOffForPlan(_ reason: HardwarePowerChange.Reason) async {
        guard plan.withLock({ $0.hardwareOn }) else { return }
        recordPower(.poweringOff, reason)
        if !board.power.offKeepsBackup { await saveAiding() }
        await hardwareOff()
        let now = clock.now()
        updatePlan { plan in
            plan.hardwareOn = false
            plan.powerSaveLeave = nil
            plan.poweredOffAt = now
            plan.phase = .off
        }
        let failure = statistics.powerOffFailure
        recordPower(HardwarePower.afterPowerOff(board.power), failure.map { .failure($0) } ?? reason)
    }

    /// Records a change of the hardware's power, now on the session's clock.
    func recordPower(_ power: HardwarePower, _ reason: HardwarePowerChange.Reason) {
        hardwarePower.record(power, reason, at: clock.now())
    }

    private func endPlan() async {
        corrections.demand(needsRTK: false)
        cancelTimer()
        reportFixes(false)
        let now = clock.now()
        updatePlan { plan in
            plan.machine = nil
            plan.acquiringSince = nil
            plan.statistics.add(plan.choice.plan, since: plan.planSince, until: now)
            plan.planSince = now
            plan.choice = PowerPlanChoice(plan: .off, reason: "nobody needs a fix", candidates: [])
        }
        let reason = hardwarePower.takeStopReason()
        if plan.withLock({ $0.hardwareOn }) {
            await powerOffForPlan(reason)
        } else if hardwarePower.current.reason == .dutyCycleSleep {
            // Off already, between a duty cycle's fixes: no wake follows now, and the observers (the MQTT
            // power topic) must not go on saying that one will.
            recordPower(hardwarePower.current.power, reason)
        }
        setEmitter(nil)
        updatePlan { $0.phase = .off }
    }

    // MARK: - Status

    /// Changes the plan's state and tells the observers the new status.
    func updatePlan(_ change: (inout PlanState) -> Void) {
        let now = clock.now()
        let status = plan.withLock { plan -> PowerPlanStatus in
            change(&plan)
            return Self.status(of: plan, now: now)
        }
        planObservers.tell(status)
    }

    var planStatus: PowerPlanStatus {
        let now = clock.now()
        return plan.withLock { Self.status(of: $0, now: now) }
    }

    func planChanges() -> AsyncStream<PowerPlanStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PowerPlanStatus.self, bufferingPolicy: .bufferingNewest(16))
        planObservers.add(continuation, current: planStatus)
        return stream
    }

    private static func status(of plan: PlanState, now: Duration) -> PowerPlanStatus {
        var statistics = plan.statistics
        statistics.add(plan.choice.plan, since: plan.planSince, until: now)
        return PowerPlanStatus(
            choice: plan.choice, phase: plan.phase, now: now, startTimes: plan.starts, statistics: statistics)
    }
}
