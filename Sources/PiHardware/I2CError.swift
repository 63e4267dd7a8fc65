// Typed errors of I2C transfers, mapped from the kernel's I2C fault codes
// (Documentation/i2c/fault-codes.rst).
public import LinuxSystem

/// Why an I2C call failed.
public enum I2CError: HardwareFault, Equatable {
    /// `ENOENT` on open: no such bus (is I2C enabled, `dtparam=i2c_arm=on`?).
    case noBus(FailedCall)
    /// `EACCES`/`EPERM`: the user may not open the bus (not in the `i2c` group?).
    case permissionDenied(FailedCall)
    /// `ENXIO`: nothing acknowledged the address.
    case noDevice(FailedCall)
    /// `EREMOTEIO`: the device did not acknowledge (a NAK; the Pi's controller also reports an
    /// unanswered address this way).
    case nak(FailedCall)
    /// `ETIMEDOUT`: the transfer timed out, usually clock stretching the controller gave up on.
    case timeout(FailedCall)
    /// `EIO`, `EPROTO`: a bus error.
    case busError(FailedCall)
    /// `EAGAIN`: another master won arbitration.
    case arbitrationLost(FailedCall)
    /// `EOPNOTSUPP`: the adapter cannot do plain I2C transfers (`I2C_RDWR`), e.g. an SMBus-only one.
    case unsupported(FailedCall)
    /// `ENODEV`, `ESHUTDOWN`: the adapter went away or is suspended.
    case vanished(FailedCall)
    /// A transfer this layer refuses to send (empty, too long, a 1-byte u-blox write).
    case invalidTransfer(String, device: String)
    /// The bus was closed by `close()`.
    case closed(device: String)
    /// Any other failed call.
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on (also for test doubles).
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.noSuchFileOrDirectory?: self = .noBus(failure)
        case Errno.permissionDenied?, Errno.notPermitted?: self = .permissionDenied(failure)
        case Errno.noSuchDeviceOrAddress?: self = .noDevice(failure)
        case Errno.remoteIO?: self = .nak(failure)
        case Errno.timedOut?: self = .timeout(failure)
        case Errno.ioError?, Errno.protocolError?: self = .busError(failure)
        case Errno.wouldBlock?: self = .arbitrationLost(failure)
        case Errno.notSupported?: self = .unsupported(failure)
        case Errno.noSuchDevice?, Errno.shutDown?: self = .vanished(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .noBus(let f), .permissionDenied(let f), .noDevice(let f), .nak(let f), .timeout(let f),
            .busError(let f), .arbitrationLost(let f), .unsupported(let f), .vanished(let f), .failed(let f):
            f
        case .invalidTransfer, .closed:
            nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .noBus, .vanished, .closed: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .noBus(let f): "no such I2C bus (is I2C enabled?): \(f)"
        case .permissionDenied(let f): "no permission for the I2C bus (is the user in group i2c?): \(f)"
        case .noDevice(let f): "no I2C device answers at this address: \(f)"
        case .nak(let f): "the I2C device did not acknowledge (NAK; absent or asleep?): \(f)"
        case .timeout(let f): "I2C transfer timed out (clock stretching? try 100 kHz): \(f)"
        case .busError(let f): "I2C bus error: \(f)"
        case .arbitrationLost(let f): "I2C arbitration lost to another master: \(f)"
        case .unsupported(let f): "the I2C adapter cannot do combined transfers (I2C_RDWR): \(f)"
        case .vanished(let f): "the I2C adapter went away: \(f)"
        case .invalidTransfer(let reason, let device): "\(device): invalid I2C transfer: \(reason)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "I2C call failed: \(f)"
        }
    }
}
