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
