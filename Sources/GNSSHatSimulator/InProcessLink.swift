// The in-process link between the host and a simulated hat's receiver: no kernel, closes at once,
// and garbles bytes when the two speeds differ.
import Dispatch
import GNSSHat
import LinuxSystem
import PiHardware

/// The host side of the in-process link: reads what the receiver sent, writes straight into
/// the receiver. It garbles bytes when the two speeds differ, as a UART does.
final class InProcessLink: SerialLink {
    private struct State {
        var input: [UInt8] = []
        var speed: Int
        var closed = false
        var vanished = false
        /// Weak: the hat owns the link. (Kept here rather than as a `weak let`, which needs Swift 6.2.)
        weak var hat: SimulatedHat?
    }

    private let state: Lock<State>
    private let signal = DispatchSemaphore(value: 0)

    init(speed: Int, hat: SimulatedHat) {
        state = Lock(State(speed: speed, hat: hat))
    }

    var name: String { "simulator (in-process)" }

    /// Noise in place of bytes sent at the wrong speed: 0x00, 0x80 and 0xF8-style framing
    /// errors, never a valid frame start.
    static func garble(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { byte in byte == UInt8(ascii: "$") || byte == 0xB5 ? 0x80 : (byte &* 7) | 0x80 }
    }

    func deliver(_ bytes: [UInt8], atSpeed speed: Int) {
        let delivered = state.withLock { state -> Bool in
            guard !state.closed, !state.vanished else { return false }
            state.input += state.speed == speed ? bytes : Self.garble(bytes)
            return true
        }
        if delivered { signal.signal() }
    }

    /// The device is gone: reads fail once what was received is read.
    func vanish() {
        state.withLock { $0.vanished = true }
        signal.signal()
    }

    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        if let bytes = try take(maxCount) { return bytes }
        _ = signal.wait(timeout: dispatchDeadline(after: timeout))
        return try take(maxCount) ?? []
    }

    private func take(_ maxCount: Int) throws -> [UInt8]? {
        let result = state.withLock { state -> Result<[UInt8]?, SerialError> in
            if state.closed { return .failure(.closed(device: name)) }
            if !state.input.isEmpty {
                let count = min(maxCount, state.input.count)
                defer { state.input.removeFirst(count) }
                return .success(Array(state.input.prefix(count)))
            }
            if state.vanished { return .failure(.hangUp(FailedCall(call: "read", device: name, errno: nil))) }
            return .success(nil)
        }
        return try result.get()
    }

    func write(_ bytes: [UInt8]) throws {
        let (speed, hat) = try state.withLock { state throws(SerialError) -> (Int, SimulatedHat?) in
            if state.closed { throw .closed(device: name) }
            if state.vanished { throw .vanished(FailedCall(call: "write", device: name, errno: .ioError)) }
            return (state.speed, state.hat)
        }
        hat?.hostSends(bytes, atSpeed: speed)
    }

    func setSpeed(_ speed: Int) throws {
        state.withLock { $0.speed = speed }
    }

    func discardInput() throws {
        state.withLock { $0.input.removeAll() }
    }

    func close() {
        state.withLock { $0.closed = true }
        signal.signal()
    }
}
