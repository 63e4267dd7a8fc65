// The session's duty cycle: the DutyCycleMachine's events in (a power-on's fixes, its timer), its
// actions done (power on and off, deliver or give up on a fix, sleep until the next wake), and the
// timer that wakes it. Part of the power plan (HardwareSession+Plan.swift runs each as a job).
import GNSSProtocol
import LinuxSystem
import Signals

extension HardwareSession {
    /// Hands `event` to the duty cycle and does what it says.
    func dutyCycle(_ event: DutyCycleMachine.Event) async throws {
        let actions = plan.withLock { plan -> [DutyCycleMachine.Action] in
            guard var machine = plan.machine else { return [] }
            defer { plan.machine = machine }
            return machine.handle(event)
        }
        try await perform(actions)
    }

    func perform(_ actions: [DutyCycleMachine.Action]) async throws {
        for action in actions {
            switch action {
            case .powerOn:
                try await ensureOn(for: .dutyCycleWake)
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
                await powerOffForPlan(.dutyCycleSleep)
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
                recordStart(duration)
            }
        }
    }

    /// Records a power-on's time to a fix that met the accuracy. With a demand that needs RTK while
    /// corrections flowed, it is two times: to the first fix (the start's kind) and from there to RTK fixed.
    private func recordStart(_ duration: Duration) {
        let firstFix = statistics.timesToFirstFix.last ?? nil
        let rtk = corrections.status.subscribed
        plan.withLock { plan in
            guard rtk, let firstFix, firstFix <= duration, needsRTK(plan.demand) else {
                plan.starts.record(duration, kind: plan.startKind)
                return
            }
            plan.starts.record(firstFix, kind: plan.startKind)
            plan.starts.recordTimeToRTKFixed(duration - firstFix)
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

    func cancelTimer() {
        plan.withLock { plan in
            plan.timer?.cancel()
            plan.timer = nil
            plan.timerGeneration += 1
        }
    }
}
