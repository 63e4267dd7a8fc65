import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

/// Observers see what the producer sends while it runs for others, and never count.
@Suite("Observing a signal", .timeLimit(.minutes(1)))
struct ObservationTests {
    let clock = ManualClock()
    let producer = TestProducer()
    var power: FakePowerSwitch { producer.power }

    @Test func anObserverNeverStartsTheProducer() async throws {
        let signal = producer.makeSignal(clock: clock)
        let observer = Observer()
        let token = observer.observe(signal)
        #expect(signal.state == .idle)
        #expect(signal.subscriberCount == 0)
        await signal.waitUntilSettled()
        #expect(!power.isOn && signal.statistics.starts == 0)
        _ = token
    }

    @Test func anObserverSeesTheValuesOfEveryRunAndNeverKeepsItOn() async throws {
        let signal = producer.makeSignal(clock: clock)
        let observer = Observer()
        let token = observer.observe(signal)
        let first = signal.hold()
        await signal.waitForState(.running)
        #expect(signal.subscriberCount == 1, "the observer is not counted")
        producer.send(1)
        producer.send(2)
        #expect(observer.values == [1, 2], "delivered in the producer's context")

        first.cancel()
        await signal.waitForState(.idle)
        #expect(!power.isOn, "the observer does not keep it on")
        #expect(!producer.send(3))

        let second = signal.hold()
        await signal.waitForState(.running)
        producer.send(4)
        #expect(observer.values == [1, 2, 4], "it observes across stops and restarts")
        #expect(observer.completions.isEmpty)
        _ = (token, second)
    }

    @Test func anObserverIsNotHandedTheLatestValue() async throws {
        let signal = producer.makeSignal(clock: clock)
        let hold = signal.hold()
        await signal.waitForState(.running)
        producer.send(5)
        let observer = Observer()
        let token = observer.observe(signal)
        #expect(observer.values.isEmpty)
        #expect(signal.latest?.value == 5, "the latest value is there to read")
        producer.send(6)
        #expect(observer.values == [6])
        _ = (hold, token)
    }

    @Test func anObserverDoesNotDelayTheStopOrTheLinger() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(5)), clock: clock)
        let hold = signal.hold()
        await signal.waitForState(.running)
        hold.cancel()
        let observer = Observer()
        let token = observer.observe(signal)
        #expect(signal.state == .lingering, "observing does not cancel the linger")
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await signal.waitForState(.idle)
        #expect(power.transitions == [.on, .off])
        _ = token
    }

    @Test func aFailureDoesNotEndAnObservation() async throws {
        let signal = producer.makeSignal(clock: clock)
        let observer = Observer()
        let token = observer.observe(signal)
        let inbox = Inbox()
        let subscriber = inbox.subscribe(to: signal)
        await signal.waitForState(.running)
        producer.fail(TestFailure(code: 8))
        await signal.waitForState(.failed)
        #expect(inbox.completions == [String(describing: TestFailure(code: 8))])
        #expect(observer.completions.isEmpty)

        let again = signal.hold()
        await signal.waitForState(.running)
        producer.send(9)
        #expect(observer.values == [9])
        _ = (token, subscriber, again)
    }

    @Test func theShutdownEndsAnObservationOnceAndRefusesLaterOnes() async throws {
        let signal = producer.makeSignal(clock: clock)
        let observer = Observer()
        let token = observer.observe(signal)
        let hold = signal.hold()
        await signal.waitForState(.running)
        await signal.shutdown()
        #expect(observer.completions == [String(describing: SignalError.shutDown)])
        token.cancel()
        #expect(observer.completions.count == 1, "ended once")

        let late = Observer()
        _ = late.observe(signal)
        #expect(late.completions == [String(describing: SignalError.shutDown)], "told at once")
        _ = hold
    }

    @Test func cancellingOrReleasingTheTokenEndsTheObservation() async throws {
        let signal = producer.makeSignal(clock: clock)
        let hold = signal.hold()
        await signal.waitForState(.running)
        let cancelled = Observer()
        let token = cancelled.observe(signal)
        let released = Observer()
        do {
            let dropped = released.observe(signal)
            producer.send(1)
            _ = dropped
        }
        token.cancel()
        token.cancel()
        producer.send(2)
        #expect(cancelled.values == [1] && released.values == [1])
        #expect(cancelled.completions.isEmpty, "a cancel is not a completion")
        _ = hold
    }

    @Test func anObserverOfADemandSignalCarriesNoDemand() async throws {
        let demanding = DemandProducer()
        let signal = demanding.makeSignal(clock: clock)
        let observer = Observer()
        let token = observer.observe(signal)
        let hold = signal.hold(demand: 4)
        await signal.waitForState(.running)
        #expect(signal.demand == 4)
        demanding.send(1)
        #expect(observer.values == [1])
        #expect(demanding.hooks == [.start(4)])
        _ = (token, hold)
    }

    // MARK: - Derived signals

    @Test func observingADerivedSignalStartsNeitherItNorItsBase() async throws {
        let base = producer.makeSignal(clock: clock)
        let doubled = base.map { $0 * 2 }
        let observer = Observer()
        let token = observer.observe(doubled)
        await base.waitUntilSettled()
        #expect(base.state == .idle && doubled.state == .idle)
        #expect(base.subscriberCount == 0 && doubled.subscriberCount == 0)
        _ = token
    }

    @Test func anObserverOfADerivedSignalSeesTheBaseRunForOthersEachValueOnce() async throws {
        let base = producer.makeSignal(clock: clock)
        let doubled = base.map { $0 * 2 }
        let bigOnes = doubled.filter { $0 > 10 }
        let observer = Observer()
        let token = observer.observe(doubled)
        let chained = Observer()
        let chainToken = chained.observe(bigOnes)

        let direct = base.hold()
        await base.waitForState(.running)
        #expect(doubled.state == .idle, "the derived signal has no subscriber of its own")
        producer.send(4)
        producer.send(6)
        #expect(observer.values == [8, 12])
        #expect(chained.values == [12])

        let derivedSubscriber = doubled.hold()
        await doubled.waitForState(.running)
        producer.send(7)
        #expect(observer.values == [8, 12, 14], "still once per value with the derived signal running")
        #expect(chained.values == [12, 14])
        _ = (token, chainToken, direct, derivedSubscriber)
    }

    @Test func shuttingDownADerivedSignalOrItsBaseEndsTheObservations() async throws {
        let base = producer.makeSignal(clock: clock)
        let doubled = base.map { $0 * 2 }
        let tripled = base.map { $0 * 3 }
        let ofDoubled = Observer()
        let doubledToken = ofDoubled.observe(doubled)
        let ofTripled = Observer()
        let tripledToken = ofTripled.observe(tripled)
        let hold = base.hold()
        await base.waitForState(.running)

        await doubled.shutdown()
        #expect(ofDoubled.completions == [String(describing: SignalError.shutDown)])
        producer.send(1)
        #expect(ofDoubled.values.isEmpty, "its observation of the base ended with it")
        #expect(ofTripled.values == [3])

        await base.shutdown()
        #expect(ofTripled.completions == [String(describing: SignalError.shutDown)])
        tripledToken.cancel()
        #expect(ofTripled.completions.count == 1)
        let late = Observer()
        _ = late.observe(tripled)
        #expect(late.completions == [String(describing: SignalError.shutDown)],
                "a derived signal whose base is shut down refuses observers too")
        _ = (doubledToken, hold)
    }
}

/// Collects what an observation receives.
final class Observer: Sendable {
    private let state = Lock<(values: [Int], completions: [String])>(([], []))

    var values: [Int] { state.withLock { $0.values } }
    var completions: [String] { state.withLock { $0.completions } }

    func observe<Demand>(_ signal: DemandSignal<Int, Demand>) -> SignalToken {
        signal.observe { [self] value in
            state.withLock { $0.values.append(value) }
        } onCompletion: { [self] completion in
            if case let .failure(error) = completion {
                state.withLock { $0.completions.append(String(describing: error)) }
            }
        }
    }
}
