import LinuxSystem
import Signals
import Testing

// The README's demand example with a stand-in hat: if this stops compiling or working, the
// README is wrong.

private struct Fix: Sendable {
    var latitude: Double
}

/// A hat that records how it was asked to run.
private final class Hat: Sendable {
    private let state = Lock<(plans: [Duration?], onFix: (@Sendable (Fix) -> Void)?)>(([], nil))

    var plans: [Duration?] { state.withLock { $0.plans } }

    func powerOn(every interval: Duration?) async throws {
        state.withLock { $0.plans.append(interval) }
    }

    func onFix(_ handler: @escaping @Sendable (Fix) -> Void) {
        state.withLock { $0.onFix = handler }
    }

    func reconfigure(every interval: Duration?) async {
        state.withLock { $0.plans.append(interval) }
    }

    func powerOff() async {
        state.withLock { $0.onFix = nil }
    }

    func produce(_ fix: Fix) {
        state.withLock { $0.onFix }?(fix)
    }
}

@Suite("README demand example", .timeLimit(.minutes(1)))
struct ReadmeDemandExampleTests {
    @Test func theExampleReplansAsItSays() async throws {
        let hat = Hat()
        let logged = Lock<[Fix]>([])
        @Sendable func log(_ fix: Fix) { logged.withLock { $0.append(fix) } }

        let fixes = DemandSignal<Fix, Duration>(demand: .minimum) { emitter, interval in
            try await hat.powerOn(every: interval)        // first subscriber: the aggregate of now
            hat.onFix { emitter.send($0) }
        } replan: { interval in
            await hat.reconfigure(every: interval)        // the aggregate changed while running
        } stop: {
            await hat.powerOff()
        }

        let logger = fixes.subscribe(demand: .seconds(600)) { fix in log(fix) }   // a DemandToken
        let watch = fixes.subscribe(demand: .seconds(60))                         // async, a DemandSubscription
        watch.setDemand(.seconds(1))                      // re-plans at once: fixes.demand == 1 s

        #expect(fixes.demand == .seconds(1))
        await fixes.waitForState(.running)
        await fixes.waitUntilSettled()
        #expect(hat.plans.last == .seconds(1), "the producer was last told the aggregate")
        #expect(hat.plans.first == .seconds(600), "the start got the aggregate when the first subscriber came")
        hat.produce(Fix(latitude: 47))
        var iterator = watch.makeAsyncIterator()
        #expect(try await iterator.next()?.latitude == 47)
        #expect(logged.withLock { $0.map(\.latitude) } == [47])
        logger.cancel()
        watch.cancel()
        await fixes.waitForState(.idle)
    }
}
