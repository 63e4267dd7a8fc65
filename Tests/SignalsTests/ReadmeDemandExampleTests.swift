import LinuxSystem
import Signals
import Testing

// The README's signal examples with a stand-in hat, verbatim between the `README:` and `:README` marks: if this
// stops compiling or working, the README is wrong (GNSSHatTests' `ReadmeVerbatimTests` checks the README shows them).

private struct Fix: Sendable {
    var latitude: Double
    var longitude = 0.0
}

/// A hat that records how it was asked to run.
private final class Hat: Sendable {
    private let state = Lock<(plans: [Duration?], onFix: (@Sendable (Fix) -> Void)?)>(([], nil))

    var plans: [Duration?] { state.withLock { $0.plans } }

    func powerOn() async throws {
        state.withLock { $0.plans.append(nil) }
    }

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

/// The count example: compiled, not run (its loop ends only with the signal).
private func readmeCountExample(hat: Hat) async throws {
    // README:
    let fixes = RefCountedSignal<Fix>(configuration: .init(linger: .seconds(5))) { emitter in
        try await hat.powerOn()                       // first subscriber: power on
        hat.onFix { emitter.send($0) }                // every value goes to every subscriber
    } stop: {
        await hat.powerOff()                          // 5 s after the last one leaves: power off
    }

    for try await fix in fixes {                      // subscribed while the loop runs
        print(fix.latitude, fix.longitude)
    }
    // :README
}

@Suite("README demand example", .timeLimit(.minutes(1)))
struct ReadmeDemandExampleTests {
    @Test func theExampleReplansAsItSays() async throws {
        let hat = Hat()
        let logged = Lock<[Fix]>([])
        @Sendable func log(_ fix: Fix) { logged.withLock { $0.append(fix) } }

        // README:
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
        // :README

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
