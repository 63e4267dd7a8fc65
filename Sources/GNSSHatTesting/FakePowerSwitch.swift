import LinuxSystem
import Signals
// Internal: a user of the test doubles (a benchmark, an XCTest suite) does not get Testing with them.
internal import Testing

/// A stand-in for a receiver's power supply that records every transition and every misuse: a
/// double power-on, or an on/off that overlaps another one still in progress. A misuse is kept in
/// ``violations`` and reported to the switch's `onMisuse` hook; without one, it fails the running
/// Swift Testing test (an issue at the place the switch was made). Tests can make the next
/// power-on fail or pause it at a gate.
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
    private let onMisuse: @Sendable (String) -> Void

    /// A switch that is off. `onMisuse` gets each misuse as it happens (a test that expects one, or
    /// code outside Swift Testing); by default a misuse is recorded as an issue of the running test,
    /// at the caller's location.
    public init(
        onMisuse: (@Sendable (String) -> Void)? = nil,
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
    ) {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        self.onMisuse = onMisuse ?? { misuse in
            Issue.record(Comment(rawValue: "FakePowerSwitch: \(misuse)"), sourceLocation: location)
        }
    }

    /// Whether the supply is on now.
    public var isOn: Bool { state.withLock { $0.isOn } }

    /// Every change of the supply, in order (a power-off while already off records nothing).
    public var transitions: [Transition] { state.withLock { $0.transitions } }

    /// Calls of ``powerOn()`` / ``powerOff()``, including failed and redundant ones.
    public var powerOnCalls: Int { state.withLock { $0.powerOnCalls } }
    public var powerOffCalls: Int { state.withLock { $0.powerOffCalls } }

    /// Overlaps and double power-ons seen so far, in order (each was also reported as it happened).
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
        if let violation { onMisuse(violation) }
        return gate
    }
}
