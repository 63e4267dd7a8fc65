@testable import Signals
import Testing

/// The machine the tests drive: its demands are numbers (a test picks how they combine).
typealias Machine = LifecycleMachine<Int>

/// An action as a test compares it: errors by their description.
enum Did: Equatable, CustomStringConvertible {
    case fail([SubscriberID], String)
    case endObservations
    case resumeRunningWaiters
    case cancelTimer
    case start(epoch: UInt64, demand: Int?)
    case replan(epoch: UInt64, demand: Int?)
    case stop(epoch: UInt64)
    case armTimer(generation: UInt64, deadline: Duration)
    case finishShutdown

    /// A start with no demand (every start of a machine whose subscribers carry none).
    static func start(epoch: UInt64) -> Did { .start(epoch: epoch, demand: nil) }

    init(_ action: Machine.Action) {
        switch action {
        case let .fail(ids, error): self = .fail(ids, String(describing: error))
        case .endObservations: self = .endObservations
        case .resumeRunningWaiters: self = .resumeRunningWaiters
        case .cancelTimer: self = .cancelTimer
        case let .start(epoch, demand): self = .start(epoch: epoch, demand: demand)
        case let .replan(epoch, demand): self = .replan(epoch: epoch, demand: demand)
        case let .stop(epoch): self = .stop(epoch: epoch)
        case let .armTimer(generation, deadline): self = .armTimer(generation: generation, deadline: deadline)
        case .finishShutdown: self = .finishShutdown
        }
    }

    var description: String {
        switch self {
        case let .fail(ids, error): "fail \(ids.map(\.raw)) with \(error)"
        case .endObservations: "end observations"
        case .resumeRunningWaiters: "resume running waiters"
        case .cancelTimer: "cancel timer"
        case let .start(epoch, demand): "start \(epoch) for \(demand.map(String.init) ?? "no demand")"
        case let .replan(epoch, demand): "re-plan \(epoch) for \(demand.map(String.init) ?? "no demand")"
        case let .stop(epoch): "stop \(epoch)"
        case let .armTimer(generation, deadline): "arm timer \(generation) at \(deadline)"
        case .finishShutdown: "finish shutdown"
        }
    }
}

func did(_ actions: Machine.Actions) -> [Did] {
    actions.map(Did.init)
}

/// The timer an event armed, if it armed one.
func armedTimer(_ actions: Machine.Actions) -> (generation: UInt64, deadline: Duration)? {
    for action in actions {
        if case let .armTimer(generation, deadline) = action { return (generation, deadline) }
    }
    return nil
}

/// The lifecycle as a plain value: every transition checked without threads or clocks, with
/// the whole ordered list of actions each event returns.
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
    ) -> Machine {
        Machine(configuration: SignalConfiguration(
            linger: linger,
            minimumOffTime: minimumOffTime,
            replay: .latest(clearOnFailure: clearOnFailure),
            restart: restart
        ))
    }

    let failure7 = String(describing: TestFailure(code: 7))

    @Test func firstSubscriberStartsAndLastStopsAfterLinger() throws {
        var m = machine(linger: .seconds(5))
        #expect(did(try unwrap(m.subscribe(a, now: .zero))) == [.start(epoch: 1)])
        #expect(m.state == .starting)

        #expect(did(m.startSucceeded(epoch: 1, now: .seconds(1))) == [.resumeRunningWaiters])
        #expect(m.state == .running)

        let left = m.cancel(a, now: .seconds(2))
        let timer = try #require(armedTimer(left))
        #expect(did(left) == [.armTimer(generation: timer.generation, deadline: .seconds(7))])
        #expect(m.state == .lingering)

        #expect(did(m.timerFired(generation: timer.generation, now: .seconds(7))) == [.stop(epoch: 1)])
        #expect(m.state == .stopping)

        #expect(did(m.stopFinished(epoch: 1, now: .seconds(8))).isEmpty)
        #expect(m.state == .idle)
        #expect(m.starts == 1 && m.stops == 1)
        #expect(m.timeRunning(now: .seconds(100)) == .seconds(6), "from the start to the stop, linger included")
        #expect(m.timeActive(now: .seconds(100)) == .seconds(8))
    }

    @Test func subscribeAndCancelWhileRunningAskForNothing() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(try unwrap(m.subscribe(b, now: .zero)).isEmpty)
        #expect(m.cancel(b, now: .zero).isEmpty)
        #expect(m.state == .running)
    }

    @Test func restartsAfterStopWithANewEpoch() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(did(m.cancel(a, now: .zero)) == [.stop(epoch: 1)])
        _ = m.stopFinished(epoch: 1, now: .zero)
        #expect(did(try unwrap(m.subscribe(b, now: .seconds(1)))) == [.start(epoch: 2)])
        #expect(m.acceptsValues(from: 2))
        #expect(!m.acceptsValues(from: 1))
    }

    @Test func subscriberInsideLingerCancelsTheStopAndStaleTimerDoesNothing() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let timer = try unwrap(armedTimer(m.cancel(a, now: .seconds(1))))

        #expect(did(try unwrap(m.subscribe(b, now: .seconds(3)))) == [.cancelTimer])
        #expect(m.state == .running)

        #expect(did(m.timerFired(generation: timer.generation, now: .seconds(6))).isEmpty)
        #expect(m.state == .running)
    }

    @Test func staleLingerTimerCannotEndALaterLinger() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        let first = try unwrap(armedTimer(m.cancel(a, now: .seconds(1))))
        _ = m.subscribe(b, now: .seconds(2))
        let second = try unwrap(armedTimer(m.cancel(b, now: .seconds(4))))
        #expect(second.deadline == .seconds(9))

        #expect(did(m.timerFired(generation: first.generation, now: .seconds(6))).isEmpty,
                "the first linger's timer belongs to a linger that was cancelled")
        #expect(m.state == .lingering)
        #expect(did(m.timerFired(generation: second.generation, now: .seconds(9))) == [.stop(epoch: 1)])
    }

    @Test func subscriberArrivingWhileStoppingWaitsThenStartsAgain() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(did(m.cancel(a, now: .zero)) == [.stop(epoch: 1)])

        #expect(try unwrap(m.subscribe(b, now: .seconds(1))).isEmpty, "no start may overlap the stop")
        #expect(m.state == .stopping)

        #expect(did(m.stopFinished(epoch: 1, now: .seconds(2))) == [.start(epoch: 2)])
        #expect(m.state == .starting)
    }

    @Test func cancelDuringStartLetsTheStartFinishThenStops() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        #expect(m.cancel(a, now: .zero).isEmpty, "the start in progress finishes first")
        #expect(m.state == .starting)

        #expect(did(m.startSucceeded(epoch: 1, now: .seconds(1))) == [.stop(epoch: 1)],
                "nobody waits for the run, so nobody is resumed")
    }

    @Test func cancelDuringStartWithLingerLingers() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.cancel(a, now: .zero)
        let started = m.startSucceeded(epoch: 1, now: .seconds(1))
        let timer = try #require(armedTimer(started))
        #expect(did(started) == [.armTimer(generation: timer.generation, deadline: .seconds(6))])
        #expect(m.state == .lingering)
    }

    @Test func countingIsByTokenAndDoubleCancelIsHarmless() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(m.cancel(a, now: .zero).isEmpty)
        #expect(m.cancel(a, now: .zero).isEmpty, "a second cancel of the same token counts nothing")
        #expect(m.subscribers == [b])
        #expect(m.cancel(c, now: .zero).isEmpty, "an unknown token counts nothing")
        #expect(did(m.cancel(b, now: .zero)) == [.stop(epoch: 1)])
    }

    @Test func failedStartFailsEveryWaiterThenCleansUp() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        let failed = m.startFailed(epoch: 1, error: TestFailure(code: 7), now: .seconds(1))
        #expect(did(failed) == [.fail([a, b], failure7), .stop(epoch: 1)],
                "the waiters hear first, then the stop hook undoes a partial start")
        #expect(m.subscribers.isEmpty)

        #expect(did(m.stopFinished(epoch: 1, now: .seconds(2))).isEmpty)
        #expect(m.state == .failed)
        #expect(m.failures == 1)

        #expect(did(try unwrap(m.subscribe(c, now: .seconds(3)))) == [.start(epoch: 2)],
                "the next subscriber starts afresh")
    }

    @Test func subscriberArrivingDuringCleanUpOfAFailedStartStartsAgain() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        _ = m.subscribe(b, now: .zero)
        #expect(did(m.stopFinished(epoch: 1, now: .seconds(1))) == [.start(epoch: 2)])
    }

    @Test func retryPolicyKeepsSubscribersWaitingWithBackOff() throws {
        var m = machine(restart: .retry(maxAttempts: 3, initialDelay: .seconds(1), multiplier: 2))
        _ = m.subscribe(a, now: .zero)

        #expect(did(m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)) == [.stop(epoch: 1)],
                "nobody is failed while the policy retries")
        let stopped1 = m.stopFinished(epoch: 1, now: .zero)
        let backOff1 = try unwrap(armedTimer(stopped1))
        #expect(did(stopped1) == [.armTimer(generation: backOff1.generation, deadline: .seconds(1))])
        #expect(m.state == .failed)

        #expect(did(m.timerFired(generation: backOff1.generation, now: .seconds(1))) == [.start(epoch: 2)])
        _ = m.startFailed(epoch: 2, error: TestFailure(code: 2), now: .seconds(1))
        let backOff2 = try unwrap(armedTimer(m.stopFinished(epoch: 2, now: .seconds(1))))
        #expect(backOff2.deadline == .seconds(3))

        #expect(did(m.timerFired(generation: backOff2.generation, now: .seconds(3))) == [.start(epoch: 3)])
        let last = m.startFailed(epoch: 3, error: TestFailure(code: 3), now: .seconds(3))
        #expect(did(last) == [.fail([a], String(describing: TestFailure(code: 3))), .stop(epoch: 3)],
                "after the last attempt every waiter gets the error")
        #expect(did(m.stopFinished(epoch: 3, now: .seconds(3))).isEmpty)
        #expect(m.state == .failed)
    }

    @Test func retryIsCancelledWhenEveryoneLeaves() throws {
        var m = machine(restart: .retry(maxAttempts: 5, initialDelay: .seconds(1)))
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        let backOff = try unwrap(armedTimer(m.stopFinished(epoch: 1, now: .zero)))
        #expect(did(m.cancel(a, now: .zero)) == [.cancelTimer])
        #expect(did(m.timerFired(generation: backOff.generation, now: .seconds(1))).isEmpty)
        #expect(m.state == .failed)
    }

    @Test func successfulStartResetsTheRetryCount() throws {
        var m = machine(restart: .retry(maxAttempts: 2, initialDelay: .seconds(1)))
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        let backOff = try unwrap(armedTimer(m.stopFinished(epoch: 1, now: .zero)))
        _ = m.timerFired(generation: backOff.generation, now: .seconds(1))
        #expect(did(m.startSucceeded(epoch: 2, now: .seconds(1))) == [.resumeRunningWaiters])
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
        let timer = try #require(armedTimer(early))
        #expect(did(early) == [.armTimer(generation: timer.generation, deadline: .seconds(12))])
        #expect(m.state == .waitingToStart)

        #expect(did(m.timerFired(generation: timer.generation, now: .seconds(12))) == [.start(epoch: 2)])
    }

    @Test func leavingWhileWaitingForMinimumOffTimeReturnsToIdle() throws {
        var m = machine(minimumOffTime: .seconds(10))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .zero)
        _ = m.stopFinished(epoch: 1, now: .zero)
        _ = m.subscribe(b, now: .seconds(1))
        #expect(did(m.cancel(b, now: .seconds(2))) == [.cancelTimer])
        #expect(m.state == .idle)
    }

    @Test func producerFailureWhileLingeringFailsNobodyCancelsTheTimerAndStops() throws {
        var m = machine(linger: .seconds(5))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .zero)
        #expect(did(m.producerFailed(epoch: 1, error: TestFailure(code: 7), now: .seconds(1)))
                == [.cancelTimer, .stop(epoch: 1)])
        #expect(m.state == .stopping)
    }

    @Test func producerFailureFailsEveryoneAndStops() throws {
        var m = machine(linger: .seconds(5), clearOnFailure: true)
        _ = m.subscribe(a, now: .zero)
        _ = m.subscribe(b, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        #expect(m.latestClearings == 0)
        let failed = m.producerFailed(epoch: 1, error: TestFailure(code: 7), now: .seconds(1))
        #expect(did(failed) == [.fail([a, b], failure7), .stop(epoch: 1)])
        #expect(m.latestClearings == 1, "replay says clear on failure")
        _ = m.stopFinished(epoch: 1, now: .seconds(1))
        #expect(m.state == .failed)
        #expect(did(m.producerFailed(epoch: 1, error: TestFailure(code: 9), now: .seconds(2))).isEmpty,
                "a stale failure report does nothing")
        #expect(m.latestClearings == 1)
    }

    @Test func failureKeepsTheLatestValueUnlessReplaySaysClear() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        #expect(m.latestClearings == 0)
        var clearing = machine(clearOnFailure: true)
        _ = clearing.subscribe(a, now: .zero)
        _ = clearing.startFailed(epoch: 1, error: TestFailure(code: 1), now: .zero)
        #expect(clearing.latestClearings == 1)
    }

    @Test func producerFailureDuringStartWaitsForTheStartToReturn() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        #expect(did(m.producerFailed(epoch: 1, error: TestFailure(code: 7), now: .zero)).isEmpty,
                "the stop never overlaps the start")
        #expect(did(m.startSucceeded(epoch: 1, now: .seconds(1))) == [.fail([a], failure7), .stop(epoch: 1)])
    }

    @Test func staleHookCompletionsAreIgnored() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        #expect(did(m.startSucceeded(epoch: 99, now: .zero)).isEmpty)
        #expect(m.state == .starting)
        #expect(did(m.stopFinished(epoch: 1, now: .zero)).isEmpty)
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
        let shutDown = String(describing: SignalError.shutDown)
        let expected: [Did] = switch target {
        case .idle: [.endObservations, .finishShutdown]
        case .running: [.fail([a], shutDown), .endObservations, .stop(epoch: 1)]
        case .lingering: [.endObservations, .cancelTimer, .stop(epoch: 1)]
        case .starting: [.fail([a], shutDown), .endObservations]
        default: [.endObservations]
        }
        let actions = did(m.shutdown(now: .seconds(10)))
        #expect(actions == expected)
        #expect(actions.contains(.stop(epoch: 1)) == stops)
        #expect(m.subscribe(b, now: .seconds(10)) == nil, "no subscriber is taken after shutdown")
        switch target {
        case .idle:
            break
        case .starting:
            #expect(did(m.startSucceeded(epoch: 1, now: .seconds(11))) == [.stop(epoch: 1)])
            #expect(did(m.stopFinished(epoch: 1, now: .seconds(12))) == [.finishShutdown])
        default:
            #expect(did(m.stopFinished(epoch: 1, now: .seconds(12))) == [.finishShutdown])
        }
        #expect(m.state == .shutDown)
        #expect(did(m.shutdown(now: .seconds(13))) == [.finishShutdown], "a second shutdown waits for nothing")
    }

    @Test func shutdownWhileAStopRunsFinishesOnlyWhenItEnds() throws {
        var m = machine()
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .zero)
        #expect(did(m.shutdown(now: .zero)) == [.endObservations])
        #expect(did(m.shutdown(now: .zero)).isEmpty, "asked again, it still waits for the stop")
        #expect(did(m.stopFinished(epoch: 1, now: .zero)) == [.finishShutdown])
    }

    @Test func shutdownFailsSubscribersWithShutDownBeforeItStops() throws {
        var m = machine(minimumOffTime: .seconds(10))
        _ = m.subscribe(a, now: .zero)
        _ = m.startSucceeded(epoch: 1, now: .zero)
        _ = m.cancel(a, now: .zero)
        _ = m.stopFinished(epoch: 1, now: .zero)
        _ = m.subscribe(b, now: .seconds(1))
        #expect(m.state == .waitingToStart)
        #expect(did(m.shutdown(now: .seconds(2)))
                == [.fail([b], String(describing: SignalError.shutDown)), .endObservations, .cancelTimer,
                    .finishShutdown],
                "the subscribers hear first, then the observers, the timer goes, then the shutdown is over")
    }

    @Test func backOffGrowsAndIsCapped() {
        let policy = RestartPolicy.retry(
            maxAttempts: 10, initialDelay: .seconds(1), multiplier: 3, maxDelay: .seconds(20)
        )
        #expect(policy.backoff(afterFailures: 1) == .seconds(1))
        #expect(policy.backoff(afterFailures: 2) == .seconds(3))
        #expect(policy.backoff(afterFailures: 3) == .seconds(9))
        #expect(policy.backoff(afterFailures: 4) == .seconds(20))
        #expect(policy.backoff(afterFailures: 10) == nil)
        #expect(RestartPolicy.onNextSubscriber.backoff(afterFailures: 1) == nil)
    }
}
