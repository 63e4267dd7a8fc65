import GNSSHatTesting
import Signals
import Testing

/// A signal nobody holds any more is released, and with it what its hooks capture (a
/// Receiver's hardware session and its threads).
@Suite("Signal lifetime", .timeLimit(.minutes(1)))
struct SignalLifetimeTests {
    /// A signal whose start and stop hooks each capture a marker of `watch`, with a derived
    /// signal, as a Receiver makes them.
    static func makeSignals(_ watch: ReleaseWatch, clock: ManualClock)
        -> (RefCountedSignal<Int>, RefCountedSignal<Int>)
    {
        let started = watch.marker("start hook")
        let stopped = watch.marker("stop hook")
        let signal = RefCountedSignal<Int>(configuration: SignalConfiguration(linger: .seconds(1)), clock: clock) {
            emitter in
            _ = started
            emitter.send(1)
        } stop: {
            _ = stopped
        }
        return (signal, signal.map { $0 * 2 })
    }

    @Test("a signal that never ran, and one derived from it, are released with their hooks")
    func neverStarted() {
        let watch = ReleaseWatch()
        do {
            let (signal, derived) = Self.makeSignals(watch, clock: ManualClock())
            #expect(signal.state == .idle && derived.state == .idle)
        }
        // Nothing ran, so nothing else can hold them: released as the last reference goes.
        #expect(watch.alive.isEmpty, "still alive: \(watch.alive)")
    }

    @Test("after a run, the linger, a hold and a shutdown, the signals are released with their hooks")
    func afterRuns() async throws {
        let watch = ReleaseWatch()
        let clock = ManualClock()
        do {
            let (signal, derived) = Self.makeSignals(watch, clock: clock)
            let values = derived.subscribe()
            var iterator = values.makeAsyncIterator()
            #expect(try await iterator.next() == 2)
            values.cancel()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
            await signal.waitForState(.idle)
            let hold = signal.hold()
            await signal.waitForState(.running)
            _ = hold
            await derived.shutdown()
            await signal.shutdown()
        }
        // Tasks that ran the hooks may still be finishing: they let go when they end.
        await watch.waitUntilAllReleased()
        #expect(watch.alive.isEmpty, "still alive: \(watch.alive)")
    }
}
