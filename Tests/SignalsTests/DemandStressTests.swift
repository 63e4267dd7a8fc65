import GNSSHatTesting
@testable import Signals
import Synchronization
import Testing

/// Seeded random schedules of subscriptions and holds with random demands (or none), demand
/// changes, cancels, failing starts, producer failures and clock advances, run by several tasks
/// at once. After every round, once the signal has settled: the aggregate is exactly the
/// combination of the live demands, and a running producer was last told that aggregate (by its
/// start or its last re-plan). Throughout: start, re-plan and stop never overlapped. At the end:
/// nobody is left subscribed, no demand is left, the power is off, and the signal is released.
@Suite("DemandSignal stress", .timeLimit(.minutes(5)))
struct DemandStressTests {
    /// Seeds `0..<schedules`; a failure names its seed, and `run(seed:)` replays it alone.
    static let schedules = 3_000
    static let rounds = 6
    static let actors = 3

    @Test func randomDemandSchedulesKeepTheAggregateExact() async throws {
        let found = await runSchedules(Self.schedules) { await Self.run(seed: $0) }
        #expect(found.isEmpty, "\(found.count) violations, first: \(found.prefix(5))")
    }

    static func run(seed: UInt64) async -> [String] {
        let watch = ReleaseWatch()
        var violations: [String] = []
        do {
            var rng = SplitMix64(seed: seed)
            let configuration = SignalConfiguration(
                linger: [.zero, .seconds(1), .seconds(5)][rng.next(3)],
                minimumOffTime: [.zero, .seconds(3)][rng.next(2)],
                restart: rng.next(3) == 0 ? .retry(maxAttempts: 3, initialDelay: .seconds(1)) : .onNextSubscriber
            )
            let clock = ManualClock()
            let producer = DemandProducer(hooksSuspend: true)
            let signal = producer.makeSignal(configuration, clock: clock, marker: watch.marker("signal"))
            let tracker = DemandTracker()

            for round in 0..<rounds {
                await withTaskGroup(of: Void.self) { group in
                    for actor in 0..<actors {
                        var actorRNG = SplitMix64(seed: seed &* 1_000_003 &+ UInt64(round * actors + actor))
                        group.addTask {
                            await perform(&actorRNG, signal: signal, producer: producer, clock: clock, tracker: tracker)
                        }
                    }
                }
                violations += await check(signal, producer: producer, tracker: tracker, when: "round \(round)")
            }

            tracker.cancelAll()
            for _ in 0..<10 {
                await signal.waitUntilSettled()
                if signal.state == .idle || signal.state == .failed { break }
                clock.advance(by: .seconds(60))
            }
            await tracker.waitForConsumers()
            violations += await check(signal, producer: producer, tracker: tracker, when: "end")
            if producer.power.isOn { violations.append("power left on with no subscriber") }
            if signal.subscriberCount != 0 { violations.append("subscribers left: \(signal.subscriberCount)") }
            if let left = signal.demand { violations.append("demand left: \(left)") }
            if !(signal.state == .idle || signal.state == .failed) { violations.append("ended \(signal.state)") }
            if producer.overlaps != 0 { violations.append("\(producer.overlaps) hooks overlapped another") }
            violations += producer.power.violations
        }
        // The signal, the tracker's tokens and the hooks' tasks are gone: so must be the hooks.
        await watch.waitUntilAllReleased()
        return violations
    }

    static func perform(
        _ rng: inout SplitMix64,
        signal: DemandSignal<Int, Int>,
        producer: DemandProducer,
        clock: ManualClock,
        tracker: DemandTracker
    ) async {
        // A third of the subscriptions carry no demand.
        let demand: Int? = rng.next(3) == 0 ? nil : rng.next(100)
        switch rng.next(100) {
        case 0..<22: tracker.subscribeCallback(signal, demand: demand)
        case 22..<32: tracker.subscribeAsync(signal, demand: demand)
        case 32..<38: tracker.hold(signal, demand: demand)
        case 38..<58: tracker.setDemand(pick: rng.next(1 << 20), to: demand)
        case 58..<80: tracker.cancel(pick: rng.next(1 << 20))
        case 80..<84: producer.power.failNextPowerOn(with: TestFailure(code: 1))
        case 84..<91: producer.send(rng.next(1000))
        case 91..<93: producer.fail(TestFailure(code: 2))
        default: clock.advance(by: .milliseconds(rng.next(6000)))
        }
    }

    static func check(
        _ signal: DemandSignal<Int, Int>,
        producer: DemandProducer,
        tracker: DemandTracker,
        when: String
    ) async -> [String] {
        await signal.waitUntilSettled()
        await tracker.waitUntilLive(equals: signal)
        var found: [String] = []
        let expected = tracker.liveDemands.max()
        let aggregate = signal.demand
        if aggregate != expected {
            found.append("\(when): aggregate \(show(aggregate)), the live demands combine to \(show(expected))")
        }
        let state = signal.state
        if state == .running, producer.plan != .some(aggregate) {
            found.append("\(when): running for \(show(producer.plan ?? nil)), aggregate \(show(aggregate))")
        }
        let running = state == .running || state == .lingering
        if running != producer.power.isOn {
            found.append("\(when): state \(state) but power \(producer.power.isOn ? "on" : "off")")
        }
        return found
    }
}

func show(_ demand: Int?) -> String {
    demand.map(String.init) ?? "no demand"
}

/// The tokens of one demand schedule, with each one's status and demand, and the async consumers.
final class DemandTracker: Sendable {
    enum Status { case live, cancelled, failed }

    private struct Entry {
        var cancel: @Sendable () -> Void
        /// `nil` for a subscription made without a demand (it cannot carry one later).
        var setDemand: (@Sendable (Int?) -> Void)?
        var demand: Int?
        var status: Status
    }

    private struct State {
        var entries: [Entry] = []
        var consumers: [Task<Void, Never>] = []
    }

    private let state = Lock(State())
    private let changes = ConditionWaiters()

    /// The demands of the subscriptions the schedule still holds.
    var liveDemands: [Int] {
        state.withLock { state in state.entries.filter { $0.status == .live }.compactMap(\.demand) }
    }

    func subscribeCallback(_ signal: DemandSignal<Int, Int>, demand: Int?) {
        let index = reserve(demand: demand)
        let onCompletion: @Sendable (SignalCompletion) -> Void = { [self] _ in mark(index, .failed) }
        if let demand {
            let token = signal.subscribe(demand: demand, onValue: { _ in }, onCompletion: onCompletion)
            install(index, cancel: { token.cancel() }, setDemand: { token.setDemand($0) })
        } else {
            let token = signal.subscribe(onValue: { _ in }, onCompletion: onCompletion)
            install(index, cancel: { token.cancel() })
        }
    }

    func subscribeAsync(_ signal: DemandSignal<Int, Int>, demand: Int?) {
        let index = reserve(demand: demand)
        let subscription: SignalSubscription<Int>
        if let demand {
            let demanding = signal.subscribe(demand: demand, buffering: .latest)
            subscription = demanding.subscription
            install(index, cancel: { demanding.cancel() }, setDemand: { demanding.setDemand($0) })
        } else {
            subscription = signal.subscribe(buffering: .latest)
            install(index, cancel: { subscription.cancel() })
        }
        let consumer = Task { [self] in
            do {
                for try await _ in subscription {}
            } catch {
                mark(index, .failed)
            }
        }
        state.withLock { $0.consumers.append(consumer) }
    }

    func hold(_ signal: DemandSignal<Int, Int>, demand: Int?) {
        let index = reserve(demand: demand)
        let onCompletion: @Sendable (SignalCompletion) -> Void = { [self] _ in mark(index, .failed) }
        if let demand {
            let token = signal.hold(demand: demand, onCompletion: onCompletion)
            install(index, cancel: { token.cancel() }, setDemand: { token.setDemand($0) })
        } else {
            let token = signal.hold(onCompletion: onCompletion)
            install(index, cancel: { token.cancel() })
        }
    }

    /// Changes the demand of a live subscription made with one. The signal is called under the
    /// tracker's lock, so that the tracker records changes in the order the signal sees them
    /// (a demand change calls nothing back).
    func setDemand(pick: Int, to demand: Int?) {
        state.withLock { state in
            let changeable = state.entries.indices.filter {
                state.entries[$0].status == .live && state.entries[$0].setDemand != nil
            }
            guard !changeable.isEmpty else { return }
            let index = changeable[pick % changeable.count]
            state.entries[index].demand = demand
            state.entries[index].setDemand?(demand)
        }
    }

    func cancel(pick: Int) {
        let cancel = state.withLock { state -> (@Sendable () -> Void)? in
            let live = state.entries.indices.filter { state.entries[$0].status == .live }
            guard !live.isEmpty else { return nil }
            let index = live[pick % live.count]
            state.entries[index].status = .cancelled
            return state.entries[index].cancel
        }
        cancel?()
        changes.resumeAll()
    }

    func cancelAll() {
        let cancels = state.withLock { state -> [@Sendable () -> Void] in
            defer {
                for index in state.entries.indices where state.entries[index].status == .live {
                    state.entries[index].status = .cancelled
                }
            }
            return state.entries.filter { $0.status == .live }.map(\.cancel)
        }
        for cancel in cancels { cancel() }
        changes.resumeAll()
    }

    func waitForConsumers() async {
        for consumer in state.withLock({ $0.consumers }) { await consumer.value }
    }

    /// Waits until the live tokens match the signal's count; failure notifications may still
    /// be on their way when the signal has already removed the subscriber.
    func waitUntilLive(equals signal: DemandSignal<Int, Int>) async {
        let live = { [self] in state.withLock { $0.entries.count { $0.status == .live } } }
        while live() != signal.subscriberCount && !Task.isCancelled {
            await changes.wait { live() == signal.subscriberCount }
        }
    }

    private func reserve(demand: Int?) -> Int {
        state.withLock { state in
            state.entries.append(Entry(cancel: {}, setDemand: nil, demand: demand, status: .live))
            return state.entries.count - 1
        }
    }

    private func install(
        _ index: Int,
        cancel: @escaping @Sendable () -> Void,
        setDemand: (@Sendable (Int?) -> Void)? = nil
    ) {
        let cancelNow = state.withLock { state -> Bool in
            state.entries[index].cancel = cancel
            state.entries[index].setDemand = setDemand
            return state.entries[index].status == .cancelled
        }
        if cancelNow { cancel() }
    }

    private func mark(_ index: Int, _ status: Status) {
        state.withLock { state in
            if state.entries[index].status == .live { state.entries[index].status = status }
        }
        changes.resumeAll()
    }
}
