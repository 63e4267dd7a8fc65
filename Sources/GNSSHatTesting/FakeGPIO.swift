// A fake set of GPIO lines: outputs record every level driven, inputs emit edges on demand.
import GNSSHatSimulator  // EdgeQueue
public import LinuxSystem
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

/// An output line that records every level driven onto it.
public final class FakeOutputLine: OutputLine {
    public let name: String
    /// Whether the line was requested active-low (the recorded levels are logical).
    public let activeLow: Bool

    private struct State {
        var levels: [Bool]
        var failure: GPIOError?
        var failuresLeft = 0
        var released = false
    }

    private let state: Lock<State>

    public init(name: String = "fake line", initiallyActive: Bool = false, activeLow: Bool = false) {
        self.name = name
        self.activeLow = activeLow
        self.state = Lock(State(levels: [initiallyActive]))
    }

    /// Every logical level the line had, starting with the initial one.
    public var levels: [Bool] { state.withLock { $0.levels } }

    /// The current logical level.
    public var level: Bool { state.withLock { $0.levels.last ?? false } }

    /// The current electrical level (inverted for active-low lines).
    public var physicalLevel: Bool { level != activeLow }

    /// Makes the next `setActive` fail with `error`.
    public func failNextSet(with error: GPIOError) {
        failNextSets(1, with: error)
    }

    /// Makes the next `count` calls of `setActive` fail with `error`.
    public func failNextSets(_ count: Int, with error: GPIOError) {
        state.withLock { state in
            state.failure = error
            state.failuresLeft = count
        }
    }

    /// Marks the line released; later calls throw `GPIOError.released`.
    public func release() {
        state.withLock { $0.released = true }
    }

    public var isReleased: Bool { state.withLock { $0.released } }

    public func setActive(_ active: Bool) throws(GPIOError) {
        try state.withLock { state throws(GPIOError) in
            if state.released { throw .released(device: name) }
            if let failure = state.failure, state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw failure
            }
            state.levels.append(active)
        }
    }

    public func isActive() throws(GPIOError) -> Bool {
        try state.withLock { state throws(GPIOError) in
            if state.released { throw .released(device: name) }
            return state.levels.last ?? false
        }
    }
}

/// An edge source a test drives with `emit`. `nextEdge(timeout:)` returns an emitted edge at
/// once, or waits for one up to its time-out (so a reader thread does not spin); tests that emit
/// before reading never wait. `nextEdge(until:)` waits with no time-out on an eventfd woken with
/// each edge, beside the caller's waker, as a GPIO line's event descriptor is waited on.
public final class FakeEdgeSource: EdgeEventSource {
    public let name: String
    /// The edges this source reports; others passed to `emit` are dropped, like the kernel does.
    public let edges: GPIOEdges

    private let queue = EdgeQueue()
    /// The last sequence number given.
    private let sequence = Lock<UInt64>(0)

    public init(name: String = "fake edges", edges: GPIOEdges = .rising) {
        self.name = name
        self.edges = edges
    }

    /// Emits an edge with the given timestamp; the sequence number counts up from 1.
    public func emit(_ kind: EdgeEvent.Kind, at timestamp: Duration, clock: EdgeClock = .monotonic) {
        let wanted = switch (edges, kind) {
        case (.both, _), (.rising, .rising), (.falling, .falling): true
        default: false
        }
        guard wanted else { return }
        // Numbered and queued in one step, so that edges emitted from two threads are read in
        // the order of their numbers.
        sequence.withLock { last in
            last += 1
            queue.push(EdgeEvent(kind: kind, timestamp: timestamp, clock: clock, sequence: last))
        }
    }

    /// Makes the next `nextEdge` throw `error`.
    public func fail(with error: any Error & Sendable) {
        queue.fail(with: error)
    }

    /// Edges emitted but not read yet.
    public var pendingCount: Int { queue.pendingCount }

    /// How many times `nextEdge(timeout:)` was called: a reader that waits with a waker never
    /// needs it.
    public var timedWaits: Int { queue.timedWaits }

    /// How many `nextEdge(until:)` calls ended woken, with no edge.
    public var wokenWaits: Int { queue.wokenWaits }

    public func nextEdge(timeout: Duration) throws -> EdgeEvent? {
        try queue.next(timeout: timeout)
    }

    /// Waits with no time-out for an edge or a failure, or until `waker` is woken (then returns
    /// nil).
    public func nextEdge(until waker: Waker) throws -> EdgeEvent? {
        try queue.next(until: waker)
    }
}
