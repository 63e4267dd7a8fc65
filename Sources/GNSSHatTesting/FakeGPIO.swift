// A fake set of GPIO lines: outputs record every level driven, inputs emit edges on demand.
import LinuxSystem
public import PiHardware

/// Test double for `GPIOLines`: hands out `FakeOutputLine`s and `FakeEdgeSource`s by address,
/// remembers them so a test can inspect or drive them, and can make a request fail the way a
/// busy or missing line does.
public final class FakeGPIO: GPIOLines {
    private struct State {
        var outputs: [GPIOLineAddress: FakeOutputLine] = [:]
        var inputs: [GPIOLineAddress: FakeEdgeSource] = [:]
        var holders: [GPIOLineAddress: String] = [:]
        var failures: [GPIOLineAddress: GPIOError] = [:]
        var requests: [GPIOLineAddress] = []
    }

    private let state = Lock(State())

    public init() {}

    /// Makes requests of `address` fail with `GPIOError.busy`, naming `consumer` as the holder.
    public func hold(_ address: GPIOLineAddress, consumer: String) {
        state.withLock { $0.holders[address] = consumer }
    }

    /// Lets `address` be requested again after `hold`.
    public func free(_ address: GPIOLineAddress) {
        state.withLock { _ = $0.holders.removeValue(forKey: address) }
    }

    /// Makes the next request of `address` fail with `error`.
    public func failNextRequest(_ address: GPIOLineAddress, with error: GPIOError) {
        state.withLock { $0.failures[address] = error }
    }

    /// Every address requested, in order.
    public var requests: [GPIOLineAddress] { state.withLock { $0.requests } }

    /// The output line handed out for `address`, if any.
    public func output(at address: GPIOLineAddress) -> FakeOutputLine? {
        state.withLock { $0.outputs[address] }
    }

    /// The edge source handed out for `address`, if any.
    public func input(at address: GPIOLineAddress) -> FakeEdgeSource? {
        state.withLock { $0.inputs[address] }
    }

    public func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws(GPIOError)
        -> any OutputLine
    {
        try state.withLock { state throws(GPIOError) in
            try Self.admit(address, &state)
            let line = FakeOutputLine(name: address.description, initiallyActive: initiallyActive, activeLow: activeLow)
            state.outputs[address] = line
            return line
        }
    }

    public func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias)
        throws(GPIOError) -> any EdgeEventSource
    {
        try state.withLock { state throws(GPIOError) in
            try Self.admit(address, &state)
            let source = FakeEdgeSource(name: address.description, edges: edges)
            state.inputs[address] = source
            return source
        }
    }

    private static func admit(_ address: GPIOLineAddress, _ state: inout State) throws(GPIOError) {
        state.requests.append(address)
        if let error = state.failures.removeValue(forKey: address) { throw error }
        if let consumer = state.holders[address] {
            throw .busy(
                FailedCall(call: "gpiod_line_request", device: address.description, errno: .resourceBusy),
                line: address.description, consumer: consumer)
        }
    }
}
