import LinuxSystem
import Signals
public import Testing

/// A stand-in for a receiver's power supply that records every transition and fails the
/// running test (through `Issue.record`) on a double power-on or on an on/off that overlaps
/// another one still in progress. Tests can make the next power-on fail or pause it at a gate.
public final class FakePowerSwitch: Sendable {
    public enum Transition: Sendable, Equatable, CustomStringConvertible {
        case on
        case off

        public var description: String { self == .on ? "on" : "off" }
    }

    /// An error the switch throws when told to fail a power-on.
    public struct InjectedFailure: Error, Equatable, CustomStringConvertible {
        public var reason: String

        public init(_ reason: String = "injected power-on failure") {
            self.reason = reason
        }

        public var description: String { reason }
    }

    private struct State {
        var isOn = false
        var inProgress: Transition?
        var transitions: [Transition] = []
        var powerOnCalls = 0
        var powerOffCalls = 0
        var violations: [String] = []
        var failures: [any Error] = []
        var gates: [PowerGate] = []
        var offGates: [PowerGate] = []
        var waiters: [(condition: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            let snapshot = self
            var ready: [CheckedContinuation<Void, Never>] = []
            var waiting: [(condition: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
            for waiter in waiters {
                if waiter.condition(snapshot) { ready.append(waiter.continuation) } else { waiting.append(waiter) }
            }
            waiters = waiting
            return ready
        }
    }

    private let state = Lock(State())
    private let sourceLocation: SourceLocation

    public init(sourceLocation: SourceLocation = #_sourceLocation) {
        self.sourceLocation = sourceLocation
    }

    /// Whether the supply is on now.
    public var isOn: Bool { state.withLock { $0.isOn } }

    /// Every change of the supply, in order (a power-off while already off records nothing).
    public var transitions: [Transition] { state.withLock { $0.transitions } }

    /// Calls of ``powerOn()`` / ``powerOff()``, including failed and redundant ones.
    public var powerOnCalls: Int { state.withLock { $0.powerOnCalls } }
    public var powerOffCalls: Int { state.withLock { $0.powerOffCalls } }

    /// Overlaps and double power-ons seen so far (each was also recorded as a test issue).
    public var violations: [String] { state.withLock { $0.violations } }

    /// Makes the next power-on throw `error` (queued: call it again to fail several).
    public func failNextPowerOn(with error: any Error = InjectedFailure()) {
        state.withLock { $0.failures.append(error) }
    }

    /// Makes the next power-on wait at the returned gate until the test opens it.
    public func gateNextPowerOn() -> PowerGate {
        let gate = PowerGate()
        state.withLock { $0.gates.append(gate) }
        return gate
    }

    /// Makes the next power-off wait at the returned gate until the test opens it.
    public func gateNextPowerOff() -> PowerGate {
        let gate = PowerGate()
        state.withLock { $0.offGates.append(gate) }
        return gate
    }

    /// Switches the supply on; throws an injected failure instead if one is queued.
    public func powerOn() async throws {
        let gate = begin(.on)
        if let gate { await gate.pass() }
        let (failure, ready) = state.withLock { state -> ((any Error)?, [CheckedContinuation<Void, Never>]) in
            state.inProgress = nil
            if !state.failures.isEmpty { return (state.failures.removeFirst(), state.readyWaiters()) }
            state.isOn = true
            state.transitions.append(.on)
            return (nil, state.readyWaiters())
        }
        for waiter in ready { waiter.resume() }
        if let failure { throw failure }
    }

    /// Switches the supply off (nothing to do if it is off).
    public func powerOff() async {
        let gate = begin(.off)
        if let gate { await gate.pass() }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inProgress = nil
            if state.isOn {
                state.isOn = false
                state.transitions.append(.off)
            }
            return state.readyWaiters()
        }
        for waiter in ready { waiter.resume() }
    }

    /// Suspends until the supply is on (`true`) or off (`false`).
    public func waitUntil(on: Bool) async {
        await waitFor { $0.isOn == on && $0.inProgress == nil }
    }

    /// Suspends until at least `count` transitions have been recorded.
    public func waitForTransitions(_ count: Int) async {
        await waitFor { $0.transitions.count >= count }
    }

    /// Suspends until at least `count` power-on attempts have finished (failed ones included).
    public func waitForPowerOnAttempts(_ count: Int) async {
        await waitFor { $0.powerOnCalls >= count && $0.inProgress != .on }
    }

    private func waitFor(_ condition: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if condition(state) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func begin(_ transition: Transition) -> PowerGate? {
        let (gate, violation) = state.withLock { state -> (PowerGate?, String?) in
            var violation: String?
            if let other = state.inProgress {
                violation = "power \(transition) while power \(other) is still in progress"
            } else if transition == .on && state.isOn {
                violation = "power on while already on"
            }
            if let violation { state.violations.append(violation) }
            state.inProgress = transition
            if transition == .on {
                state.powerOnCalls += 1
                return (state.gates.isEmpty ? nil : state.gates.removeFirst(), violation)
            }
            state.powerOffCalls += 1
            return (state.offGates.isEmpty ? nil : state.offGates.removeFirst(), violation)
        }
        if let violation {
            Issue.record(Comment(rawValue: "FakePowerSwitch: \(violation)"), sourceLocation: sourceLocation)
        }
        return gate
    }
}

/// A gate a power-on or power-off waits at until the test opens it; the test can first wait until the
/// power-on has reached it.
public final class PowerGate: Sendable {
    private struct State {
        var reached = false
        var open = false
        var passer: CheckedContinuation<Void, Never>?
        var reachWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())

    init() {}

    /// Suspends until a power-on (or power-off) waits at this gate.
    public func waitUntilReached() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.reached { return true }
                state.reachWaiters.append(continuation)
                return false
            }
            if reached { continuation.resume() }
        }
    }

    /// Lets the waiting (or next) transition through.
    public func open() {
        let passer = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.open = true
            defer { state.passer = nil }
            return state.passer
        }
        passer?.resume()
    }

    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (open, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                state.reached = true
                let waiters = state.reachWaiters
                state.reachWaiters.removeAll()
                if !state.open { state.passer = continuation }
                return (state.open, waiters)
            }
            for waiter in waiters { waiter.resume() }
            if open { continuation.resume() }
        }
    }
}
