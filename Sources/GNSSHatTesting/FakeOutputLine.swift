// A fake GPIO output line: it records every level driven onto it and fails on demand.
import LinuxSystem
public import PiHardware

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
