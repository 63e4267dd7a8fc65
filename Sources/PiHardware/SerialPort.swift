// A serial port through termios: raw 8N1, standard speeds, optional RTS/CTS, exclusive use.
internal import CLinuxShims
internal import Glibc
public import LinuxSystem

/// A serial port (`/dev/ttyAMA0`, `/dev/serial0`, `/dev/ttyUSB0`, a pseudo-terminal), opened
/// with `O_NOCTTY | O_NONBLOCK` in raw mode, 8 data bits, no parity, 1 stop bit.
///
/// A `read` and a `write` may run on two threads at once; `close()` waits for both to finish. The
/// seam's mock in force at the open (tests only) stays with the port, whichever thread reads later.
public final class SerialPort: ByteLink {
    /// The standard speeds (termios `B4800` … `B921600`) this port accepts.
    public static let standardSpeeds = [4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600]

    /// The device path.
    public let path: String
    public var name: String { path }
    /// How long one `write` may wait for the device to take more bytes.
    public let writeTimeout: Duration

    private let descriptor: Lock<CInt>
    private let readLock = Lock(())
    private let writeLock = Lock(())
    /// The seam's mock in force at the open (tests only), installed again around every later call.
    private let seam: SeamMock?

    /// Opens `path` (`open` with `O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC`), takes exclusive
    /// use (`ioctl(TIOCEXCL)`), and sets raw 8N1 at `speed` (`tcgetattr`, `cfmakeraw`,
    /// `cfsetispeed`, `cfsetospeed`, `tcsetattr`), with RTS/CTS flow control when asked.
    public init(
        path: String, speed: Int = 9600, rtsCts: Bool = false, exclusive: Bool = true,
        writeTimeout: Duration = .seconds(2)
    ) throws(SerialError) {
        guard let baud = Self.termiosSpeed(speed) else { throw .unsupportedSpeed(speed, device: path) }
        let opened = retryingInterrupts("open", path) { system_open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) }
        let fd: CInt
        switch opened {
        case .success(let value): fd = value
        case .failure(let failure): throw SerialError(failure)
        }
        self.path = path
        self.writeTimeout = writeTimeout
        self.descriptor = Lock(fd)
        self.seam = SeamMock.inForce
        do throws(SerialError) {
            if exclusive {
                try check(retryingInterrupts(.ioctl("TIOCEXCL"), path) {
                    system_ioctl(fd, UInt(TIOCEXCL), nil, .ioctl("TIOCEXCL"), path)
                })
            }
            try configure(fd, baud: baud, speed: speed, rtsCts: rtsCts)
        } catch {
            _ = system_close(fd, path)
            descriptor.withLock { $0 = -1 }
            throw error
        }
    }

    deinit {
        let fd = descriptor.withLock { $0 }
        if fd >= 0 { _ = system_close(fd, path) }
    }

    /// The speed the driver reports (`tcgetattr`, `cfgetospeed`).
    public func speed() throws(SerialError) -> Int {
        let fd = try openDescriptor()
        var settings = termios()
        try check(retryingInterrupts("tcgetattr", path) { system_tcgetattr(fd, &settings, path) })
        let baud = system_cfgetospeed(&settings)
        return Self.standardSpeeds.first { Self.termiosSpeed($0) == baud } ?? 0
    }

    /// Changes the speed, keeping raw 8N1 and the flow control (`tcsetattr`).
    public func setSpeed(_ speed: Int) throws(SerialError) {
        guard let baud = Self.termiosSpeed(speed) else { throw .unsupportedSpeed(speed, device: path) }
        let fd = try openDescriptor()
        var settings = termios()
        try check(retryingInterrupts("tcgetattr", path) { system_tcgetattr(fd, &settings, path) })
        try apply(fd, &settings, baud: baud, speed: speed)
    }

    /// Whether RTS/CTS flow control is on (`tcgetattr`, `CRTSCTS`).
    public func usesRtsCts() throws(SerialError) -> Bool {
        let fd = try openDescriptor()
        var settings = termios()
        try check(retryingInterrupts("tcgetattr", path) { system_tcgetattr(fd, &settings, path) })
        return settings.c_cflag & tcflag_t(CRTSCTS) != 0
    }

    /// Whether the port is in exclusive mode (`ioctl(TIOCGEXCL)`).
    public func isExclusive() throws(SerialError) -> Bool {
        let fd = try openDescriptor()
        var flag: CInt = 0
        let request = cshim_request_TIOCGEXCL()
        try check(retryingInterrupts(.ioctl("TIOCGEXCL"), path) {
            system_ioctl(fd, request, &flag, .ioctl("TIOCGEXCL"), path)
        })
        return flag != 0
    }

    /// Waits up to `timeout` for input (`poll`), then reads at most `maxCount` bytes (`read`).
    /// Returns an empty array on time-out; throws `.hangUp` or `.vanished` when the device is
    /// gone, rather than returning empty reads in a loop.
    public func read(maxCount: Int = 4096, timeout: Duration) throws(SerialError) -> [UInt8] {
        try read(maxCount: maxCount, timeout: timeout, wake: nil)
    }

    /// Waits with no timeout for bytes, or until `waker` is woken (then returns none); `poll` on
    /// both, `read`. ``close()`` waits for a read in progress, so wake the reader first.
    public func read(maxCount: Int = 4096, until waker: Waker) throws(SerialError) -> [UInt8] {
        try read(maxCount: maxCount, timeout: nil, wake: waker)
    }

    /// As ``read(maxCount:until:)``, the bytes left in `buffer` (empty when woken), whose storage is
    /// reused while nothing else holds it (`poll` on both, `read`): no allocation per read.
    public func read(into buffer: inout [UInt8], maxCount: Int = 4096, until waker: Waker) throws(SerialError) {
        try readLock.withLock { _ throws(SerialError) in
            let fd = try openDescriptor()
            let outcome = withSeamMock(seam) {
                DescriptorIO.read(fd, device: path, into: &buffer, maxCount: maxCount, timeout: nil, wake: waker)
            }
            switch outcome {
            case .bytes, .timedOut: return
            case .hungUp(let failure): throw .hangUp(failure)
            case .failed(let failure): throw SerialError(failure)
            }
        }
    }

    private func read(maxCount: Int, timeout: Duration?, wake: Waker?) throws(SerialError) -> [UInt8] {
        try readLock.withLock { _ throws(SerialError) in
            let fd = try openDescriptor()
            let outcome = withSeamMock(seam) {
                DescriptorIO.read(fd, device: path, maxCount: maxCount, timeout: timeout, wake: wake)
            }
            switch outcome {
            case .bytes(let bytes): return bytes
            case .timedOut: return []
            case .hungUp(let failure): throw .hangUp(failure)
            case .failed(let failure): throw SerialError(failure)
            }
        }
    }

    /// Writes all of `bytes` (`write`, and `poll` while the output queue is full).
    public func write(_ bytes: [UInt8]) throws(SerialError) {
        try writeLock.withLock { _ throws(SerialError) in
            let fd = try openDescriptor()
            let outcome = withSeamMock(seam) {
                DescriptorIO.writeAll(fd, device: path, bytes: bytes, timeout: writeTimeout)
            }
            switch outcome {
            case .written: return
            case .timedOut(let failure): throw .writeTimedOut(failure)
            case .hungUp(let failure): throw .hangUp(failure)
            case .failed(let failure): throw SerialError(failure)
            }
        }
    }

    /// Waits until all written bytes have left the port (`tcdrain`).
    public func drain() throws(SerialError) {
        try writeLock.withLock { _ throws(SerialError) in
            let fd = try openDescriptor()
            try check(retryingInterrupts("tcdrain", path) { system_tcdrain(fd, path) })
        }
    }

    /// Drops bytes received but not yet read (`tcflush(TCIFLUSH)`), e.g. after a speed change.
    public func discardInput() throws(SerialError) {
        let fd = try openDescriptor()
        try check(retryingInterrupts("tcflush", path) { system_tcflush(fd, TCIFLUSH, path) })
    }

    /// Closes the port (`close`), after a read or write in progress has finished.
    public func close() {
        readLock.withLock { _ in
            writeLock.withLock { _ in
                let fd = descriptor.withLock { fd in
                    defer { fd = -1 }
                    return fd
                }
                // close(2) releases the descriptor even when it reports an error, so there is
                // nothing to retry and nothing the caller could do with the error.
                if fd >= 0 { _ = system_close(fd, path) }
            }
        }
    }

    // MARK: - Private

    private func openDescriptor() throws(SerialError) -> CInt {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { throw .closed(device: path) }
        return fd
    }

    private func configure(_ fd: CInt, baud: speed_t, speed: Int, rtsCts: Bool) throws(SerialError) {
        var settings = termios()
        try check(retryingInterrupts("tcgetattr", path) { system_tcgetattr(fd, &settings, path) })
        system_cfmakeraw(&settings)
        settings.c_cflag &= ~(tcflag_t(CSIZE) | tcflag_t(PARENB) | tcflag_t(CSTOPB) | tcflag_t(CRTSCTS))
        settings.c_cflag |= tcflag_t(CS8) | tcflag_t(CLOCAL) | tcflag_t(CREAD)
        if rtsCts { settings.c_cflag |= tcflag_t(CRTSCTS) }
        // Reads go through poll on a non-blocking descriptor, so VMIN/VTIME only need to make
        // a read return what is there.
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        try apply(fd, &settings, baud: baud, speed: speed)
    }

    private func apply(_ fd: CInt, _ settings: inout termios, baud: speed_t, speed: Int) throws(SerialError) {
        try check(retryingInterrupts("cfsetispeed", path) { system_cfsetispeed(&settings, baud, path) })
        try check(retryingInterrupts("cfsetospeed", path) { system_cfsetospeed(&settings, baud, path) })
        try check(retryingInterrupts("tcsetattr", path) { system_tcsetattr(fd, TCSANOW, &settings, path) })
        // tcsetattr succeeds when any of the changes took, so read the speed back.
        var actual = termios()
        try check(retryingInterrupts("tcgetattr", path) { system_tcgetattr(fd, &actual, path) })
        guard system_cfgetospeed(&actual) == baud else { throw .unsupportedSpeed(speed, device: path) }
    }

    private func check(_ result: Result<CInt, FailedCall>) throws(SerialError) {
        if case .failure(let failure) = result { throw SerialError(failure) }
    }

    /// The termios constant for a speed in bits per second.
    static func termiosSpeed(_ speed: Int) -> speed_t? {
        switch speed {
        case 4800: speed_t(B4800)
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115200: speed_t(B115200)
        case 230400: speed_t(B230400)
        case 460800: speed_t(B460800)
        case 500000: speed_t(B500000)
        case 576000: speed_t(B576000)
        case 921600: speed_t(B921600)
        default: nil
        }
    }
}
