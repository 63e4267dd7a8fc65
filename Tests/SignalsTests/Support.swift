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

    func makeSignal(_ configuration: SignalConfiguration = SignalConfiguration(), clock: ManualClock)
        -> RefCountedSignal<Int>
    {
        RefCountedSignal(configuration: configuration, clock: clock) { [self] emitter in
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

    func subscribe(to signal: RefCountedSignal<Int>) -> SignalToken {
        signal.subscribe { [self] value in
            state.withLock { $0.values.append(value) }
        } onCompletion: { [self] completion in
            if case let .failure(error) = completion {
                state.withLock { $0.completions.append(String(describing: error)) }
            }
        }
    }
}

extension RefCountedSignal {
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
