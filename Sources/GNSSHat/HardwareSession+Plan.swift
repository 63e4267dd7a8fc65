// The session's power plan: the Receiver's aggregate demand in, the receiver's power out. Every
// change (the signal's start, re-plan and stop, a duty cycle's timer, a fix during its acquisition)
// is a job, and the jobs run one at a time, each as the session's power sequence: so no two power
// sequences ever overlap, and a driver of a manual clock sees each one work or wait. The decisions
// are the pure parts' (PowerPlanner, DutyCycleMachine, PowerSaveNegotiation, the aiding machines);
// this file does what they say.
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
            // A failure here is the start's: the signal then runs `stop`.
            try await apply(choosePlan())
        case let .replan(demand, _):
            guard emitter != nil else { return }
            plan.withLock { $0.demand = demand }
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
            emitter?.fail(error)
        }
    }

    // MARK: - Choosing

    private func choosePlan() -> PowerPlanChoice {
        let (demand, starts, refused) = plan.withLock { ($0.demand, $0.starts, $0.powerSaveRefused) }
        guard let demand else {
            // A run without any demand (a `hold` or a subscription that says nothing): continuous.
            return PowerPlanChoice(plan: .continuous, reason: "no subscriber said what it needs", candidates: [])
        }
        guard let inputs = PowerPlanInputs(
            board: board, measured: starts, aidingAvailable: aidingRestorable, powerSaveRefused: refused)
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

    /// Whether a start after a supply cut can be aided: the board cuts it, a state directory is set,
    /// and the chip takes aiding.
    var aidingRestorable: Bool {
        !board.power.offKeepsBackup && stateDirectory != nil
    }

    // MARK: - Applying

    private func apply(_ choice: PowerPlanChoice) async throws {
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
            try await ensureOn()
            await leavePowerSave()
            updatePlan { $0.phase = .on }
        case .receiverPowerSave(let interval):
            try await ensureOn()
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

    /// Hands `event` to the duty cycle and does what it says.
    private func dutyCycle(_ event: DutyCycleMachine.Event) async throws {
        let actions = plan.withLock { plan -> [DutyCycleMachine.Action] in
            guard var machine = plan.machine else { return [] }
            defer { plan.machine = machine }
            return machine.handle(event)
        }
        try await perform(actions)
    }

    private func perform(_ actions: [DutyCycleMachine.Action]) async throws {
        for action in actions {
            switch action {
            case .powerOn:
                try await ensureOn()
                let now = clock.now()
                updatePlan { plan in
                    plan.acquiringSince = now
                    plan.candidates = [:]
                    plan.phase = .acquiring(since: now)
                    plan.statistics.dutyCycles += 1
                }
                reportFixes(true)
            case .powerOff:
                reportFixes(false)
                await powerOffForPlan()
                let now = clock.now()
                if let replacement = retimeDutyCycle() {
                    // The measured starts no longer pay for this duty cycle: the plan they pay for.
                    try await apply(replacement)
                    return
                }
                try await dutyCycle(.poweredOff(now: now))
            case let .deliver(sequence, metAccuracy):
                let (best, since) = plan.withLock { plan in
                    plan.statistics.scheduledFixes += 1
                    return (plan.candidates[sequence], plan.acquiringSince)
                }
                if !metAccuracy {
                    emitter?.send(.fixWindowClosed(best: best, after: clock.now() - (since ?? clock.now())))
                }
            case .noFix(let after):
                plan.withLock { $0.statistics.noFixes += 1 }
                emitter?.send(.fixWindowClosed(best: nil, after: after))
            case .wake(let at):
                armTimer(at: at)
                updatePlan { plan in
                    if plan.acquiringSince == nil { plan.phase = .sleeping(until: at) }
                }
            case .measuredStart(let duration):
                plan.withLock { plan in plan.starts.record(duration, kind: plan.startKind) }
            }
        }
    }

    /// After a power-off, a duty cycle takes the lead time and budget learned so far. Returns the
    /// plan to change to when the planner, with what has been measured, no longer picks this duty cycle.
    private func retimeDutyCycle() -> PowerPlanChoice? {
        let choice = choosePlan()
        return plan.withLock { plan -> PowerPlanChoice? in
            plan.acquiringSince = nil
            guard case let .dutyCycle(interval, leadTime, budget) = choice.plan, var machine = plan.machine,
                machine.interval == interval
            else { return choice }
            machine.retime(leadTime: leadTime, budget: budget)
            plan.machine = machine
            plan.choice = choice
            return nil
        }
    }

    // MARK: - Power

    /// Powers the receiver on unless the plan already has; restores aiding after a supply cut.
    private func ensureOn() async throws {
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
        try await hardwareOn()
        if !board.power.offKeepsBackup, await restoreAiding() {
            plan.withLock { $0.startKind = .aided }
        }
    }

    /// Powers the receiver off (saving the aiding first when the supply is cut) if the plan powered it on.
    private func powerOffForPlan() async {
        guard plan.withLock({ $0.hardwareOn }) else { return }
        if !board.power.offKeepsBackup { await saveAiding() }
        await hardwareOff()
        let now = clock.now()
        updatePlan { plan in
            plan.hardwareOn = false
            plan.powerSaveLeave = nil
            plan.poweredOffAt = now
            plan.phase = .off
        }
    }

    private func endPlan() async {
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
        await powerOffForPlan()
        setEmitter(nil)
        updatePlan { $0.phase = .off }
    }

    // MARK: - Timer

    private func armTimer(at deadline: Duration) {
        let worker = clock.beginWork()
        clock.wait(worker, until: deadline)
        let generation = plan.withLock { plan -> UInt64 in
            plan.timer?.cancel()
            plan.timerGeneration += 1
            return plan.timerGeneration
        }
        let task = Task { [weak self, clock] in
            do {
                try await clock.sleepUntil(deadline)
            } catch {
                clock.endWork(worker)
                return
            }
            clock.resume(worker)
            guard let self else {
                clock.endWork(worker)
                return
            }
            self.enqueuePlanJob({ .timer(generation: generation, $0) }, worker: worker)
        }
        plan.withLock { plan in
            if plan.timerGeneration == generation { plan.timer = task } else { task.cancel() }
        }
    }

    private func cancelTimer() {
        plan.withLock { plan in
            plan.timer?.cancel()
            plan.timer = nil
            plan.timerGeneration += 1
        }
    }

    // MARK: - Power save

    /// Sends the receiver's power-save commands; the refusal's reason, or nil when it took them.
    private func enterPowerSave(interval: Duration) async -> String? {
        guard let transport = currentTransport else { return "no link" }
        guard let commands = PowerSaveCommands.plan(
            family: board.chip.family, interval: interval, protocolVersion: statistics.protocolVersion)
        else { return "the \(board.chip.family) has no power save GNSSHat knows" }
        var negotiation = PowerSaveNegotiation(commands: commands.enter)
        let outcome = await converse(
            transport: transport, start: { negotiation.start(now: $0) },
            received: { negotiation.received($0, now: $1) }, timer: { negotiation.timerFired(generation: $0, now: $1) })
        switch outcome {
        case .active:
            updatePlan { $0.powerSaveLeave = commands.leave }
            return nil
        case .refused(let reason): return reason
        case nil: return "the link closed"
        }
    }

    private func leavePowerSave() async {
        guard let leave = plan.withLock({ $0.powerSaveLeave }), let transport = currentTransport else { return }
        updatePlan { $0.powerSaveLeave = nil }
        var negotiation = PowerSaveNegotiation(commands: leave)
        let outcome = await converse(
            transport: transport, start: { negotiation.start(now: $0) },
            received: { negotiation.received($0, now: $1) }, timer: { negotiation.timerFired(generation: $0, now: $1) })
        if case .refused(let reason)? = outcome { notice("leaving the receiver's power save: \(reason)") }
    }

    // MARK: - Aiding

    /// Saves the navigation database, the last position and the time before the supply is cut.
    private func saveAiding() async {
        // A session without a fix has nothing better than the state already saved.
        guard let directory = stateDirectory, board.chip.family.isUBlox, let transport = currentTransport,
            sessionHadFix
        else { return }
        var machine = AidingSaveMachine(identity: nil, position: lastPosition, clock: aidingTime.read().clock)
        var written: AidingState?
        let report = await converse(
            transport: transport, start: { machine.start(now: $0) },
            received: { message, now in
                guard case .ubx(let ubx) = message else { return [] }
                return machine.received(ubx, now: now)
            },
            timer: { machine.timerFired(generation: $0, now: $1) },
            other: { if case .write(let state) = $0 { written = state } })
        guard let report else { return }
        guard let written else {
            notice("aiding not saved: the receiver's identity is unknown (no MON-VER)")
            return
        }
        do {
            try written.save(in: directory)
            plan.withLock { $0.statistics.aidingSaves += 1 }
            if case .complete = report.dump {} else {
                notice("aiding saved with \(report.records) database records (dump: \(report.dump))")
            }
        } catch {
            notice("aiding not saved in \(directory): \(error)")
        }
    }

    /// Restores the saved aiding after a power-on; whether the receiver got it. A missing, corrupt,
    /// foreign or stale state is skipped with a notice and never fails the power-on; only a usable
    /// one costs the identity poll (MON-VER, SEC-UNIQID) that ties it to this receiver.
    private func restoreAiding() async -> Bool {
        guard let directory = stateDirectory, let transport = currentTransport else { return false }
        let family = board.chip.family
        let (now, clockError) = aidingTime.read()
        var load = AidingState.load(from: directory, receiver: nil, now: now)
        if let saved = load.state, family.isUBlox {
            guard let identity = await pollIdentity(transport: transport) else {
                notice("aiding state ignored: the receiver did not say who it is (no MON-VER)")
                return false
            }
            if !saved.identity.matches(identity) { load = .foreign(saved.identity) }
        }
        guard let state = load.state else {
            switch load {
            case .missing: break
            case .corrupt:
                notice("aiding state ignored: \(load)")
                try? AidingState.remove(in: directory)
            default:
                notice("aiding state ignored: \(load)")
            }
            plan.withLock { $0.statistics.aidingSkipped += 1 }
            return false
        }
        var machine = AidingRestoreMachine(state: state, family: family, clock: now, clockError: clockError)
        let report = await converse(
            transport: transport, start: { machine.start(now: $0) },
            received: { machine.received($0, now: $1) }, timer: { machine.timerFired(generation: $0, now: $1) })
        guard let report else { return false }
        plan.withLock { $0.statistics.aidingRestores += 1 }
        if !report.refused.isEmpty || report.outcome != .complete {
            notice("aiding restored in part: \(report)")
        }
        return report.timeSent || report.positionAccuracy != nil || report.recordsAccepted > 0
    }

    /// MON-VER and SEC-UNIQID, polled (a second at most): who the receiver is.
    private func pollIdentity(transport: any Transport) async -> AidingIdentity? {
        let mark = log.mark
        do {
            try await send(UBX.poll(.secUNIQID), through: transport)
            try await send(UBX.poll(.monVER), through: transport)
            guard let version = try await firstMessage(after: mark, within: .seconds(1), where: {
                if case .ubx(.monVER) = $0 { true } else { false }
            }), case .ubx(.monVER(let monver)) = version else { return nil }
            let unique = try await firstMessage(after: mark, within: .milliseconds(500), where: {
                if case .ubx(.secUniqID) = $0 { true } else { false }
            })
            var uniqueID: [UInt8]?
            if case .ubx(.secUniqID(let id))? = unique { uniqueID = id.uniqueID }
            return AidingIdentity(
                softwareVersion: monver.softwareVersion, hardwareVersion: monver.hardwareVersion, uniqueID: uniqueID)
        } catch {
            return nil
        }
    }

    // MARK: - Conversations

    /// Runs a message-driven machine over the link: its actions are done in order; each message after
    /// the start goes to `received`, a timer's expiry to `timer`, an action of its own (neither a send,
    /// a timer nor the end) to `other`. Returns the machine's outcome, or nil when the link closed or a
    /// send failed first.
    private func converse<Action: ConversationAction>(
        transport: any Transport,
        start: (Duration) -> [Action],
        received: (Message, Duration) -> [Action],
        timer: (UInt64, Duration) -> [Action],
        other: (Action) -> Void = { _ in }
    ) async -> Action.ConversationOutcome? {
        var mark = log.mark
        var actions = start(clock.now())
        var deadline: (generation: UInt64, at: Duration)?
        while true {
            for action in actions {
                switch action.step {
                case .send(let bytes):
                    do { try await send(bytes, through: transport) } catch { return nil }
                case let .arm(generation, at): deadline = (generation, at)
                case .finish(let outcome): return outcome
                case .other: other(action)
                }
            }
            guard let pending = deadline else { return nil }
            let wait = max(pending.at - clock.now(), .zero)
            let found: MessageLog.Found?
            do {
                found = try await log.next(after: mark, within: wait, as: sequenceWorker, where: { _ in true })
            } catch {
                return nil
            }
            if let found {
                mark = found.sequence
                actions = received(found.message, clock.now())
            } else {
                deadline = nil
                actions = timer(pending.generation, clock.now())
            }
        }
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

/// What a message-driven machine's action asks of the link (see `HardwareSession.converse`).
enum ConversationStep<Outcome> {
    case send([UInt8])
    case arm(UInt64, Duration)
    case finish(Outcome)
    /// An action of the machine's own (the aiding state to write).
    case other
}

/// The actions of the power-save and aiding machines, as conversation steps.
protocol ConversationAction {
    associatedtype ConversationOutcome
    var step: ConversationStep<ConversationOutcome> { get }
}

extension PowerSaveNegotiation.Action: ConversationAction {
    var step: ConversationStep<PowerSaveNegotiation.Outcome> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .finish(let outcome): .finish(outcome)
        }
    }
}

extension AidingSaveMachine.Action: ConversationAction {
    var step: ConversationStep<AidingSaveReport> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .write: .other
        case .finish(let report): .finish(report)
        }
    }
}

extension AidingRestoreMachine.Action: ConversationAction {
    var step: ConversationStep<AidingRestoreReport> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .finish(let report): .finish(report)
        }
    }
}
