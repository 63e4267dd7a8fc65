// The byte-stream protocol the receiver layer programs against: a serial port (PiHardware), a
// u-blox DDC port, a pseudo-terminal (here) or a test double.

/// A bidirectional byte stream to a device, such as a GNSS receiver.
///
/// Calls block the calling thread (at most for the given time-out); run them on a thread of
/// their own, not on the cooperative pool. A `read` and a `write` may run at the same time on
/// two threads.
public protocol ByteLink: AnyObject, Sendable {
    /// The device the link talks to, for errors and logs (e.g. `/dev/ttyAMA0`).
    var name: String { get }

    /// Waits up to `timeout` for bytes, then returns what arrived, at most `maxCount` bytes.
    /// Returns an empty array on time-out. Throws a `HardwareFault` when the device fails.
    func read(maxCount: Int, timeout: Duration) throws -> [UInt8]

    /// Writes all of `bytes`. Throws a `HardwareFault` when the device fails.
    func write(_ bytes: [UInt8]) throws

    /// Closes the link; later calls throw. Closing twice does nothing.
    func close()
}
