import GNSSHatTesting
import Signals
import Testing

/// Demand through the signal with real tasks and a manual clock: the largest demand wins.
@Suite("DemandSignal", .timeLimit(.minutes(1)))
struct DemandSignalTests {
    let clock = ManualClock()
    let producer = DemandProducer()

    @Test func theStartSeesTheAggregateAndEveryKindOfSubscriptionReplans() async throws {
        let signal = producer.makeSignal(clock: clock)
        let callback = signal.subscribe(demand: 5, onValue: { _ in })
        await signal.waitForState(.running)
        #expect(producer.hooks == [.start(5)])
        #expect(signal.demand == 5)

        let hold = signal.hold(demand: 9)
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(9)])

        let stream = signal.subscribe(demand: 12, buffering: .bounded(4))
        await signal.waitUntilSettled()
        let samples = signal.subscribe(demand: 1, onSample: { _ in })
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(9), .replan(12)], "1 changes nothing")

        stream.setDemand(nil)
        await signal.waitUntilSettled()
        hold.setDemand(2)
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(9), .replan(12), .replan(9), .replan(5)])
        #expect(signal.demand == 5)
        #expect(signal.statistics.replans == 4)
        #expect(signal.subscriberCount == 4)

        producer.send(1)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == 1, "a subscription with a demand gets values like any other")
        _ = (callback, samples)
        #expect(producer.overlaps == 0)
    }

    @Test func aSubscriptionWithoutDemandCountsButContributesNothing() async throws {
        let signal = producer.makeSignal(clock: clock)
        let plain = signal.subscribe()
        await signal.waitForState(.running)
        #expect(producer.hooks == [.start(nil)])
        let demanding = signal.hold(demand: 3)
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(nil), .replan(3)])
        demanding.cancel()
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(nil), .replan(3), .replan(nil)])
        #expect(signal.state == .running, "the plain subscription still keeps it on")
        _ = plain
    }

    @Test func changesDuringAReplanCoalesceIntoOneMore() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.hold(demand: 5)
        await signal.waitForState(.running)

        let gate = producer.gateNextReplan()
        let second = signal.hold(demand: 9)
        await gate.waitUntilReached()
        let third = signal.hold(demand: 12)
        third.setDemand(15)
        let fourth = signal.hold(demand: 20)
        fourth.setDemand(18)
        #expect(producer.hooks == [.start(5), .replan(9)], "no re-plan overlaps the one in progress")
        #expect(signal.demand == 18)

        gate.open()
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(9), .replan(18)])
        #expect(signal.statistics.replans == 2)
        #expect(producer.overlaps == 0)
        _ = (first, second, third, fourth)
    }

    @Test func aReplanThatEndsWithNothingMoreToDoStillCountsAsProgress() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.hold(demand: 5)
        await signal.waitForState(.running)
        let gate = producer.gateNextReplan()
        let second = signal.hold(demand: 9)
        await gate.waitUntilReached()
        let during = signal.progress
        #expect(during.isReplanning)
        gate.open()
        // A driver waiting for the progress to change after `during` must be woken.
        await signal.waitForProgress(after: during.changes)
        await signal.waitUntilSettled()
        #expect(!signal.progress.isReplanning)
        #expect(signal.progress.changes != during.changes)
        _ = (first, second)
    }

    @Test func aStopWaitsForTheReplanInProgress() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.hold(demand: 5)
        await signal.waitForState(.running)
        let gate = producer.gateNextReplan()
        let second = signal.hold(demand: 9)
        await gate.waitUntilReached()

        first.cancel()
        second.cancel()
        #expect(signal.state == .stopping, "the stop began")
        #expect(producer.power.powerOffCalls == 0, "but its hook waits for the re-plan")
        #expect(signal.hasPendingTransition)

        gate.open()
        await signal.waitForState(.idle)
        #expect(producer.hooks == [.start(5), .replan(9), .stop])
        #expect(!producer.power.isOn)
        #expect(producer.overlaps == 0)
    }

    @Test func theLingerKeepsThePlan() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(5)), clock: clock)
        let first = signal.hold(demand: 5)
        await signal.waitForState(.running)
        first.cancel()
        #expect(signal.state == .lingering)
        #expect(signal.demand == nil, "nobody demands anything now")

        let back = signal.hold(demand: 5)
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5)], "the same demand came back inside the linger: no re-plan")
        back.cancel()
        let other = signal.hold(demand: 3)
        await signal.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(3)])

        other.cancel()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await signal.waitForState(.idle)
        #expect(producer.hooks == [.start(5), .replan(3), .stop], "no re-plan before the stop")
    }

    @Test func aDemandChangeAfterTheCancelDoesNothing() async throws {
        let signal = producer.makeSignal(clock: clock)
        let keep = signal.hold(demand: 5)
        let leaving = signal.hold(demand: 7)
        await signal.waitForState(.running)
        leaving.cancel()
        leaving.setDemand(99)
        await signal.waitUntilSettled()
        #expect(signal.demand == 5)
        #expect(producer.plan == 5)
        _ = keep
    }

    @Test func aFailureDuringAReplanReachesTheSubscribersAndTheStopWaits() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.hold(demand: 5)
        let inbox = Inbox()
        let token = inbox.subscribe(to: signal)
        await signal.waitForState(.running)
        let gate = producer.gateNextReplan()
        let second = signal.hold(demand: 9)
        await gate.waitUntilReached()

        producer.fail(TestFailure(code: 4))
        #expect(inbox.completions == [String(describing: TestFailure(code: 4))], "told at once")
        #expect(signal.subscriberCount == 0 && signal.demand == nil)
        #expect(producer.power.powerOffCalls == 0)
        gate.open()
        await signal.waitForState(.failed)
        #expect(producer.hooks == [.start(5), .replan(9), .stop])
        #expect(producer.overlaps == 0)
        _ = (token, first, second)
    }

    @Test func aShutdownDuringAReplanWaitsForItThenStops() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.hold(demand: 5)
        await signal.waitForState(.running)
        let gate = producer.gateNextReplan()
        let second = signal.hold(demand: 9)
        await gate.waitUntilReached()

        let shutdown = Task { await signal.shutdown() }
        await signal.waitForState(.stopping)
        gate.open()
        await shutdown.value
        #expect(signal.state == .shutDown)
        #expect(producer.hooks == [.start(5), .replan(9), .stop])
        let late = signal.hold(demand: 1)
        #expect(signal.demand == nil && signal.subscriberCount == 0)
        _ = (first, second, late)
    }

    @Test func aSignalWithoutDemandsHasNoAggregateAndNeverReplans() async throws {
        let counting = TestProducer()
        let signal = counting.makeSignal(clock: clock)
        let token = signal.hold()
        await signal.waitForState(.running)
        #expect(signal.demand == nil)
        #expect(signal.statistics.replans == 0)
        _ = token
    }
}
