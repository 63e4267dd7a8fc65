// A pseudo-terminal pair: the controller side stays in this object, the device side is a path
// (/dev/pts/N) that code under test or the simulator's client opens as a serial port.
internal import CLinuxShims
internal import Glibc

/// A pseudo-terminal (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname_r`).
///
/// This object is the controller ("master") side, a `ByteLink`: bytes written here arrive at
/// whoever opened `devicePath`, and bytes they write are read here. The device side starts in
/// raw mode so no byte is echoed or translated.
public final class PseudoTerminal: ByteLink {
    /// The device side to open as a serial port, e.g. `/dev/pts/3`.
    public let devicePath: String
    public var name: String { "pty \(devicePath)" }
    /// How long one `write` may wait for the device side to take more bytes.
    public let writeTimeout: Duration

    private let controller: Lock<CInt>
    /// The device side held open by this object, so that the controller does not see a hang-up
    /// while the client closes and reopens its port (a receiver powered off and on).
    private let heldDevice: Lock<CInt>
    private let readLock = Lock(())
    private let writeLock = Lock(())

    /// Opens a new pseudo-terminal. With `holdDeviceOpen`, this object keeps a descriptor of the
    /// device side too, so reads here time out rather than hang up while no client has it open.
    public init(holdDeviceOpen: Bool = true, writeTimeout: Duration = .seconds(2)) throws(PseudoTerminalError) {
        let device = "/dev/ptmx"
        let fd: CInt
        switch retryingInterrupts("posix_openpt", device, { system_posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC) }) {
        case .success(let value): fd = value
        case .failure(let failure): throw PseudoTerminalError(failure)
        }
        var path = ""
        var held: CInt = -1
        do throws(PseudoTerminalError) {
            try Self.check(retryingInterrupts("grantpt", device) { system_grantpt(fd) })
            try Self.check(retryingInterrupts("unlockpt", device) { system_unlockpt(fd) })
            var buffer = [CChar](repeating: 0, count: 128)
            try Self.check(retryingInterrupts("ptsname_r", device) { system_ptsname_r(fd, &buffer, buffer.count) })
            path = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // termios set through the controller applies to the device side.
            var settings = termios()
            try Self.check(retryingInterrupts("tcgetattr", device) { system_tcgetattr(fd, &settings, device) })
            system_cfmakeraw(&settings)
            try Self.check(retryingInterrupts("tcsetattr", device) { system_tcsetattr(fd, TCSANOW, &settings, device) })
            try Self.setNonBlocking(fd, device)
            if holdDeviceOpen {
                let flags = O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC
                switch retryingInterrupts("open", path, { system_open(path, flags) }) {
                case .success(let value): held = value
                case .failure(let failure): throw PseudoTerminalError(failure)
                }
            }
        } catch {
            _ = system_close(fd, device)
            throw error
        }
        self.devicePath = path
        self.writeTimeout = writeTimeout
        self.controller = Lock(fd)
        self.heldDevice = Lock(held)
    }

    deinit {
        close()
    }

    /// Waits up to `timeout` for bytes from the device side (`poll`, `read`).
    /// Throws `.hangUp` or `.vanished` once the device side has been closed by every holder.
    public func read(maxCount: Int = 4096, timeout: Duration) throws(PseudoTerminalError) -> [UInt8] {
        try read(maxCount: maxCount, timeout: timeout, wake: nil)
    }

    /// Waits with no timeout for bytes from the device side, or until `waker` is woken (then
    /// returns no bytes); `poll` on both, `read`. ``close()`` waits for a read in progress, so wake
    /// the reader first.
    public func read(maxCount: Int = 4096, until waker: Waker) throws(PseudoTerminalError) -> [UInt8] {
        try read(maxCount: maxCount, timeout: nil, wake: waker)
    }

    private func read(maxCount: Int, timeout: Duration?, wake: Waker?) throws(PseudoTerminalError) -> [UInt8] {
        try readLock.withLock { _ throws(PseudoTerminalError) in
            let fd = try openDescriptor()
            switch DescriptorIO.read(fd, device: name, maxCount: maxCount, timeout: timeout, wake: wake) {
            case .bytes(let bytes): return bytes
            case .timedOut: return []
            case .hungUp(let failure): throw .hangUp(failure)
            case .failed(let failure): throw PseudoTerminalError(failure)
            }
        }
    }

    /// Writes all of `bytes` towards the device side (`write`, `poll`).
    public func write(_ bytes: [UInt8]) throws(PseudoTerminalError) {
        try writeLock.withLock { _ throws(PseudoTerminalError) in
            let fd = try openDescriptor()
            switch DescriptorIO.writeAll(fd, device: name, bytes: bytes, timeout: writeTimeout) {
            case .written: return
            case .timedOut(let failure): throw .writeTimedOut(failure)
            case .hungUp(let failure): throw .hangUp(failure)
            case .failed(let failure): throw PseudoTerminalError(failure)
            }
        }
    }

    /// Closes the held device side, if any, so that the controller sees a hang-up once the
    /// client closes too.
    public func releaseDevice() {
        let fd = heldDevice.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { _ = system_close(fd, devicePath) }
    }

    /// Closes the controller (`close`): a client of the device side then reads a hang-up.
    public func close() {
        releaseDevice()
        readLock.withLock { _ in
            writeLock.withLock { _ in
                let fd = controller.withLock { fd in
                    defer { fd = -1 }
                    return fd
                }
                if fd >= 0 { _ = system_close(fd, name) }
            }
        }
    }

    private func openDescriptor() throws(PseudoTerminalError) -> CInt {
        let fd = controller.withLock { $0 }
        guard fd >= 0 else { throw .closed(device: name) }
        return fd
    }

    private static func setNonBlocking(_ fd: CInt, _ device: String) throws(PseudoTerminalError) {
        let flags = retryingInterrupts("fcntl(F_GETFL)", device) {
            system_fcntl(fd, F_GETFL, 0, "fcntl(F_GETFL)", device)
        }
        switch flags {
        case .success(let value):
            try check(retryingInterrupts("fcntl(F_SETFL)", device) {
                system_fcntl(fd, F_SETFL, value | O_NONBLOCK, "fcntl(F_SETFL)", device)
            })
        case .failure(let failure):
            throw PseudoTerminalError(failure)
        }
    }

    private static func check(_ result: Result<CInt, FailedCall>) throws(PseudoTerminalError) {
        if case .failure(let failure) = result { throw PseudoTerminalError(failure) }
    }
}

/// Why a pseudo-terminal call failed.
public enum PseudoTerminalError: HardwareFault, Equatable {
    /// The far side hung up (`POLLHUP`, end of file, `EPIPE`): every holder of the device side closed it.
    case hangUp(FailedCall)
    /// `EIO`, `ENXIO`, `ENODEV`: the terminal went away.
    case vanished(FailedCall)
    /// A write could not finish in time: nobody reads the device side.
    case writeTimedOut(FailedCall)
    /// The pseudo-terminal was closed by `close()`.
    case closed(device: String)
    /// Any other failed call, e.g. `posix_openpt` without `/dev/ptmx` (`ENOENT`).
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on.
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.ioError?, Errno.noSuchDeviceOrAddress?, Errno.noSuchDevice?: self = .vanished(failure)
        case Errno.brokenPipe?: self = .hangUp(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .hangUp(let f), .vanished(let f), .writeTimedOut(let f), .failed(let f): f
        case .closed: nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .hangUp, .vanished, .closed: true
        case .writeTimedOut, .failed: false
        }
    }

    public var description: String {
        switch self {
        case .hangUp(let f): "pseudo-terminal hung up: \(f)"
        case .vanished(let f): "pseudo-terminal vanished: \(f)"
        case .writeTimedOut(let f): "pseudo-terminal write timed out (nobody reads the device side?): \(f)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "pseudo-terminal call failed: \(f)"
        }
    }
}
