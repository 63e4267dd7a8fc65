import GNSSHatTesting
@testable import Signals
import Synchronization
import Testing

/// Seeded random schedules of subscribers and observers coming and going on a signal and a
/// signal derived from it, with values, failures, failing starts and clock advances, run by
/// several tasks at once. After every round, once both signals have settled: the power is on
/// exactly while the base runs, and each signal counts exactly its live subscribers (observers
/// never count). At the end, with every subscriber gone but observers still observing: both
/// signals are stopped and the power is off; every value a subscriber received was also seen
/// by the observers made first, no observer saw a value twice, and everything is released.
@Suite("Observation stress", .timeLimit(.minutes(5)))
struct ObservationStressTests {
    /// Seeds `0..<schedules`; a failure names its seed, and `run(seed:)` replays it alone.
    static let schedules = 2_000
    static let rounds = 6
    static let actors = 3

    @Test func observersNeverCountAndSeeWhatSubscribersSee() async throws {
        let found = await runSchedules(Self.schedules) { await Self.run(seed: $0) }
        #expect(found.isEmpty, "\(found.count) violations, first: \(found.prefix(5))")
    }

    static func run(seed: UInt64) async -> [String] {
        let watch = ReleaseWatch()
        var violations: [String] = []
        do {
            var rng = SplitMix64(seed: seed)
            // No minimum off time and no retries (the other stress tests cover them): a start of
            // the derived signal then never waits for the base to wait for the clock, so both
            // settle without the clock being advanced.
            let configuration = SignalConfiguration(linger: [.zero, .seconds(1), .seconds(5)][rng.next(3)])
            let clock = ManualClock()
            let producer = TestProducer()
            let base = producer.makeSignal(configuration, clock: clock, marker: watch.marker("signal"))
            let derivedLinger: Duration = [.zero, .seconds(2)][rng.next(2)]
            let derived = base.map(configuration: SignalConfiguration(linger: derivedLinger)) { $0 }
            // Observers made before anything else: every value sent from now on reaches them.
            let firstOfBase = Observer()
            let firstOfDerived = Observer()
            let permanent = [firstOfBase.observe(base), firstOfDerived.observe(derived)]
            let schedule = ObservationSchedule(base: base, derived: derived)

            for round in 0..<rounds {
                await withTaskGroup(of: Void.self) { group in
                    for actor in 0..<actors {
                        var actorRNG = SplitMix64(seed: seed &* 1_000_003 &+ UInt64(round * actors + actor))
                        group.addTask {
                            await schedule.perform(&actorRNG, producer: producer, clock: clock)
                        }
                    }
                }
                violations += await schedule.check(producer: producer, when: "round \(round)")
            }

            schedule.cancelSubscribers()
            for _ in 0..<10 {
                await schedule.settle()
                let stopped: Set<SignalState> = [.idle, .failed]
                if stopped.contains(base.state) && stopped.contains(derived.state) { break }
                clock.advance(by: .seconds(60))
            }
            violations += await schedule.check(producer: producer, when: "end")
            if producer.power.isOn { violations.append("power left on with only observers") }
            for (name, signal) in [("base", base), ("derived", derived)] {
                let left = signal.subscriberCount
                if left != 0 { violations.append("\(name): subscribers left: \(left)") }
                if ![.idle, .failed].contains(signal.state) { violations.append("\(name) ended \(signal.state)") }
            }
            violations += schedule.checkValues(firstOfBase: firstOfBase, firstOfDerived: firstOfDerived)
            violations += producer.power.violations
            schedule.cancelObservers()
            permanent.forEach { $0.cancel() }
        }
        await watch.waitUntilAllReleased()
        return violations
    }
}

/// The subscribers and observers of one observation schedule, and what the subscribers got.
final class ObservationSchedule: Sendable {
    enum Target { case base, derived }

    private struct Subscriber {
        var target: Target
        var token: SignalToken?
        var live = true
    }

    private struct State {
        var subscribers: [Subscriber] = []
        var observers: [(observer: Observer, token: SignalToken)] = []
        var received: [Target: Set<Int>] = [.base: [], .derived: []]
    }

    let base: RefCountedSignal<Int>
    let derived: RefCountedSignal<Int>
    private let state = Lock(State())
    /// Values are unique, so that who saw which can be compared.
    private let nextValue = Atomic<Int>(0)

    init(base: RefCountedSignal<Int>, derived: RefCountedSignal<Int>) {
        self.base = base
        self.derived = derived
    }

    func perform(_ rng: inout SplitMix64, producer: TestProducer, clock: ManualClock) async {
        switch rng.next(100) {
        case 0..<16: subscribe(.base, hold: false)
        case 16..<26: subscribe(.derived, hold: false)
        case 26..<30: subscribe(rng.next(2) == 0 ? .base : .derived, hold: true)
        case 30..<50: cancelSubscriber(pick: rng.next(1 << 20))
        case 50..<58: observe(rng.next(2) == 0 ? .base : .derived)
        case 58..<64: cancelObserver(pick: rng.next(1 << 20))
        case 64..<68: producer.power.failNextPowerOn(with: TestFailure(code: 1))
        case 68..<88: producer.send(nextValue.add(1, ordering: .relaxed).newValue)
        case 88..<90: producer.fail(TestFailure(code: 2))
        default: clock.advance(by: .milliseconds(rng.next(6000)))
        }
    }

    /// Waits until neither signal has a transition due (one's may start the other's).
    func settle() async {
        while (base.hasPendingTransition || derived.hasPendingTransition) && !Task.isCancelled {
            await base.waitUntilSettled()
            await derived.waitUntilSettled()
        }
    }

    func check(producer: TestProducer, when: String) async -> [String] {
        await settle()
        var found: [String] = []
        let running: Set<SignalState> = [.running, .lingering]
        if running.contains(base.state) != producer.power.isOn {
            found.append("\(when): base \(base.state) but power \(producer.power.isOn ? "on" : "off")")
        }
        // Callback subscribers hear of failures before the signal settles, so the counts are
        // exact now; a running derived signal holds one subscription of the base itself.
        let (liveBase, liveDerived) = state.withLock { state in
            (state.subscribers.count { $0.live && $0.target == .base },
             state.subscribers.count { $0.live && $0.target == .derived })
        }
        let upstream = running.contains(derived.state) ? 1 : 0
        if base.subscriberCount != liveBase + upstream {
            found.append("\(when): base counts \(base.subscriberCount), live \(liveBase) + \(upstream) derived")
        }
        if derived.subscriberCount != liveDerived {
            found.append("\(when): derived counts \(derived.subscriberCount), live \(liveDerived)")
        }
        return found
    }

    func checkValues(firstOfBase: Observer, firstOfDerived: Observer) -> [String] {
        var found: [String] = []
        let (received, observers) = state.withLock { ($0.received, $0.observers) }
        let seenByBase = Set(firstOfBase.values)
        let seenByDerived = Set(firstOfDerived.values)
        if let missed = received[.base]?.subtracting(seenByBase), !missed.isEmpty {
            found.append("base subscribers got \(missed.sorted().prefix(5)) that the first observer missed")
        }
        if let missed = received[.derived]?.subtracting(seenByDerived), !missed.isEmpty {
            found.append("derived subscribers got \(missed.sorted().prefix(5)) that the first observer missed")
        }
        for observer in [firstOfBase, firstOfDerived] + observers.map(\.observer) {
            let values = observer.values
            if Set(values).count != values.count { found.append("an observer saw a value twice: \(values)") }
            if !Set(values).isSubset(of: seenByBase) {
                found.append("an observer saw values the first observer of the base did not")
            }
        }
        return found
    }

    func cancelSubscribers() {
        let tokens = state.withLock { state -> [SignalToken] in
            defer { for index in state.subscribers.indices { state.subscribers[index].live = false } }
            return state.subscribers.filter(\.live).compactMap(\.token)
        }
        tokens.forEach { $0.cancel() }
    }

    func cancelObservers() {
        let tokens = state.withLock { state -> [SignalToken] in
            defer { state.observers.removeAll() }
            return state.observers.map(\.token)
        }
        tokens.forEach { $0.cancel() }
    }

    private func signal(_ target: Target) -> RefCountedSignal<Int> {
        target == .base ? base : derived
    }

    private func subscribe(_ target: Target, hold: Bool) {
        let index = state.withLock { state in
            state.subscribers.append(Subscriber(target: target))
            return state.subscribers.count - 1
        }
        let ended: @Sendable (SignalCompletion) -> Void = { [self] _ in
            state.withLock { $0.subscribers[index].live = false }
        }
        let token = hold
            ? signal(target).hold(onCompletion: ended)
            : signal(target).subscribe(onValue: { [self] value in
                state.withLock { _ = $0.received[target]?.insert(value) }
            }, onCompletion: ended)
        let cancelNow = state.withLock { state -> Bool in
            state.subscribers[index].token = token
            // Cancelled (or failed) before it was installed: cancel it now (harmless if failed).
            return !state.subscribers[index].live
        }
        if cancelNow { token.cancel() }
    }

    private func cancelSubscriber(pick: Int) {
        let token = state.withLock { state -> SignalToken? in
            let live = state.subscribers.indices.filter { state.subscribers[$0].live }
            guard !live.isEmpty else { return nil }
            let index = live[pick % live.count]
            state.subscribers[index].live = false
            // Not installed yet: `subscribe` cancels it once it has the token.
            return state.subscribers[index].token
        }
        token?.cancel()
    }

    private func observe(_ target: Target) {
        let observer = Observer()
        let token = observer.observe(signal(target))
        state.withLock { $0.observers.append((observer, token)) }
    }

    private func cancelObserver(pick: Int) {
        let token = state.withLock { state -> SignalToken? in
            guard !state.observers.isEmpty else { return nil }
            return state.observers[pick % state.observers.count].token
        }
        // Cancelled observers stay listed: their values are checked at the end too.
        token?.cancel()
    }
}
