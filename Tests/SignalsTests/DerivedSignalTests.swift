import GNSSHatTesting
import Signals
import Testing

@Suite("Derived signals", .timeLimit(.minutes(1)))
struct DerivedSignalTests {
    let clock = ManualClock()
    let producer = TestProducer()

    @Test func derivedSubscriberPowersTheBaseAndReleasesIt() async throws {
        let base = producer.makeSignal(SignalConfiguration(linger: .seconds(5)), clock: clock)
        let doubled = base.map { $0 * 2 }
        #expect(base.state == .idle)

        let subscription = doubled.subscribe()
        await doubled.waitForState(.running)
        #expect(base.state == .running, "the derived start waits for the base to run")
        #expect(base.subscriberCount == 1)
        producer.send(21)
        var iterator = subscription.makeAsyncIterator()
        #expect(try await iterator.next() == 42)
        #expect(doubled.latest?.value == 42, "the derived signal keeps its own latest value")
        #expect(base.latest?.value == 21)

        subscription.cancel()
        await doubled.waitForState(.idle)
        #expect(base.state == .lingering, "the base lingers by its own configuration")
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await base.waitForState(.idle)
        #expect(producer.power.transitions == [.on, .off])
    }

    @Test func derivedSignalsShareOneBaseRun() async throws {
        let base = producer.makeSignal(clock: clock)
        let evens = base.filter { $0.isMultiple(of: 2) }
        let labels = base.compactMap { $0 > 10 ? "big \($0)" : nil }
        let evenInbox = Inbox()
        let evenToken = evenInbox.subscribe(to: evens)
        let labelSubscription = labels.subscribe(buffering: .bounded(10))
        await evens.waitForState(.running)
        await labels.waitForState(.running)
        #expect(base.subscriberCount == 2)
        #expect(producer.power.transitions == [.on], "one power-on for every view")

        for value in [1, 2, 11, 12] { producer.send(value) }
        #expect(evenInbox.values == [2, 12])
        var iterator = labelSubscription.makeAsyncIterator()
        #expect(try await iterator.next() == "big 11")
        #expect(try await iterator.next() == "big 12")

        evenToken.cancel()
        labelSubscription.cancel()
        await base.waitForState(.idle)
        #expect(producer.power.transitions == [.on, .off])
    }

    @Test func baseStartFailureReachesDerivedSubscribers() async throws {
        let base = producer.makeSignal(clock: clock)
        let mapped = base.map { $0 + 1 }
        producer.power.failNextPowerOn(with: TestFailure(code: 5))
        let subscription = mapped.subscribe()
        await #expect(throws: TestFailure(code: 5)) {
            for try await _ in subscription {}
        }
        await base.waitForState(.failed)
        await mapped.settle()
        #expect(mapped.subscriberCount == 0)
        #expect(base.subscriberCount == 0)
        #expect(!producer.power.isOn)
    }

    @Test func baseRuntimeFailureReachesDerivedSubscribers() async throws {
        let base = producer.makeSignal(clock: clock)
        let mapped = base.map { $0 + 1 }
        let subscription = mapped.subscribe()
        await mapped.waitForState(.running)
        producer.fail(TestFailure(code: 6))
        await #expect(throws: TestFailure(code: 6)) {
            for try await _ in subscription {}
        }
        await base.waitForState(.failed)
        #expect(!producer.power.isOn)

        let again = mapped.subscribe()
        await mapped.waitForState(.running)
        #expect(producer.power.transitions == [.on, .off, .on], "the next subscriber starts cleanly")
        _ = again
    }

    @Test func lateDerivedSubscriberGetsTheDerivedLatestAtOnce() async throws {
        let base = producer.makeSignal(clock: clock)
        let mapped = base.map { "v\($0)" }
        let first = mapped.subscribe()
        await mapped.waitForState(.running)
        producer.send(3)
        var iterator = first.makeAsyncIterator()
        #expect(try await iterator.next() == "v3")
        let late = mapped.subscribe()
        var lateIterator = late.makeAsyncIterator()
        #expect(try await lateIterator.next() == "v3")
    }
}

/// Demands given to derived signals reach the base signal that powers the producer.
@Suite("Derived signals: demand", .timeLimit(.minutes(1)))
struct DerivedDemandTests {
    let clock = ManualClock()
    let producer = DemandProducer()

    @Test func aDerivedSignalSubscribesItsBaseWithItsAggregateAndUpdatesIt() async throws {
        let base = producer.makeSignal(clock: clock)
        let doubled = base.map { $0 * 2 }
        let first = doubled.subscribe(demand: 5, buffering: .bounded(4))
        await doubled.waitForState(.running)
        #expect(producer.hooks == [.start(5)], "the base starts for the derived signal's demand")
        #expect(base.demand == 5 && doubled.demand == 5)
        #expect(base.subscriberCount == 1)

        let second = doubled.subscribe(demand: 8, onValue: { _ in })
        await doubled.waitUntilSettled()
        await base.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(8)])
        #expect(doubled.statistics.replans == 1 && base.statistics.replans == 1)

        second.setDemand(3)
        await doubled.waitUntilSettled()
        await base.waitUntilSettled()
        #expect(producer.hooks == [.start(5), .replan(8), .replan(5)])
        #expect(base.demand == 5)

        producer.send(21)
        var iterator = first.makeAsyncIterator()
        #expect(try await iterator.next() == 42)
        _ = second
    }

    @Test func severalDerivedSignalsCombineAtTheBase() async throws {
        let base = producer.makeSignal(clock: clock)
        let evens = base.filter { $0.isMultiple(of: 2) }
        let big = base.compactMap { $0 > 10 ? "big \($0)" : nil }
        let labels = big.map { $0.uppercased() }
        let even = evens.hold(demand: 3)
        await evens.waitForState(.running)
        let label = labels.subscribe(demand: 6, onValue: { _ in })
        await labels.waitForState(.running)
        await base.waitUntilSettled()
        #expect(base.demand == 6, "through a chain of two derived signals too")
        #expect(producer.hooks == [.start(3), .replan(6)])

        label.cancel()
        await labels.waitForState(.idle)
        // The chain lets go one stop hook at a time: the middle one last.
        await big.waitForState(.idle)
        await base.waitUntilSettled()
        #expect(base.demand == 3)
        #expect(producer.hooks == [.start(3), .replan(6), .replan(3)])
        #expect(producer.overlaps == 0)
        _ = even
    }

    @Test func aDerivedSubscriberWithoutDemandContributesNothingUpstream() async throws {
        let base = producer.makeSignal(clock: clock)
        let mapped = base.map { $0 + 1 }
        let direct = base.hold(demand: 4)
        await base.waitForState(.running)
        let plain = mapped.subscribe()
        await mapped.waitForState(.running)
        #expect(base.subscriberCount == 2)
        #expect(base.demand == 4)
        #expect(producer.hooks == [.start(4)])
        _ = (direct, plain)
    }

    @Test func aLingeringDerivedSignalKeepsItsDemandOnTheBase() async throws {
        let base = producer.makeSignal(clock: clock)
        let mapped = base.map(configuration: SignalConfiguration(linger: .seconds(5))) { $0 }
        let direct = base.hold(demand: 1)
        await base.waitForState(.running)
        let viaMapped = mapped.hold(demand: 7)
        await mapped.waitForState(.running)
        await base.waitUntilSettled()
        #expect(base.demand == 7)

        viaMapped.cancel()
        #expect(mapped.state == .lingering)
        await base.waitUntilSettled()
        #expect(base.demand == 7, "the linger keeps the plan, upstream too")
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await mapped.waitForState(.idle)
        await base.waitUntilSettled()
        #expect(base.demand == 1)
        #expect(producer.hooks == [.start(1), .replan(7), .replan(1)])
        _ = direct
    }
}
