// What every error of LinuxSystem and PiHardware can tell a caller that does not care which area it
// came from (sockets, threads, files, pseudo-terminals, GPIO, I2C, serial ports, PPS).

/// An error from a system call on a device or descriptor (every error type of LinuxSystem and
/// PiHardware is one): says which call failed on which device, and whether the device is gone (so
/// the caller closes its session instead of retrying).
public protocol HardwareFault: Error, CustomStringConvertible, Sendable {
    /// The C call, device and errno behind the error, when a call failed.
    var failedCall: FailedCall? { get }
    /// True when the device vanished or hung up: retrying on the same descriptor cannot help.
    var deviceIsGone: Bool { get }
}

extension FailedCall: Error {}

extension Duration {
    /// Milliseconds for poll(2), rounded up, clamped to 0...Int32.max.
    var pollMilliseconds: CInt {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        if millis.overflow { return .max }
        let extra = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return CInt(clamping: millis.partialValue + extra)
    }

    /// Whole nanoseconds (rounded down), clamped to 0...Int64.max: for timeouts and timestamps
    /// handed to C calls and clocks that count in nanoseconds.
    public var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if nanos.overflow { return .max }
        let (sum, overflow) = nanos.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow ? .max : sum
    }
}
