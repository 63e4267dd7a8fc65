import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

/// The signal with real tasks, a manual clock and a fake power switch.
@Suite("RefCountedSignal", .timeLimit(.minutes(1)))
struct RefCountedSignalTests {
    let clock = ManualClock()
    let producer = TestProducer()
    var power: FakePowerSwitch { producer.power }

    @Test func zeroOneZeroOneRestartsAndReplaysAcrossTheRestart() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(5)), clock: clock)
        #expect(signal.state == .idle)

        let first = signal.subscribe()
        await signal.waitForState(.running)
        #expect(power.isOn)
        producer.send(1)
        var iterator = first.makeAsyncIterator()
        #expect(try await iterator.next() == 1)

        first.cancel()
        #expect(signal.state == .lingering)
        #expect(power.isOn, "the linger keeps it on")
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await signal.waitForState(.idle)
        #expect(!power.isOn)

        let second = signal.subscribe()
        var again = second.makeAsyncIterator()
        #expect(try await again.next() == 1, "the latest value is kept across the restart")
        await signal.waitForState(.running)
        producer.send(2)
        #expect(try await again.next() == 2)
        #expect(power.transitions == [.on, .off, .on])
        let statistics = signal.statistics
        #expect(statistics.starts == 2 && statistics.stops == 1 && statistics.subscribers == 1)
        #expect(power.violations.isEmpty)
    }

    @Test func subscriberInsideTheLingerKeepsItOn() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(5)), clock: clock)
        let first = signal.subscribe()
        await signal.waitForState(.running)
        first.cancel()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(3))

        let second = signal.subscribe()
        #expect(signal.state == .running)
        #expect(clock.sleeperCount == 0, "the linger's timer was cancelled with the subscribe")
        clock.advance(by: .seconds(10))
        await signal.waitUntilSettled()
        #expect(signal.state == .running)
        #expect(power.transitions == [.on])

        second.cancel()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1, "the new linger's timer is not due yet")
        await signal.waitUntilSettled()
        #expect(signal.state == .lingering, "a new linger starts from the last cancel")
        clock.advance(by: .seconds(1))
        await signal.waitForState(.idle)
        #expect(power.transitions == [.on, .off])
        #expect(signal.statistics.starts == 1)
    }

    @Test func subscribeWhileStoppingWaitsForTheStopThenStarts() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.subscribe()
        await signal.waitForState(.running)

        let gate = power.gateNextPowerOff()
        first.cancel()
        await gate.waitUntilReached()
        #expect(signal.state == .stopping)

        let second = signal.subscribe()
        #expect(signal.state == .stopping, "no start overlaps the stop")
        #expect(power.powerOnCalls == 1)
        gate.open()
        await power.waitForTransitions(3)
        await signal.waitForState(.running)
        #expect(power.transitions == [.on, .off, .on])
        #expect(power.violations.isEmpty)
        _ = second
    }

    @Test func cancelDuringStartLetsItFinishThenStops() async throws {
        let signal = producer.makeSignal(clock: clock)
        let gate = power.gateNextPowerOn()
        let subscription = signal.subscribe()
        await gate.waitUntilReached()
        subscription.cancel()
        #expect(signal.subscriberCount == 0)
        #expect(signal.state == .starting)

        gate.open()
        await signal.waitForState(.idle)
        #expect(power.transitions == [.on, .off])
        #expect(power.violations.isEmpty)
    }

    @Test func failedStartReachesEveryWaiterAndNothingHangs() async throws {
        let signal = producer.makeSignal(clock: clock)
        power.failNextPowerOn(with: TestFailure(code: 42))
        let gate = power.gateNextPowerOn()
        let first = signal.subscribe()
        let second = signal.subscribe(buffering: .bounded(8))
        let inbox = Inbox()
        let token = inbox.subscribe(to: signal)
        await gate.waitUntilReached()
        gate.open()

        for subscription in [first, second] {
            await #expect(throws: TestFailure(code: 42)) {
                for try await _ in subscription {}
            }
        }
        await signal.waitForState(.failed)
        #expect(inbox.completions == [String(describing: TestFailure(code: 42))])
        #expect(signal.subscriberCount == 0)
        #expect(signal.statistics.failures == 1)
        #expect(!power.isOn)
        #expect(power.powerOffCalls == 1, "the stop hook cleans up after a failed start")

        let next = signal.subscribe()
        await signal.waitForState(.running)
        #expect(power.transitions == [.on])
        _ = (token, next)
    }

    @Test func retryPolicyRetriesWithBackOffWhileSubscribersWait() async throws {
        let configuration = SignalConfiguration(
            restart: .retry(maxAttempts: 3, initialDelay: .seconds(2), multiplier: 2)
        )
        let signal = producer.makeSignal(configuration, clock: clock)
        power.failNextPowerOn(with: TestFailure(code: 1))
        power.failNextPowerOn(with: TestFailure(code: 2))
        let subscription = signal.subscribe()

        await power.waitForPowerOnAttempts(1)
        await clock.waitForSleepers(1)
        #expect(clock.nextDeadline == ManualClock.Instant(offset: .seconds(2)))
        #expect(signal.state == .failed)
        clock.advance(by: .seconds(2))
        await power.waitForPowerOnAttempts(2)
        await clock.waitForSleepers(1)
        #expect(clock.nextDeadline == ManualClock.Instant(offset: .seconds(6)))
        clock.advance(by: .seconds(4))
        await signal.waitForState(.running)
        producer.send(7)
        var iterator = subscription.makeAsyncIterator()
        #expect(try await iterator.next() == 7, "the waiting subscriber never saw the failures")
        #expect(signal.statistics.failures == 2)
    }

    @Test func retryPolicyGivesUpAfterTheLastAttempt() async throws {
        let configuration = SignalConfiguration(restart: .retry(maxAttempts: 2, initialDelay: .seconds(1)))
        let signal = producer.makeSignal(configuration, clock: clock)
        power.failNextPowerOn(with: TestFailure(code: 1))
        power.failNextPowerOn(with: TestFailure(code: 2))
        let subscription = signal.subscribe()
        await power.waitForPowerOnAttempts(1)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        await #expect(throws: TestFailure(code: 2)) {
            for try await _ in subscription {}
        }
        await signal.waitForState(.failed)
        #expect(!power.isOn)
    }

    @Test func lateSubscriberGetsTheLatestValueAtOnce() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.subscribe()
        await signal.waitForState(.running)
        producer.send(41)
        producer.send(42)

        let inbox = Inbox()
        let token = inbox.subscribe(to: signal)
        #expect(inbox.values == [42], "delivered inside subscribe, before it returns")

        let late = signal.subscribe()
        var iterator = late.samples.makeAsyncIterator()
        let sample = try #require(try await iterator.next())
        #expect(sample.value == 42)
        #expect(signal.latest?.value == 42)
        _ = (first, token)
    }

    @Test func valuesSentWhileTheReplayIsHandedOverFollowItInOrder() async throws {
        let signal = producer.makeSignal(clock: clock)
        let first = signal.subscribe()
        await signal.waitForState(.running)
        producer.send(1)

        // The replayed 1 is being handed over while 2 and 3 are sent (from its own callback, so
        // deterministically): they are stashed, then delivered after it, then the sink goes live.
        let producer = producer
        let received = Lock<[Int]>([])
        let token = signal.subscribe(onValue: { value in
            let isReplay = received.withLock { values in
                values.append(value)
                return values.count == 1
            }
            if isReplay {
                producer.send(2)
                producer.send(3)
            }
        })
        #expect(received.withLock { $0 } == [1, 2, 3], "the stashed values, boxed, come back as they were sent")
        producer.send(4)
        #expect(received.withLock { $0 } == [1, 2, 3, 4])
        token.cancel()
        producer.send(5)
        #expect(received.withLock { $0 } == [1, 2, 3, 4])
        _ = first
    }

    @Test func replayedValueCarriesItsAgeAndExpiresAfterMaxAge() async throws {
        let signal = producer.makeSignal(SignalConfiguration(replay: .latest(maxAge: .seconds(2))), clock: clock)
        let holder = signal.hold()
        await signal.waitForState(.running)
        producer.send(5)
        clock.advance(by: .seconds(1))
        #expect(signal.latest?.age == .seconds(1))

        let ages = AgeInbox()
        let young = signal.subscribe(onSample: { ages.append($0) })
        #expect(ages.samples.map(\.value) == [5])
        #expect(ages.samples.map(\.age) == [.seconds(1)])

        clock.advance(by: .seconds(2))
        #expect(signal.latest == nil, "older than maxAge")
        let inbox = Inbox()
        let old = inbox.subscribe(to: signal)
        #expect(inbox.values.isEmpty)
        producer.send(6)
        #expect(inbox.values == [6])
        _ = (holder, young, old)
    }

    @Test func failureClearsTheLatestValueWhenAsked() async throws {
        let signal = producer.makeSignal(SignalConfiguration(replay: .latest(clearOnFailure: true)), clock: clock)
        let subscription = signal.subscribe()
        await signal.waitForState(.running)
        producer.send(1)
        producer.fail(TestFailure(code: 3))
        await #expect(throws: TestFailure(code: 3)) {
            for try await _ in subscription {}
        }
        await signal.waitForState(.failed)
        #expect(signal.latest == nil)
        #expect(!power.isOn)
    }

    @Test func failureKeepsTheLatestValueByDefault() async throws {
        let signal = producer.makeSignal(clock: clock)
        let subscription = signal.subscribe()
        await signal.waitForState(.running)
        producer.send(1)
        producer.fail(TestFailure(code: 3))
        await #expect(throws: TestFailure(code: 3)) {
            for try await _ in subscription {}
        }
        #expect(signal.latest?.value == 1)
    }

    @Test func minimumOffTimeHoldsBackTheRestart() async throws {
        let signal = producer.makeSignal(SignalConfiguration(minimumOffTime: .seconds(10)), clock: clock)
        let first = signal.subscribe()
        await signal.waitForState(.running)
        first.cancel()
        await signal.waitForState(.idle)

        clock.advance(by: .seconds(1))
        let second = signal.subscribe()
        #expect(signal.state == .waitingToStart)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(8))
        #expect(clock.sleeperCount == 1, "the start waits for t+10s")
        await signal.waitUntilSettled()
        #expect(signal.state == .waitingToStart)
        #expect(!power.isOn)
        clock.advance(by: .seconds(1))
        await signal.waitForState(.running)
        #expect(power.transitions == [.on, .off, .on])
        _ = second
    }

    @Test func slowSubscriberNeitherBlocksTheProducerNorTheOthers() async throws {
        let signal = producer.makeSignal(clock: clock)
        let fast = signal.subscribe(buffering: .bounded(1000))
        let slow = signal.subscribe()
        await signal.waitForState(.running)
        for value in 1...100 { #expect(producer.send(value)) }

        var received: [Int] = []
        for try await value in fast {
            received.append(value)
            if received.count == 100 { break }
        }
        #expect(received == Array(1...100))
        var slowIterator = slow.makeAsyncIterator()
        #expect(try await slowIterator.next() == 100, "latest-only: the slow one sees the newest value")
        #expect(slow.droppedCount == 99)
    }

    @Test func boundedBufferDropsTheOldestAndCounts() async throws {
        let signal = producer.makeSignal(clock: clock)
        let subscription = signal.subscribe(buffering: .bounded(3))
        await signal.waitForState(.running)
        for value in 1...10 { producer.send(value) }
        var iterator = subscription.makeAsyncIterator()
        var values: [Int] = []
        for _ in 0..<3 { values.append(try #require(try await iterator.next())) }
        #expect(values == [8, 9, 10])
        #expect(subscription.droppedCount == 7)
    }

    @Test func holdKeepsItRunningWithoutConsuming() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(2)), clock: clock)
        let hold = signal.hold()
        await signal.waitForState(.running)
        let subscription = signal.subscribe()
        subscription.cancel()
        #expect(signal.state == .running, "the hold still counts")
        #expect(signal.subscriberCount == 1)
        hold.cancel()
        hold.cancel()
        #expect(signal.state == .lingering)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        await signal.waitForState(.idle)
        #expect(power.transitions == [.on, .off])
    }

    @Test func releasedTokenCancels() async throws {
        let signal = producer.makeSignal(clock: clock)
        do {
            let token = signal.subscribe(onValue: { _ in })
            await signal.waitForState(.running)
            _ = token
        }
        await signal.waitForState(.idle)
        #expect(signal.subscriberCount == 0)
        #expect(power.transitions == [.on, .off])
    }

    @Test func cancellingTheIteratingTaskEndsTheSubscription() async throws {
        let signal = producer.makeSignal(clock: clock)
        let task = Task {
            var count = 0
            for try await _ in signal { count += 1 }
            return count
        }
        await signal.waitForState(.running)
        producer.send(1)
        task.cancel()
        _ = try await task.value
        await signal.waitForState(.idle)
        #expect(signal.subscriberCount == 0)
        #expect(!power.isOn)
    }

    @Test func shutdownStopsAndRejectsLaterSubscribers() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(60)), clock: clock)
        let subscription = signal.subscribe()
        let inbox = Inbox()
        let token = inbox.subscribe(to: signal)
        await signal.waitForState(.running)

        await signal.shutdown()
        #expect(signal.state == .shutDown)
        #expect(!power.isOn, "no linger on shutdown")
        await #expect(throws: SignalError.shutDown) {
            for try await _ in subscription {}
        }
        #expect(inbox.completions == [String(describing: SignalError.shutDown)])

        let late = signal.subscribe()
        await #expect(throws: SignalError.shutDown) {
            for try await _ in late {}
        }
        let lateInbox = Inbox()
        _ = lateInbox.subscribe(to: signal)
        #expect(lateInbox.completions.count == 1)
        await signal.shutdown()
        #expect(power.transitions == [.on, .off])
        _ = token
    }

    @Test func shutdownDuringStartWaitsForTheStart() async throws {
        let signal = producer.makeSignal(clock: clock)
        let gate = power.gateNextPowerOn()
        let subscription = signal.subscribe()
        await gate.waitUntilReached()
        let shutdown = Task { await signal.shutdown() }
        await signal.waitForState(.starting)
        gate.open()
        await shutdown.value
        #expect(power.transitions == [.on, .off])
        #expect(signal.state == .shutDown)
        _ = subscription
    }

    @Test func stateChangesAreObservedInOrder() async throws {
        let signal = producer.makeSignal(SignalConfiguration(linger: .seconds(1)), clock: clock)
        let states = signal.stateChanges()
        let collector = Task {
            var seen: [SignalState] = []
            for await state in states {
                seen.append(state)
                if state == .idle && seen.count > 1 { break }
            }
            return seen
        }
        let subscription = signal.subscribe()
        await signal.waitForState(.running)
        subscription.cancel()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let seen = await collector.value
        #expect(seen == [.idle, .starting, .running, .lingering, .stopping, .idle])
    }

    @Test func timeRunningFollowsTheClock() async throws {
        let signal = producer.makeSignal(clock: clock)
        let subscription = signal.subscribe()
        await signal.waitForState(.running)
        clock.advance(by: .seconds(30))
        subscription.cancel()
        await signal.waitForState(.idle)
        clock.advance(by: .seconds(100))
        #expect(signal.statistics.timeRunning == .seconds(30))
        #expect(signal.statistics.timeActive == .seconds(30))
    }
}

final class AgeInbox: Sendable {
    private let state = Lock<[Sample<Int>]>([])
    var samples: [Sample<Int>] { state.withLock { $0 } }
    func append(_ sample: Sample<Int>) { state.withLock { $0.append(sample) } }
}
