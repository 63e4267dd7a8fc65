// Errno: a C error number as a Swift error, the way swift-system spells it.
internal import CLinuxShims
internal import Glibc

/// An error number reported by a Linux call (`errno`).
///
/// One static per code this package meets; any other code still round-trips through
/// `init(rawValue:)`. The description is the C library's message (`strerror_r`) with the
/// constant's name, e.g. `Remote I/O error (EREMOTEIO)`.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw C error number.
    public let rawValue: CInt

    /// Wraps a raw C error number.
    public init(rawValue: CInt) { self.rawValue = rawValue }

    /// `EPERM`: operation not permitted.
    public static let notPermitted = Errno(rawValue: EPERM)
    /// `ENOENT`: no such file or directory.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EINTR`: interrupted by a signal; the seam retries these.
    public static let interrupted = Errno(rawValue: EINTR)
    /// `EIO`: input/output error (a vanished tty, an I2C bus error).
    public static let ioError = Errno(rawValue: EIO)
    /// `ENXIO`: no such device or address (I2C: nothing acknowledged the address).
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    /// `EBADF`: bad file descriptor — always a bug in this package.
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `EAGAIN`: try again (non-blocking I/O; I2C: arbitration lost).
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `ENOMEM`: out of memory.
    public static let noMemory = Errno(rawValue: ENOMEM)
    /// `EACCES`: permission denied.
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// `EFAULT`: bad address — always a bug in this package.
    public static let badAddress = Errno(rawValue: EFAULT)
    /// `EBUSY`: device or resource busy (a GPIO line held by someone else, an exclusive tty).
    public static let resourceBusy = Errno(rawValue: EBUSY)
    /// `ENODEV`: no such device.
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    /// `ENOTDIR`: not a directory.
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    /// `EINVAL`: invalid argument.
    public static let invalidArgument = Errno(rawValue: EINVAL)
    /// `ENOTTY`: inappropriate ioctl for device (not a tty, not a PPS source).
    public static let notATerminal = Errno(rawValue: ENOTTY)
    /// `EPIPE`: broken pipe.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ENOSYS`: function not implemented.
    public static let notImplemented = Errno(rawValue: ENOSYS)
    /// `EOPNOTSUPP`: operation not supported (an I2C adapter without plain I2C transfers).
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    /// `ETIMEDOUT`: timed out (I2C: clock stretching too long; PPS: no edge in time).
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// `EREMOTEIO`: remote I/O error (I2C: the device did not acknowledge, a NAK).
    public static let remoteIO = Errno(rawValue: EREMOTEIO)
    /// `ESHUTDOWN`: the I2C adapter is suspended.
    public static let shutDown = Errno(rawValue: ESHUTDOWN)
    /// `EPROTO`: protocol error (I2C: a malformed transfer on the wire).
    public static let protocolError = Errno(rawValue: EPROTO)
    /// `EEXIST`: the file exists (`mkdir` of a directory that is there).
    public static let fileExists = Errno(rawValue: EEXIST)
    /// `ENOSPC`: no space left on the device (a write, or an `fsync` that had to allocate).
    public static let noSpaceLeft = Errno(rawValue: ENOSPC)

    /// The C constant's name, e.g. `EREMOTEIO`, or `errno N` for a code not listed here.
    public var name: String {
        switch rawValue {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case ENXIO: "ENXIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EFAULT: "EFAULT"
        case EBUSY: "EBUSY"
        case ENODEV: "ENODEV"
        case ENOTDIR: "ENOTDIR"
        case EINVAL: "EINVAL"
        case ENOTTY: "ENOTTY"
        case EPIPE: "EPIPE"
        case ENOSYS: "ENOSYS"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case ETIMEDOUT: "ETIMEDOUT"
        case EREMOTEIO: "EREMOTEIO"
        case ESHUTDOWN: "ESHUTDOWN"
        case EPROTO: "EPROTO"
        case EEXIST: "EEXIST"
        case ENOSPC: "ENOSPC"
        default: "errno \(rawValue)"
        }
    }

    /// The C library's message for this code (`strerror_r`).
    public var message: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress, let text = cshim_strerror(rawValue, base, buffer.count) else {
                return "unknown error"
            }
            return String(cString: text)
        }
    }

    /// `message (NAME)`, e.g. `Remote I/O error (EREMOTEIO)`.
    public var description: String { "\(message) (\(name))" }

    /// The calling thread's current `errno`.
    package static var current: Errno {
        get { Errno(rawValue: Glibc.errno) }
        set { Glibc.errno = newValue.rawValue }
    }
}

/// Which call failed, on which device, and with which error number: the context every error of
/// LinuxSystem and PiHardware carries so a log line says exactly what went wrong.
public struct FailedCall: Hashable, Sendable, CustomStringConvertible {
    /// The C function (and, for ioctl, the request), e.g. `ioctl(I2C_RDWR)`.
    public let call: String
    /// The device path or name, e.g. `/dev/i2c-1` or `gpiochip0 line 17`.
    public let device: String
    /// The error number, if the failure came from the system.
    public let errno: Errno?

    /// Creates the context of a failed call.
    public init(call: String, device: String, errno: Errno?) {
        self.call = call
        self.device = device
        self.errno = errno
    }

    /// `call on device: message (NAME)`.
    public var description: String {
        if let errno {
            "\(call) on \(device): \(errno)"
        } else {
            "\(call) on \(device)"
        }
    }
}
