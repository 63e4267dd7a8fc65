// A fake serial port: an in-memory byte stream with a far side the test plays.
import Dispatch
public import LinuxSystem
import PiHardware  // SerialError

/// Test double for `ByteLink` (a serial port, a DDC link): the test feeds bytes the "receiver"
/// sends with `feed`, reads what the code under test wrote from `written`, can answer writes
/// with `onWrite`, and can make the port hang up or fail.
///
/// `read` returns fed bytes at once; with nothing fed it waits for a feed up to its time-out
/// (so a reader thread does not spin), and tests that feed before reading never wait.
public final class FakeByteLink: ByteLink {
    public let name: String

    private struct State {
        var input: [UInt8] = []
        var written: [[UInt8]] = []
        var readFailure: (any Error & Sendable)?
        var writeFailure: (any Error & Sendable)?
        var hungUp = false
        var closed = false
        var onWrite: (@Sendable ([UInt8]) -> [UInt8])?
    }

    private let state = Lock(State())
    private let signal = DispatchSemaphore(value: 0)

    public init(name: String = "/dev/ttyFAKE0") {
        self.name = name
    }

    /// Queues bytes for the code under test to read.
    public func feed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        state.withLock { $0.input += bytes }
        signal.signal()
    }

    /// Answers each write: the returned bytes are fed back (e.g. an ACK to a UBX command).
    public func onWrite(_ respond: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        state.withLock { $0.onWrite = respond }
    }

    /// Every write, in order.
    public var written: [[UInt8]] { state.withLock { $0.written } }

    /// All written bytes, concatenated.
    public var writtenBytes: [UInt8] { written.flatMap { $0 } }

    /// Bytes fed but not read yet.
    public var pending: Int { state.withLock { $0.input.count } }

    /// Whether `close()` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The far side hangs up: once fed bytes are read, reads and writes throw
    /// `SerialError.hangUp`.
    public func hangUp() {
        state.withLock { $0.hungUp = true }
        signal.signal()
    }

    /// Makes the next `read` throw `error`.
    public func failNextRead(with error: any Error & Sendable) {
        state.withLock { $0.readFailure = error }
        signal.signal()
    }

    /// Makes the next `write` throw `error`.
    public func failNextWrite(with error: any Error & Sendable) {
        state.withLock { $0.writeFailure = error }
    }

    public func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        if let bytes = try take(maxCount) { return bytes }
        // Capped at a day, as Dispatch deadlines are; a negative time-out is now.
        let deadline = DispatchTime.now() + .nanoseconds(Int(min(timeout.clampedNanoseconds, 86_400_000_000_000)))
        guard signal.wait(timeout: deadline) == .success else { return [] }
        return try take(maxCount) ?? []
    }

    /// Fed bytes, a failure, or nil when there is nothing to report.
    private func take(_ maxCount: Int) throws -> [UInt8]? {
        let (bytes, failure) = state.withLock { state -> ([UInt8]?, (any Error & Sendable)?) in
            if state.closed { return (nil, SerialError.closed(device: name)) }
            if let failure = state.readFailure {
                state.readFailure = nil
                return (nil, failure)
            }
            if !state.input.isEmpty {
                let count = min(maxCount, state.input.count)
                defer { state.input.removeFirst(count) }
                return (Array(state.input.prefix(count)), nil)
            }
            if state.hungUp { return (nil, SerialError.hangUp(FailedCall(call: "poll", device: name, errno: nil))) }
            return (nil, nil)
        }
        if let failure { throw failure }
        return bytes
    }

    public func write(_ bytes: [UInt8]) throws {
        typealias Outcome = (failure: (any Error & Sendable)?, respond: (@Sendable ([UInt8]) -> [UInt8])?)
        let (failure, respond) = state.withLock { state -> Outcome in
            if state.closed { return (SerialError.closed(device: name), nil) }
            if state.hungUp { return (SerialError.hangUp(FailedCall(call: "write", device: name, errno: nil)), nil) }
            if let failure = state.writeFailure {
                state.writeFailure = nil
                return (failure, nil)
            }
            state.written.append(bytes)
            return (nil, state.onWrite)
        }
        if let failure { throw failure }
        if let respond { feed(respond(bytes)) }
    }

    public func close() {
        state.withLock { $0.closed = true }
        signal.signal()
    }
}
