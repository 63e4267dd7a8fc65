// Typed errors of serial ports.
public import LinuxSystem

/// Why a serial port call failed (a pseudo-terminal's failures are ``PseudoTerminalError``s).
public enum SerialError: HardwareFault, Equatable {
    /// `ENOENT`: no such device (a wrong path, or the USB adapter is unplugged).
    case notFound(FailedCall)
    /// `EACCES`/`EPERM`: the user may not open the device (not in the `dialout` group?).
    case permissionDenied(FailedCall)
    /// `EBUSY`: another program holds the port in exclusive mode.
    case busy(FailedCall)
    /// `ENOTTY`: the path is not a terminal.
    case notATerminal(FailedCall)
    /// The speed is not one of `SerialPort.standardSpeeds`, or the driver did not take it.
    case unsupportedSpeed(Int, device: String)
    /// The far side hung up (`POLLHUP`, end of file): a closed pseudo-terminal, a modem hang-up.
    case hangUp(FailedCall)
    /// The device vanished (`EIO`, `ENXIO`, `ENODEV`): an unplugged USB adapter, a closed
    /// pseudo-terminal controller.
    case vanished(FailedCall)
    /// A write could not finish in time (flow control held it back?).
    case writeTimedOut(FailedCall)
    /// The port was closed by `close()`.
    case closed(device: String)
    /// Any other failed call.
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on (also for test doubles).
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.noSuchFileOrDirectory?: self = .notFound(failure)
        case Errno.permissionDenied?, Errno.notPermitted?: self = .permissionDenied(failure)
        case Errno.resourceBusy?: self = .busy(failure)
        case Errno.notATerminal?: self = .notATerminal(failure)
        case Errno.ioError?, Errno.noSuchDeviceOrAddress?, Errno.noSuchDevice?: self = .vanished(failure)
        case Errno.brokenPipe?: self = .hangUp(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .notFound(let f), .permissionDenied(let f), .busy(let f), .notATerminal(let f), .hangUp(let f),
            .vanished(let f), .writeTimedOut(let f), .failed(let f):
            f
        case .unsupportedSpeed, .closed:
            nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .hangUp, .vanished, .closed, .notFound: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .notFound(let f): "serial device not found: \(f)"
        case .permissionDenied(let f): "no permission for the serial device (is the user in group dialout?): \(f)"
        case .busy(let f): "serial device is in exclusive use by another program: \(f)"
        case .notATerminal(let f): "not a serial device: \(f)"
        case .unsupportedSpeed(let speed, let device):
            "\(device): speed \(speed) is not supported (standard speeds: "
                + SerialPort.standardSpeeds.map(String.init).joined(separator: ", ") + ")"
        case .hangUp(let f): "serial device hung up: \(f)"
        case .vanished(let f): "serial device vanished: \(f)"
        case .writeTimedOut(let f): "serial write timed out (flow control?): \(f)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "serial call failed: \(f)"
        }
    }
}
