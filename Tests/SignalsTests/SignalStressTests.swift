import Glibc
import GNSSHatTesting
@testable import Signals
import Synchronization
import Testing

/// Seeded random schedules of subscribe / cancel / hold / failing start / producer failure /
/// clock advance, run by several tasks at once, with the invariants checked after every round:
/// the power is on exactly while the producer runs, power transitions alternate (the fake
/// switch records a test issue otherwise), the subscriber count equals the live tokens, and at
/// the end every subscriber has finished and the power is off.
@Suite("RefCountedSignal stress", .timeLimit(.minutes(5)))
struct SignalStressTests {
    /// Seeds `0..<schedules`; a failure names its seed, and `run(seed:)` replays it alone.
    static let schedules = 10_000
    static let rounds = 6
    static let actors = 3

    @Test func randomSchedulesKeepTheInvariants() async throws {
        let found = await runSchedules(Self.schedules) { await Self.run(seed: $0) }
        #expect(found.isEmpty, "\(found.count) violations, first: \(found.prefix(5))")
    }

    static func run(seed: UInt64) async -> [String] {
        var rng = SplitMix64(seed: seed)
        let configuration = SignalConfiguration(
            linger: [.zero, .seconds(1), .seconds(5)][rng.next(3)],
            minimumOffTime: [.zero, .seconds(3)][rng.next(2)],
            replay: rng.next(2) == 0 ? .latest() : .latest(maxAge: .seconds(2), clearOnFailure: true),
            restart: rng.next(3) == 0 ? .retry(maxAttempts: 3, initialDelay: .seconds(1)) : .onNextSubscriber
        )
        let clock = ManualClock()
        let producer = TestProducer()
        let signal = producer.makeSignal(configuration, clock: clock)
        let tracker = TokenTracker()
        var violations: [String] = []

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

        // Everyone leaves; time passes until the producer is stopped.
        tracker.cancelAll()
        for _ in 0..<10 {
            await settle(signal)
            if signal.state == .idle || signal.state == .failed { break }
            clock.advance(by: .seconds(60))
        }
        await tracker.waitForConsumers()
        violations += await check(signal, producer: producer, tracker: tracker, when: "end")
        if producer.power.isOn { violations.append("power left on with no subscriber") }
        if signal.subscriberCount != 0 { violations.append("subscribers left: \(signal.subscriberCount)") }
        if !(signal.state == .idle || signal.state == .failed) { violations.append("ended \(signal.state)") }
        violations += producer.power.violations
        return violations
    }

    static func perform(
        _ rng: inout SplitMix64,
        signal: RefCountedSignal<Int>,
        producer: TestProducer,
        clock: ManualClock,
        tracker: TokenTracker
    ) async {
        switch rng.next(100) {
        case 0..<30: tracker.subscribeCallback(signal)
        case 30..<40: tracker.subscribeAsync(signal)
        case 40..<45: tracker.hold(signal)
        case 45..<72: tracker.cancel(pick: rng.next(1 << 20))
        case 72..<78: producer.power.failNextPowerOn(with: TestFailure(code: 1))
        case 78..<88: producer.send(rng.next(1000))
        case 88..<91: producer.fail(TestFailure(code: 2))
        default: clock.advance(by: .milliseconds(rng.next(6000)))
        }
    }

    /// Waits until nothing is due, then checks the invariants.
    static func check(
        _ signal: RefCountedSignal<Int>,
        producer: TestProducer,
        tracker: TokenTracker,
        when: String
    ) async -> [String] {
        await settle(signal)
        await tracker.waitUntilLive(equals: signal)
        var found: [String] = []
        let state = signal.state
        let running = state == .running || state == .lingering
        if running != producer.power.isOn {
            found.append("\(when): state \(state) but power \(producer.power.isOn ? "on" : "off")")
        }
        if state == .running && signal.subscriberCount == 0 {
            found.append("\(when): running with no subscriber")
        }
        return found
    }

    static func settle(_ signal: RefCountedSignal<Int>) async {
        await signal.waitUntilSettled()
    }
}

/// Runs seeds `0..<count` through `run`, four at a time (two schedules per core keeps both cores
/// busy with interleavings), and returns every violation found, each prefixed with its seed.
/// `GNSSHAT_STRESS_SCALE` (a fraction; default 1) runs fewer seeds, at least 100: the aarch64 run
/// under qemu-user (scripts/test-aarch64.sh), where each schedule costs some twenty times more.
func runSchedules(_ count: Int, _ run: @escaping @Sendable (UInt64) async -> [String]) async -> [String] {
    let scale = getenv("GNSSHAT_STRESS_SCALE").flatMap { Double(String(cString: $0)) } ?? 1
    let count = scale >= 1 ? count : max(100, Int(Double(count) * max(scale, 0)))
    let shared = SharedProgress()
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<4 {
            group.addTask {
                while true {
                    let seed = shared.next.add(1, ordering: .relaxed).oldValue
                    guard seed < count else { return }
                    let found = await run(UInt64(seed))
                    if !found.isEmpty { shared.violations.withLock { $0 += found.map { "seed \(seed): \($0)" } } }
                }
            }
        }
    }
    return shared.violations.withLock { $0 }
}

/// The seed counter and the violations of ``runSchedules(_:_:)``'s tasks.
private final class SharedProgress: Sendable {
    let next = Atomic<Int>(0)
    let violations = Lock<[String]>([])
}

/// The tokens of one schedule, with what happened to each, and the async consumers.
final class TokenTracker: Sendable {
    enum Status { case live, cancelled, failed }

    private struct Entry {
        var cancel: @Sendable () -> Void
        var status: Status
    }

    private struct State {
        var entries: [Entry] = []
        var consumers: [Task<Void, Never>] = []
        var waiters: [(condition: @Sendable (Int) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []

        var live: Int { entries.count { $0.status == .live } }

        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            let live = self.live
            let ready = waiters.filter { $0.condition(live) }.map(\.continuation)
            waiters.removeAll { $0.condition(live) }
            return ready
        }
    }

    private let state = Lock(State())

    func subscribeCallback(_ signal: RefCountedSignal<Int>) {
        let index = reserve()
        let token = signal.subscribe(onValue: { _ in }, onCompletion: { [self] _ in mark(index, .failed) })
        install(index) { token.cancel() }
    }

    func subscribeAsync(_ signal: RefCountedSignal<Int>) {
        let index = reserve()
        let subscription = signal.subscribe()
        install(index) { subscription.cancel() }
        let consumer = Task { [self] in
            do {
                for try await _ in subscription {}
            } catch {
                mark(index, .failed)
            }
        }
        state.withLock { $0.consumers.append(consumer) }
    }

    func hold(_ signal: RefCountedSignal<Int>) {
        let index = reserve()
        let token = signal.hold(onCompletion: { [self] _ in mark(index, .failed) })
        install(index) { token.cancel() }
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
        wake()
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
        wake()
    }

    func waitForConsumers() async {
        for consumer in state.withLock({ $0.consumers }) { await consumer.value }
    }

    /// Waits until the live tokens match the signal's count; failure notifications may still
    /// be on their way when the signal has already removed the subscriber.
    func waitUntilLive(equals signal: RefCountedSignal<Int>) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let condition: @Sendable (Int) -> Bool = { $0 == signal.subscriberCount }
            let ready = state.withLock { state -> Bool in
                if condition(state.live) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func reserve() -> Int {
        state.withLock { state in
            state.entries.append(Entry(cancel: {}, status: .live))
            return state.entries.count - 1
        }
    }

    private func install(_ index: Int, cancel: @escaping @Sendable () -> Void) {
        let cancelNow = state.withLock { state -> Bool in
            state.entries[index].cancel = cancel
            return state.entries[index].status == .cancelled
        }
        if cancelNow { cancel() }
    }

    private func mark(_ index: Int, _ status: Status) {
        state.withLock { state in
            if state.entries[index].status == .live { state.entries[index].status = status }
        }
        wake()
    }

    private func wake() {
        let ready = state.withLock { $0.readyWaiters() }
        for waiter in ready { waiter.resume() }
    }
}

/// A small, fast, seedable generator (SplitMix64) so every schedule can be replayed.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func nextValue() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound`.
    mutating func next(_ bound: Int) -> Int {
        Int(nextValue() % UInt64(bound))
    }
}
