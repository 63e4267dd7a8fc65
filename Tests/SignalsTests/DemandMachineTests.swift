@testable import Signals
import Testing

/// Demand in the lifecycle, as a plain value: the aggregate, re-plans and their order against
/// start, stop, linger, failure and shutdown, with no threads and no clock. Demands are numbers
/// and the largest wins (a rate, say), except where a test says otherwise.
@Suite("Lifecycle state machine: demand")
struct DemandMachineTests {
    let a = SubscriberID(raw: 1)
    let b = SubscriberID(raw: 2)
    let c = SubscriberID(raw: 3)

    func unwrap<T>(_ value: T?, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        try #require(value, sourceLocation: sourceLocation)
    }

    func machine(
        linger: Duration = .zero,
        minimumOffTime: Duration = .zero,
        restart: RestartPolicy = .onNextSubscriber,
        combine: @escaping @Sendable (Int, Int) -> Int = { max($0, $1) }
    ) -> Machine {
        Machine(
            configuration: SignalConfiguration(linger: linger, minimumOffTime: minimumOffTime, restart: restart),
            combine: combine
        )
    }

    /// A machine running run 1 for `a` with demand `demand`.
    func running(linger: Duration = .zero, demand: Int? = 10) -> Machine {
        var m = machine(linger: linger)
        _ = m.subscribe(a, demand: demand, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        return m
    }

    /// A machine of `running(linger:)` whose re-plan to 20 (for `b`) is still in progress.
    func replanning(linger: Duration = .zero) throws -> Machine {
        var m = running(linger: linger)
        #expect(did(try unwrap(m.subscribe(b, demand: 20, now: .zero))) == [.replan(epoch: 1, demand: 20)])
        return m
    }

    @Test func theStartSeesTheAggregateOfThatMoment() throws {
        var m = machine()
        #expect(did(try unwrap(m.subscribe(a, demand: 5, now: .zero))) == [.start(epoch: 1, demand: 5)])
        #expect(m.aggregate == 5 && m.plannedDemand == 5)
    }

    @Test func aStrongerDemandReplansAWeakerOneDoesNot() throws {
        var m = running()
        #expect(try unwrap(m.subscribe(b, demand: 3, now: .zero)).isEmpty, "max(10, 3) is still 10")
        #expect(m.aggregate == 10)
        #expect(did(try unwrap(m.subscribe(c, demand: 30, now: .zero))) == [.replan(epoch: 1, demand: 30)])
        #expect(m.aggregate == 30 && m.plannedDemand == 30)
        #expect(m.replans == 1)
    }

    @Test func aSubscriptionWithoutDemandContributesNothing() throws {
        var m = running()
        #expect(try unwrap(m.subscribe(b, now: .zero)).isEmpty)
        #expect(m.aggregate == 10)
        #expect(did(m.cancel(a, now: .zero)) == [.replan(epoch: 1, demand: nil)],
                "only b is left, and it says nothing: the producer hears that")
        #expect(m.aggregate == nil)
        #expect(m.replanFinished(epoch: 1).isEmpty)
        #expect(did(m.cancel(b, now: .zero)) == [.stop(epoch: 1)], "the last one leaves: the stop")
    }

    @Test func aStrongestDemandLeavingReplansToTheRest() throws {
        var m = running()
        _ = m.subscribe(b, demand: 30, now: .zero)
        _ = m.replanFinished(epoch: 1)
        _ = m.subscribe(c, demand: 20, now: .zero)
        #expect(did(m.cancel(b, now: .zero)) == [.replan(epoch: 1, demand: 20)], "combined afresh from a and c")
        _ = m.replanFinished(epoch: 1)
        #expect(m.cancel(a, now: .zero).isEmpty, "max(20) is still 20")
        #expect(m.demands == [c: 20])
    }

    @Test func combinationNeedNotBeIdempotent() throws {
        // Demands that add up (bandwidth, say): removing one must not subtract from a stale sum.
        var m = machine(combine: { $0 + $1 })
        _ = m.subscribe(a, demand: 1, now: .zero)
        _ = m.subscribe(b, demand: 2, now: .zero)
        _ = m.subscribe(c, demand: 4, now: .zero)
        #expect(m.aggregate == 7)
        _ = m.cancel(b, now: .zero)
        #expect(m.aggregate == 5)
        _ = m.setDemand(c, to: 10)
        #expect(m.aggregate == 11)
    }

    @Test func setDemandReplansAndIgnoresEndedOrUnchangedSubscriptions() throws {
        var m = running()
        #expect(m.setDemand(a, to: 10).isEmpty, "unchanged")
        #expect(did(m.setDemand(a, to: 40)) == [.replan(epoch: 1, demand: 40)])
        _ = m.replanFinished(epoch: 1)
        #expect(m.setDemand(b, to: 99).isEmpty, "b never subscribed")
        _ = m.subscribe(b, demand: 1, now: .zero)
        _ = m.cancel(b, now: .zero)
        #expect(m.setDemand(b, to: 99).isEmpty, "a change that lands after the cancel does nothing")
        #expect(m.aggregate == 40)
        #expect(did(m.setDemand(a, to: nil)) == [.replan(epoch: 1, demand: nil)])
        #expect(m.demands.isEmpty)
    }

    @Test func changesDuringAReplanCoalesceIntoOneMoreWithTheLatestAggregate() throws {
        var m = try replanning()
        #expect(try unwrap(m.subscribe(c, demand: 30, now: .zero)).isEmpty, "a re-plan runs: no overlap")
        #expect(m.setDemand(c, to: 50).isEmpty)
        #expect(m.setDemand(b, to: 60).isEmpty)
        #expect(m.replans == 1)
        #expect(did(m.replanFinished(epoch: 1)) == [.replan(epoch: 1, demand: 60)], "one more, with the latest")
        #expect(m.replans == 2)
        #expect(m.replanFinished(epoch: 1).isEmpty, "nothing changed since")
        #expect(m.replanning == nil)
    }

    @Test func changesThatCancelOutDuringAReplanNeedNoOther() throws {
        var m = try replanning()
        _ = m.subscribe(c, demand: 30, now: .zero)
        _ = m.cancel(c, now: .zero)
        #expect(m.replanFinished(epoch: 1).isEmpty, "the aggregate is 20 again, as planned")
    }

    @Test func aChangeDuringTheStartReplansOnceItRunsAfterTheWaitersAreResumed() throws {
        var m = machine()
        _ = m.subscribe(a, demand: 5, now: .zero)
        #expect(try unwrap(m.subscribe(b, demand: 8, now: .zero)).isEmpty, "no re-plan overlaps the start")
        _ = m.setDemand(b, to: 9)
        #expect(did(m.startSucceeded(epoch: 1, now: .zero)) == [.resumeRunningWaiters, .replan(epoch: 1, demand: 9)])
    }

    @Test func aChangeThatReturnsToThePlanDuringTheStartNeedsNoReplan() throws {
        var m = machine()
        _ = m.subscribe(a, demand: 5, now: .zero)
        _ = m.subscribe(b, demand: 8, now: .zero)
        _ = m.cancel(b, now: .zero)
        #expect(did(m.startSucceeded(epoch: 1, now: .zero)) == [.resumeRunningWaiters])
    }

    @Test func theLingerKeepsThePlan() throws {
        var m = running(linger: .seconds(5))
        let left = m.cancel(a, now: .zero)
        let timer = try unwrap(armedTimer(left))
        #expect(did(left) == [.armTimer(generation: timer.generation, deadline: .seconds(5))], "no re-plan")
        #expect(m.aggregate == nil && m.plannedDemand == 10)

        #expect(did(try unwrap(m.subscribe(b, demand: 10, now: .seconds(1)))) == [.cancelTimer],
                "the same demand is back: the plan stands")
        _ = m.cancel(b, now: .seconds(2))
        #expect(did(try unwrap(m.subscribe(c, demand: 3, now: .seconds(3))))
                == [.cancelTimer, .replan(epoch: 1, demand: 3)], "the timer goes first, then the re-plan")
    }

    @Test func aReplanThatReturnsDuringTheLingerIsNotFollowedByAnother() throws {
        var m = try replanning(linger: .seconds(5))
        _ = m.cancel(a, now: .zero)
        #expect(armedTimer(m.cancel(b, now: .zero)) != nil)
        #expect(m.state == .lingering)
        #expect(m.replanFinished(epoch: 1).isEmpty)
        #expect(m.replans == 1)
    }

    @Test func theLastSubscriberLeavingDuringAReplanStopsOnlyWhenItReturns() throws {
        var m = try replanning()
        _ = m.cancel(a, now: .zero)
        #expect(m.cancel(b, now: .zero).isEmpty, "the stop waits for the re-plan")
        #expect(m.state == .stopping)
        #expect(!m.acceptsValues(from: 1))
        #expect(did(m.replanFinished(epoch: 1)) == [.stop(epoch: 1)])
        #expect(did(m.stopFinished(epoch: 1, now: .zero)).isEmpty)
        #expect(m.state == .idle)
    }

    @Test func theLingerEndingDuringAReplanStopsOnlyWhenItReturns() throws {
        var m = try replanning(linger: .seconds(5))
        _ = m.cancel(a, now: .zero)
        let timer = try unwrap(armedTimer(m.cancel(b, now: .zero)))
        #expect(m.timerFired(generation: timer.generation, now: .seconds(5)).isEmpty)
        #expect(m.state == .stopping)
        #expect(did(m.replanFinished(epoch: 1)) == [.stop(epoch: 1)])
    }

    @Test func aFailureDuringAReplanFailsEveryoneAtOnceAndStopsWhenItReturns() throws {
        var m = try replanning()
        let failed = m.producerFailed(epoch: 1, error: TestFailure(code: 3), now: .zero)
        #expect(did(failed) == [.fail([a, b], String(describing: TestFailure(code: 3)))])
        #expect(m.aggregate == nil && m.demands.isEmpty)
        #expect(try unwrap(m.subscribe(c, demand: 7, now: .zero)).isEmpty, "no re-plan once the stop began")
        #expect(did(m.replanFinished(epoch: 1)) == [.stop(epoch: 1)])
        #expect(did(m.stopFinished(epoch: 1, now: .zero)) == [.start(epoch: 2, demand: 7)],
                "the next run starts for the subscriber that came during the stop, with its demand")
    }

    @Test func aShutdownDuringAReplanStopsWhenItReturns() throws {
        var m = try replanning()
        let shutDown = String(describing: SignalError.shutDown)
        #expect(did(m.shutdown(now: .zero)) == [.fail([a, b], shutDown), .endObservations])
        #expect(did(m.replanFinished(epoch: 1)) == [.stop(epoch: 1)])
        #expect(did(m.stopFinished(epoch: 1, now: .zero)) == [.finishShutdown])
        #expect(m.state == .shutDown)
    }

    @Test func nothingIsReplannedWhileStoppingAndTheNextStartSeesTheAggregate() throws {
        var m = running()
        #expect(did(m.cancel(a, now: .zero)) == [.stop(epoch: 1)])
        #expect(try unwrap(m.subscribe(b, demand: 4, now: .zero)).isEmpty)
        #expect(m.setDemand(b, to: 6).isEmpty)
        #expect(did(m.stopFinished(epoch: 1, now: .zero)) == [.start(epoch: 2, demand: 6)])
        #expect(m.replans == 0)
    }

    @Test func aStaleReplanCompletionIsIgnored() throws {
        var m = try replanning()
        #expect(m.replanFinished(epoch: 7).isEmpty)
        #expect(m.replanning == 1)
        #expect(try unwrap(m.subscribe(c, demand: 90, now: .zero)).isEmpty, "the real re-plan still runs")
    }

    @Test func aFailedStartForgetsTheDemandsOfTheFailedSubscribers() throws {
        var m = machine()
        _ = m.subscribe(a, demand: 5, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        #expect(m.aggregate == nil && m.demands.isEmpty)
        _ = m.stopFinished(epoch: 1, now: .zero)
        #expect(did(try unwrap(m.subscribe(b, demand: 2, now: .zero))) == [.start(epoch: 2, demand: 2)])
    }

    @Test func aRetryStartsWithTheDemandsOfTheSubscribersStillWaiting() throws {
        var m = machine(restart: .retry(maxAttempts: 3, initialDelay: .seconds(1)))
        _ = m.subscribe(a, demand: 5, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        let backOff = try unwrap(armedTimer(m.stopFinished(epoch: 1, now: .zero)))
        _ = m.setDemand(a, to: 6)
        #expect(did(m.timerFired(generation: backOff.generation, now: .seconds(1))) == [.start(epoch: 2, demand: 6)])
    }

    @Test func aMachineWithoutDemandsNeverReplans() throws {
        var m = Machine(configuration: SignalConfiguration())
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(try unwrap(m.subscribe(b, now: .zero)).isEmpty)
        #expect(m.cancel(a, now: .zero).isEmpty)
        #expect(m.setDemand(b, to: nil).isEmpty)
        #expect(m.replans == 0 && m.aggregate == nil)
    }
}
