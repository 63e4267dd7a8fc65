import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

/// A producer for tests: powers a fake switch on and off and remembers the emitter of the
/// current run so a test can send values or report a failure.
final class TestProducer: Sendable {
    let power: FakePowerSwitch
    private let emitter = Lock<SignalEmitter<Int>?>(nil)

    init(power: FakePowerSwitch = FakePowerSwitch()) {
        self.power = power
    }

    /// A signal powering the fake switch; its hooks keep `marker` (to tell when they are released).
    func makeSignal(
        _ configuration: SignalConfiguration = SignalConfiguration(),
        clock: ManualClock,
        marker: ReleaseWatch.Marker? = nil
    ) -> RefCountedSignal<Int> {
        RefCountedSignal(configuration: configuration, clock: clock) { [self] emitter in
            _ = marker
            try await power.powerOn()
            self.emitter.withLock { $0 = emitter }
        } stop: { [self] in
            self.emitter.withLock { $0 = nil }
            await power.powerOff()
        }
    }

    /// Sends from the current run; returns false when no run is active.
    @discardableResult
    func send(_ value: Int) -> Bool {
        guard let emitter = emitter.withLock({ $0 }) else { return false }
        emitter.send(value)
        return true
    }

    func fail(_ error: any Error) {
        emitter.withLock { $0 }?.fail(error)
    }
}

struct TestFailure: Error, Equatable {
    var code: Int
}

/// Collects callback deliveries.
final class Inbox: Sendable {
    private let state = Lock<(values: [Int], completions: [String])>(([], []))

    var values: [Int] { state.withLock { $0.values } }
    var completions: [String] { state.withLock { $0.completions } }

    func subscribe<Demand>(to signal: DemandSignal<Int, Demand>) -> SignalToken {
        signal.subscribe { [self] value in
            state.withLock { $0.values.append(value) }
        } onCompletion: { [self] completion in
            if case let .failure(error) = completion {
                state.withLock { $0.completions.append(String(describing: error)) }
            }
        }
    }
}

extension DemandSignal {
    /// Waits until the signal reaches a state that satisfies `predicate`.
    func waitForState(_ predicate: @Sendable (SignalState) -> Bool) async {
        for await state in stateChanges() where predicate(state) {
            return
        }
    }

    func waitForState(_ target: SignalState) async {
        await waitForState { $0 == target }
    }

    /// Waits until no hook is in progress (the state is not starting or stopping).
    func settle() async {
        await waitForState { $0 != .starting && $0 != .stopping }
    }
}

/// A gate a hook waits at until the test opens it; the test can first wait until a hook
/// reached it.
final class Gate: Sendable {
    private struct State {
        var reached = false
        var open = false
        var passer: CheckedContinuation<Void, Never>?
        var reachWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())

    /// Called by the hook: waits here until the gate is open.
    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (passNow, reached) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                state.reached = true
                defer { state.reachWaiters.removeAll() }
                if state.open { return (true, state.reachWaiters) }
                state.passer = continuation
                return (false, state.reachWaiters)
            }
            for waiter in reached { waiter.resume() }
            if passNow { continuation.resume() }
        }
    }

    /// Suspends until a hook waits at (or has passed) this gate.
    func waitUntilReached() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.reached { return true }
                state.reachWaiters.append(continuation)
                return false
            }
            if reached { continuation.resume() }
        }
    }

    /// Lets the waiting (or next) hook through.
    func open() {
        let passer = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.open = true
            defer { state.passer = nil }
            return state.passer
        }
        passer?.resume()
    }
}

/// A producer for demand tests: powers a fake switch on and off, records every plan it was
/// given (the start's demand, then each re-plan's) and every hook in order, and counts hooks
/// that overlapped. A test can gate the next re-plan.
final class DemandProducer: Sendable {
    enum Hook: Equatable, CustomStringConvertible {
        case start(Int?)
        case replan(Int?)
        case stop

        var description: String {
            switch self {
            case let .start(demand): "start(\(demand.map(String.init) ?? "nil"))"
            case let .replan(demand): "replan(\(demand.map(String.init) ?? "nil"))"
            case .stop: "stop"
            }
        }
    }

    private struct State {
        var emitter: SignalEmitter<Int>?
        var hooks: [Hook] = []
        var running = 0
        var overlaps = 0
        var replanGates: [Gate] = []
    }

    let power = FakePowerSwitch()
    private let state = Lock(State())
    /// Whether every hook suspends once (resumed by another task) before it returns, so that a
    /// hook takes long enough for a wrong signal to start another one meanwhile.
    private let hooksSuspend: Bool

    init(hooksSuspend: Bool = false) {
        self.hooksSuspend = hooksSuspend
    }

    /// A signal whose demands are numbers, the largest winning; its hooks keep `marker` (to
    /// tell when they are released).
    func makeSignal(
        _ configuration: SignalConfiguration = SignalConfiguration(),
        clock: ManualClock,
        marker: ReleaseWatch.Marker? = nil
    ) -> DemandSignal<Int, Int> {
        DemandSignal(configuration: configuration, demand: .maximum, clock: clock) { [self] emitter, demand in
            _ = marker
            enter(.start(demand))
            defer { leave() }
            await suspendOnce()
            try await power.powerOn()
            state.withLock { $0.emitter = emitter }
        } replan: { [self] demand in
            enter(.replan(demand))
            defer { leave() }
            await suspendOnce()
            if let gate = state.withLock({ $0.replanGates.isEmpty ? nil : $0.replanGates.removeFirst() }) {
                await gate.pass()
            }
        } stop: { [self] in
            enter(.stop)
            defer { leave() }
            await suspendOnce()
            state.withLock { $0.emitter = nil }
            await power.powerOff()
        }
    }

    /// Every hook that ran, in order.
    var hooks: [Hook] { state.withLock { $0.hooks } }

    /// The demand the producer serves now: the one its start or its last re-plan was given
    /// (`.some(nil)`: it runs for no demand), or `nil` when it does not run.
    var plan: Int?? {
        state.withLock { state in
            for hook in state.hooks.reversed() {
                switch hook {
                case let .start(demand), let .replan(demand): return .some(demand)
                case .stop: return .none
                }
            }
            return .none
        }
    }

    /// Times a hook began while another was still running.
    var overlaps: Int { state.withLock { $0.overlaps } }

    /// Makes the next re-plan wait at the returned gate.
    func gateNextReplan() -> Gate {
        let gate = Gate()
        state.withLock { $0.replanGates.append(gate) }
        return gate
    }

    @discardableResult
    func send(_ value: Int) -> Bool {
        guard let emitter = state.withLock({ $0.emitter }) else { return false }
        emitter.send(value)
        return true
    }

    func fail(_ error: any Error) {
        state.withLock { $0.emitter }?.fail(error)
    }

    private func suspendOnce() async {
        guard hooksSuspend else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Task { continuation.resume() }
        }
    }

    private func enter(_ hook: Hook) {
        state.withLock { state in
            state.hooks.append(hook)
            if state.running > 0 { state.overlaps += 1 }
            state.running += 1
        }
    }

    private func leave() {
        state.withLock { $0.running -= 1 }
    }
}
