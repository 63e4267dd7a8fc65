@testable import Signals
import Testing

/// The lifecycle as a plain value: every transition checked without threads or clocks.
@Suite("Lifecycle state machine")
struct LifecycleMachineTests {
    let a = SubscriberID(raw: 1)
    let b = SubscriberID(raw: 2)
    let c = SubscriberID(raw: 3)

    /// `#require` for results of mutating calls (the macro cannot take them directly).
    func unwrap<T>(_ value: T?, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        try #require(value, sourceLocation: sourceLocation)
    }

    func machine(
        linger: Duration = .zero,
        minimumOffTime: Duration = .zero,
        restart: RestartPolicy = .onNextSubscriber,
        clearOnFailure: Bool = false
    ) -> LifecycleMachine {
        LifecycleMachine(configuration: SignalConfiguration(
            linger: linger,
            minimumOffTime: minimumOffTime,
            replay: .latest(clearOnFailure: clearOnFailure),
            restart: restart
        ))
    }

    @Test func firstSubscriberStartsAndLastStopsAfterLinger() throws {
        var m = machine(linger: .seconds(5))
        let subscribed = try unwrap(m.subscribe(a, now: .zero))
        #expect(subscribed.start == 1)
        #expect(m.state == .starting)

        let started = m.startSucceeded(epoch: 1, now: .seconds(1))
        #expect(started.becameRunning)
        #expect(m.state == .running)

        let left = m.cancel(a, now: .seconds(2))
        let timer = try #require(left.timer)
        #expect(timer.deadline == .seconds(7))
        #expect(left.stop == nil)
        #expect(m.state == .lingering)

        let fired = m.timerFired(generation: timer.generation, now: .seconds(7))
        #expect(fired.stop == 1)
        #expect(m.state == .stopping)

        _ = m.stopFinished(epoch: 1, now: .seconds(8))
        #expect(m.state == .idle)
        #expect(m.starts == 1 && m.stops == 1)
        #expect(m.timeRunning(now: .seconds(100)) == .seconds(6), "from the start to the stop, linger included")
        #expect(m.timeActive(now: .seconds(100)) == .seconds(8))
    }

    @Test func restartsAfterStopWithANewEpoch() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(m.cancel(a, now: .zero).stop == 1)
        _ = m.stopFinished(epoch: 1, now: .zero)
        let again = try unwrap(m.subscribe(b, now: .seconds(1)))
        #expect(again.start == 2)
        #expect(m.acceptsValues(from: 2))
        #expect(!m.acceptsValues(from: 1))
    }

    @Test func subscriberInsideLingerCancelsTheStopAndStaleTimerDoesNothing() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let timer = try unwrap(m.cancel(a, now: .seconds(1)).timer)

        let back = try unwrap(m.subscribe(b, now: .seconds(3)))
        #expect(back.timerCancelled)
        #expect(back.start == nil)
        #expect(m.state == .running)

        let stale = m.timerFired(generation: timer.generation, now: .seconds(6))
        #expect(stale.stop == nil)
        #expect(m.state == .running)
    }

    @Test func staleLingerTimerCannotEndALaterLinger() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let first = try unwrap(m.cancel(a, now: .seconds(1)).timer)
        _ = m.subscribe(b, now: .seconds(2))
        let second = try unwrap(m.cancel(b, now: .seconds(4)).timer)
        #expect(second.deadline == .seconds(9))

        #expect(m.timerFired(generation: first.generation, now: .seconds(6)).stop == nil,
                "the first linger's timer belongs to a linger that was cancelled")
        #expect(m.state == .lingering)
        #expect(m.timerFired(generation: second.generation, now: .seconds(9)).stop == 1)
    }

    @Test func subscriberArrivingWhileStoppingWaitsThenStartsAgain() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(m.cancel(a, now: .zero).stop == 1)

        let waiting = try unwrap(m.subscribe(b, now: .seconds(1)))
        #expect(waiting.start == nil, "no start may overlap the stop")
        #expect(m.state == .stopping)

        let finished = m.stopFinished(epoch: 1, now: .seconds(2))
        #expect(finished.start == 2)
        #expect(m.state == .starting)
    }

    @Test func cancelDuringStartLetsTheStartFinishThenStops() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        let cancelled = m.cancel(a, now: .zero)
        #expect(cancelled.stop == nil, "the start in progress finishes first")
        #expect(m.state == .starting)

        let started = m.startSucceeded(epoch: 1, now: .seconds(1))
        #expect(started.stop == 1)
        #expect(!started.becameRunning)
    }

    @Test func cancelDuringStartWithLingerLingers() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.cancel(a, now: .zero)
        let started = m.startSucceeded(epoch: 1, now: .seconds(1))
        #expect(started.timer?.deadline == .seconds(6))
        #expect(m.state == .lingering)
    }

    @Test func countingIsByTokenAndDoubleCancelIsHarmless() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(m.cancel(a, now: .zero).stop == nil)
        #expect(m.cancel(a, now: .zero).stop == nil, "a second cancel of the same token counts nothing")
        #expect(m.subscribers == [b])
        #expect(m.cancel(c, now: .zero).stop == nil, "an unknown token counts nothing")
        #expect(m.cancel(b, now: .zero).stop == 1)
    }

    @Test func failedStartFailsEveryWaiterAndCleansUp() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        let failed = m.startFailed(epoch: 1, error: TestFailure(code: 7), now: .seconds(1))
        #expect(failed.failedSubscribers == [a, b])
        #expect((failed.failure as? TestFailure) == TestFailure(code: 7))
        #expect(failed.stop == 1, "the stop hook undoes a partial start")
        #expect(m.subscribers.isEmpty)

        _ = m.stopFinished(epoch: 1, now: .seconds(2))
        #expect(m.state == .failed)
        #expect(m.failures == 1)

        let next = try unwrap(m.subscribe(c, now: .seconds(3)))
        #expect(next.start == 2, "the next subscriber starts afresh")
    }

    @Test func subscriberArrivingDuringCleanUpOfAFailedStartStartsAgain() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        _ = m.subscribe(b, now: .zero)
        let finished = m.stopFinished(epoch: 1, now: .seconds(1))
        #expect(finished.start == 2)
    }

    @Test func retryPolicyKeepsSubscribersWaitingWithBackOff() throws {
        var m = machine(restart: .retry(maxAttempts: 3, initialDelay: .seconds(1), multiplier: 2))
        _ = m.subscribe(a, now: .zero)

        let first = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        #expect(first.failedSubscribers.isEmpty)
        let backOff1 = try unwrap(m.stopFinished(epoch: 1, now: .zero).timer)
        #expect(backOff1.deadline == .seconds(1))
        #expect(m.state == .failed)

        #expect(m.timerFired(generation: backOff1.generation, now: .seconds(1)).start == 2)
        _ = m.startFailed(epoch: 2, error: TestFailure(code: 2), now: .seconds(1))
        let backOff2 = try unwrap(m.stopFinished(epoch: 2, now: .seconds(1)).timer)
        #expect(backOff2.deadline == .seconds(3))

        #expect(m.timerFired(generation: backOff2.generation, now: .seconds(3)).start == 3)
        let last = m.startFailed(epoch: 3, error: TestFailure(code: 3), now: .seconds(3))
        #expect(last.failedSubscribers == [a], "after the last attempt every waiter gets the error")
        #expect((last.failure as? TestFailure)?.code == 3)
        #expect(m.stopFinished(epoch: 3, now: .seconds(3)).timer == nil)
        #expect(m.state == .failed)
    }

    @Test func retryIsCancelledWhenEveryoneLeaves() throws {
        var m = machine(restart: .retry(maxAttempts: 5, initialDelay: .seconds(1)))
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        let backOff = try unwrap(m.stopFinished(epoch: 1, now: .zero).timer)
        #expect(m.cancel(a, now: .zero).timerCancelled)
        #expect(m.timerFired(generation: backOff.generation, now: .seconds(1)).start == nil)
        #expect(m.state == .failed)
    }

    @Test func successfulStartResetsTheRetryCount() throws {
        var m = machine(restart: .retry(maxAttempts: 2, initialDelay: .seconds(1)))
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        let backOff = try unwrap(m.stopFinished(epoch: 1, now: .zero).timer)
        _ = m.timerFired(generation: backOff.generation, now: .seconds(1))
        _ = m.startSucceeded(epoch: 2, now: .seconds(1))
        #expect(m.failedStartsInARow == 0)
        #expect(m.state == .running)
    }

    @Test func minimumOffTimeDelaysTheRestart() throws {
        var m = machine(minimumOffTime: .seconds(10))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .seconds(1))
        _ = m.stopFinished(epoch: 1, now: .seconds(2))

        let early = try unwrap(m.subscribe(b, now: .seconds(3)))
        #expect(early.start == nil)
        let timer = try #require(early.timer)
        #expect(timer.deadline == .seconds(12))
        #expect(m.state == .waitingToStart)

        #expect(m.timerFired(generation: timer.generation, now: .seconds(12)).start == 2)
    }

    @Test func leavingWhileWaitingForMinimumOffTimeReturnsToIdle() throws {
        var m = machine(minimumOffTime: .seconds(10))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .zero)
        _ = m.stopFinished(epoch: 1, now: .zero)
        _ = m.subscribe(b, now: .seconds(1))
        #expect(m.cancel(b, now: .seconds(2)).timerCancelled)
        #expect(m.state == .idle)
    }

    @Test func producerFailureFailsEveryoneAndStops() throws {
        var m = machine(linger: .seconds(5), clearOnFailure: true)
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let failed = m.producerFailed(epoch: 1, error: TestFailure(code: 9), now: .seconds(1))
        #expect(failed.failedSubscribers == [a, b])
        #expect(failed.stop == 1)
        #expect(failed.clearLatest)
        _ = m.stopFinished(epoch: 1, now: .seconds(1))
        #expect(m.state == .failed)
        #expect(m.producerFailed(epoch: 1, error: TestFailure(code: 9), now: .seconds(2)).stop == nil,
                "a stale failure report does nothing")
    }

    @Test func producerFailureDuringStartWaitsForTheStartToReturn() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        let early = m.producerFailed(epoch: 1, error: TestFailure(code: 4), now: .zero)
        #expect(early.stop == nil, "the stop never overlaps the start")
        let started = m.startSucceeded(epoch: 1, now: .seconds(1))
        #expect(started.failedSubscribers == [a])
        #expect(started.stop == 1)
    }

    @Test func staleHookCompletionsAreIgnored() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        #expect(m.startSucceeded(epoch: 99, now: .zero).becameRunning == false)
        #expect(m.state == .starting)
        #expect(m.stopFinished(epoch: 1, now: .zero).start == nil)
        #expect(m.state == .starting)
    }

    @Test(arguments: [
        (SignalState.idle, false), (.running, true), (.lingering, true), (.starting, false), (.stopping, false),
    ])
    func shutdownFromEachState(from target: SignalState, stops: Bool) throws {
        var m = machine(linger: .seconds(5))
        switch target {
        case .running:
            _ = m.subscribe(a, now: .zero)
            _ = m.startSucceeded(epoch: 1, now: .zero)
        case .lingering:
            _ = m.subscribe(a, now: .zero)
            _ = m.startSucceeded(epoch: 1, now: .zero)
            _ = m.cancel(a, now: .zero)
        case .starting:
            _ = m.subscribe(a, now: .zero)
        case .stopping:
            _ = m.subscribe(a, now: .zero)
            _ = m.startSucceeded(epoch: 1, now: .zero)
            _ = m.cancel(a, now: .zero)
            _ = m.timerFired(generation: m.timerGeneration, now: .seconds(5))
        default:
            break
        }
        #expect(m.state == target)
        let effects = m.shutdown(now: .seconds(10))
        #expect((effects.stop != nil) == stops)
        #expect(m.subscribe(b, now: .seconds(10)) == nil, "no subscriber is taken after shutdown")
        switch target {
        case .idle:
            #expect(effects.shutdownFinished)
        case .starting:
            #expect(m.startSucceeded(epoch: 1, now: .seconds(11)).stop == 1)
            #expect(m.stopFinished(epoch: 1, now: .seconds(12)).shutdownFinished)
        default:
            #expect(m.stopFinished(epoch: 1, now: .seconds(12)).shutdownFinished)
        }
        #expect(m.state == .shutDown)
    }

    @Test func shutdownFailsSubscribersWithShutDown() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let effects = m.shutdown(now: .zero)
        #expect(effects.failedSubscribers == [a])
        #expect((effects.failure as? SignalError) == .shutDown)
    }

    @Test func backOffGrowsAndIsCapped() {
        let policy = RestartPolicy.retry(maxAttempts: 10, initialDelay: .seconds(1), multiplier: 3, maxDelay: .seconds(20))
        #expect(policy.backoff(afterFailures: 1) == .seconds(1))
        #expect(policy.backoff(afterFailures: 2) == .seconds(3))
        #expect(policy.backoff(afterFailures: 3) == .seconds(9))
        #expect(policy.backoff(afterFailures: 4) == .seconds(20))
        #expect(policy.backoff(afterFailures: 10) == nil)
        #expect(RestartPolicy.onNextSubscriber.backoff(afterFailures: 1) == nil)
    }
}
