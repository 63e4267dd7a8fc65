// The syscall seam: every C call the package makes goes through one function here or in the other
// *Seam files (swift-system's `system_open` pattern), so tests can inject failures and see which
// calls ran. What PiHardware needs of it is `package`: the termios and ioctl calls here, and the
// mechanism its libgpiod and libi2c calls (declared next to their users) record themselves and take
// injected failures through, the same `SeamMock`.
//
// libc types (termios, speed_t, mode_t) belong to whichever C module Clang met them in first,
// CLinuxShims or Glibc, which varies between builds; so no `package` signature here names one:
// `mode_t` and `speed_t` are spelt `UInt32`, and a termios is passed as a raw pointer (`&settings`).
internal import CLinuxShims
internal import Glibc
import Synchronization

/// The name of one C call as it appears in errors and in the seam's record, e.g. `open`,
/// `ioctl(I2C_RDWR)`, `gpiod_line_request`.
package struct SystemCall:
    RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral
{
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }
    package init(stringLiteral value: String) { self.rawValue = value }
    package var description: String { rawValue }

    package static func ioctl(_ request: String) -> SystemCall { SystemCall(rawValue: "ioctl(\(request))") }
}

/// A test hook on the seam: injects errors into named calls, stands in for `open` and `ioctl`,
/// and records every call with its device. Installed for one task with `SeamMock.$current`;
/// tests run in parallel, so the hook is task-local rather than global.
package final class SeamMock: Sendable {
    /// One call that went through the seam.
    package struct Record: Hashable, Sendable, CustomStringConvertible {
        package let call: SystemCall
        package let device: String
        package var description: String { "\(call) \(device)" }

        package init(call: SystemCall, device: String) {
            self.call = call
            self.device = device
        }
    }

    /// Stands in for `open(path, flags)`; returns a descriptor or -1 with `errno` set, or nil to
    /// let the real call run.
    package typealias OpenHandler = @Sendable (_ path: String, _ flags: CInt) -> CInt?
    /// Stands in for `ioctl(fd, request, arg)`; returns the result (with `errno` set when -1),
    /// or nil to let the real call run.
    package typealias IoctlHandler = @Sendable (_ fd: CInt, _ request: UInt, _ arg: UnsafeMutableRawPointer?) -> CInt?
    /// Stands in for a read-only `adjtimex`: what the kernel would report, or nil to let the real call
    /// run. (Its failures are injected with ``fail(_:with:times:)`` like any call's.)
    package typealias AdjtimexHandler = @Sendable () -> KernelClockReading?
    /// Shortens a `write` of `count` bytes to `device`: the most bytes the real call may take this time
    /// (a short write, as a filling disk gives before `ENOSPC`), or nil to let it take them all.
    package typealias WriteHandler = @Sendable (_ device: String, _ count: Int) -> Int?

    private struct State {
        var failures: [SystemCall: [Errno]] = [:]
        var records: [Record] = []
        var open: OpenHandler?
        var ioctl: IoctlHandler?
        var adjtimex: AdjtimexHandler?
        var write: WriteHandler?
    }

    @TaskLocal package static var current: SeamMock?
    /// Whether any mock was ever made in this process: a mock exists before it can be installed.
    static let anyMade = Atomic<Bool>(false)

    private let state = Lock(State())

    package init(
        open: OpenHandler? = nil, ioctl: IoctlHandler? = nil, adjtimex: AdjtimexHandler? = nil,
        write: WriteHandler? = nil
    ) {
        Self.anyMade.store(true, ordering: .relaxed)
        state.withLock {
            $0.open = open
            $0.ioctl = ioctl
            $0.adjtimex = adjtimex
            $0.write = write
        }
    }

    /// The mock installed for the calling task, if any. An object whose calls come later from threads
    /// the task-local does not reach (a file the MQTT bridge appends to on the receiver's thread and
    /// on libmosquitto's) takes it when made and makes each call under it (``withSeamMock(_:_:)``).
    package static var inForce: SeamMock? {
        anyMade.load(ordering: .relaxed) ? current : nil
    }

    /// The next `times` calls of `call` fail with `errno` before reaching the system.
    package func fail(_ call: SystemCall, with errno: Errno, times: Int = 1) {
        state.withLock { $0.failures[call, default: []] += Array(repeating: errno, count: times) }
    }

    /// Every call made so far, in order.
    package var records: [Record] { state.withLock { $0.records } }

    /// The names of the calls made so far, in order.
    package var calls: [SystemCall] { records.map(\.call) }

    /// How many times `call` was made.
    package func count(_ call: SystemCall) -> Int { records.filter { $0.call == call }.count }

    /// Failures injected but not yet consumed.
    package var pendingFailures: Int { state.withLock { $0.failures.values.reduce(0) { $0 + $1.count } } }

    fileprivate func enter(_ call: SystemCall, _ device: String) -> Errno? {
        state.withLock {
            $0.records.append(Record(call: call, device: device))
            guard var queue = $0.failures[call], !queue.isEmpty else { return nil }
            let errno = queue.removeFirst()
            $0.failures[call] = queue
            return errno
        }
    }

    fileprivate var openHandler: OpenHandler? { state.withLock { $0.open } }
    fileprivate var ioctlHandler: IoctlHandler? { state.withLock { $0.ioctl } }
    fileprivate var adjtimexHandler: AdjtimexHandler? { state.withLock { $0.adjtimex } }
    fileprivate var writeHandler: WriteHandler? { state.withLock { $0.write } }
}

/// Runs `body` with `mock` installed, as the task that made an object had it (``SeamMock/inForce``);
/// with no mock, just runs it.
@inline(__always)
package func withSeamMock<T, E: Error>(_ mock: SeamMock?, _ body: () throws(E) -> T) throws(E) -> T {
    guard let mock else { return try body() }
    return try SeamMock.$current.withValue(mock) { Result { () throws(E) -> T in try body() } }.get()
}

/// Records the call and returns an injected error, if a test installed one.
@inline(__always)
package func seamEnter(_ call: SystemCall, _ device: String) -> Errno? {
    // A process that never made a mock (the service) skips the task-local lookup on every call.
    guard SeamMock.anyMade.load(ordering: .relaxed), let mock = SeamMock.current else { return nil }
    return mock.enter(call, device)
}

// MARK: - Results

/// Runs a call that returns -1 and sets `errno` on failure, retrying `EINTR`.
///
/// `EBADF` and `EFAULT` can only mean a bug in this package (a closed descriptor, a bad
/// buffer), so they trap the way swift-nio does, rather than being reported as I/O errors.
@inline(__always)
package func retryingInterrupts<T: BinaryInteger>(
    _ call: SystemCall, _ device: String, _ body: () -> T
) -> Result<T, FailedCall> {
    while true {
        let result = body()
        if result != -1 { return .success(result) }
        let errno = Errno.current
        if errno == .interrupted { continue }
        trapOnBug(errno, call, device)
        return .failure(FailedCall(call: call.rawValue, device: device, errno: errno))
    }
}

/// Runs a call that returns NULL and sets `errno` on failure, retrying `EINTR`.
@inline(__always)
package func retryingInterrupts<T>(
    _ call: SystemCall, _ device: String, _ body: () -> T?
) -> Result<T, FailedCall> {
    while true {
        if let result = body() { return .success(result) }
        let errno = Errno.current
        if errno == .interrupted { continue }
        trapOnBug(errno, call, device)
        return .failure(FailedCall(call: call.rawValue, device: device, errno: errno))
    }
}

@inline(__always)
private func trapOnBug(_ errno: Errno, _ call: SystemCall, _ device: String) {
    if errno == .badFileDescriptor || errno == .badAddress {
        preconditionFailure("GNSSHat bug: \(call) on \(device) failed with \(errno)")
    }
}

/// Sets `errno` and returns the C failure value -1.
@inline(__always)
private func fail<T: BinaryInteger>(_ errno: Errno) -> T {
    Errno.current = errno
    return -1
}

// MARK: - libc

package func system_open(_ path: String, _ flags: CInt, _ mode: UInt32 = 0) -> CInt {
    if let errno = seamEnter("open", path) { return fail(errno) }
    if let handler = SeamMock.current?.openHandler, let fd = handler(path, flags) { return fd }
    return Glibc.open(path, flags, mode)
}

package func system_close(_ fd: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("close", device) { return fail(errno) }
    return Glibc.close(fd)
}

package func system_read(_ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ device: String) -> Int {
    if let errno = seamEnter("read", device) { return fail(errno) }
    return Glibc.read(fd, buffer, count)
}

package func system_write(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int, _ device: String) -> Int {
    if let errno = seamEnter("write", device) { return fail(errno) }
    if let handler = SeamMock.current?.writeHandler, let most = handler(device, count) {
        return Glibc.write(fd, buffer, min(count, max(most, 0)))
    }
    return Glibc.write(fd, buffer, count)
}

/// `pread`: reads at `offset` without moving the file position.
package func system_pread(
    _ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: Int64, _ device: String
) -> Int {
    if let errno = seamEnter("pread", device) { return fail(errno) }
    return Glibc.pread(fd, buffer, count, off_t(offset))
}

/// `lseek`: moves the file position; returns the new one.
package func system_lseek(_ fd: CInt, _ offset: Int64, _ whence: CInt, _ device: String) -> Int64 {
    if let errno = seamEnter("lseek", device) { return fail(errno) }
    return Int64(Glibc.lseek(fd, off_t(offset), whence))
}

/// `flock`: takes or drops an advisory lock on the whole file.
package func system_flock(_ fd: CInt, _ operation: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("flock", device) { return fail(errno) }
    return cshim_flock(fd, operation)
}

/// `ftruncate`: cuts (or extends) the file to `length` bytes.
package func system_ftruncate(_ fd: CInt, _ length: Int64, _ device: String) -> CInt {
    if let errno = seamEnter("ftruncate", device) { return fail(errno) }
    return Glibc.ftruncate(fd, off_t(length))
}

/// `fdatasync`: flushes a file's data (and the metadata needed to read it back) to the storage device.
package func system_fdatasync(_ fd: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("fdatasync", device) { return fail(errno) }
    return Glibc.fdatasync(fd)
}

/// `gethostname`: the machine's host name into `buffer` (NUL-terminated when it fits).
func system_gethostname(_ buffer: UnsafeMutablePointer<CChar>, _ count: Int) -> CInt {
    if let errno = seamEnter("gethostname", "host") { return fail(errno) }
    return Glibc.gethostname(buffer, count)
}

func system_poll(_ fds: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeoutMS: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("poll", device) { return fail(errno) }
    return Glibc.poll(fds, nfds_t(count), timeoutMS)
}

/// `fsync`: flushes a file (or a directory's entries) to the storage device.
package func system_fsync(_ fd: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("fsync", device) { return fail(errno) }
    return Glibc.fsync(fd)
}

/// `rename`: replaces `to` by `from` in one step (both in one file system).
package func system_rename(_ from: String, _ to: String) -> CInt {
    if let errno = seamEnter("rename", from) { return fail(errno) }
    return Glibc.rename(from, to)
}

/// `mkdir`: creates a directory with `mode` (less the umask).
package func system_mkdir(_ path: String, _ mode: UInt32) -> CInt {
    if let errno = seamEnter("mkdir", path) { return fail(errno) }
    return Glibc.mkdir(path, mode)
}

/// What a read-only `adjtimex` reports of the kernel's clock discipline: the clock state it returns
/// (`TIME_OK` ... `TIME_ERROR`) and the fields GNSSHat reads (`status` bits, `maxerror`, `esterror`).
package struct KernelClockReading: Hashable, Sendable {
    /// The return value: `TIME_OK` (0) ... `TIME_ERROR` (5).
    package var state: CInt
    /// `STA_*` bits (`STA_UNSYNC` 0x40, `STA_CLOCKERR` 0x1000, ...).
    package var status: CInt
    /// The maximum and the estimated error, microseconds.
    package var maxError: Int
    package var estimatedError: Int

    package init(state: CInt, status: CInt, maxError: Int, estimatedError: Int) {
        self.state = state
        self.status = status
        self.maxError = maxError
        self.estimatedError = estimatedError
    }
}

/// `adjtimex` with `modes` 0: reads the kernel clock's state and errors and changes nothing (no
/// privilege needed). Returns the clock state, or -1 with `errno` set.
package func system_adjtimex(_ reading: inout KernelClockReading) -> CInt {
    if let errno = seamEnter("adjtimex", "system clock") { return fail(errno) }
    if let handler = SeamMock.current?.adjtimexHandler, let injected = handler() {
        reading = injected
        return injected.state
    }
    var buffer = timex()
    let state = adjtimex(&buffer)
    reading = KernelClockReading(
        state: state, status: buffer.status, maxError: buffer.maxerror, estimatedError: buffer.esterror)
    return state
}

package func system_ioctl(
    _ fd: CInt, _ request: UInt, _ arg: UnsafeMutableRawPointer?, _ call: SystemCall, _ device: String
) -> CInt {
    if let errno = seamEnter(call, device) { return fail(errno) }
    if let handler = SeamMock.current?.ioctlHandler, let result = handler(fd, request, arg) { return result }
    return cshim_ioctl_ptr(fd, request, arg)
}

package func system_tcgetattr(_ fd: CInt, _ settings: UnsafeMutableRawPointer, _ device: String) -> CInt {
    if let errno = seamEnter("tcgetattr", device) { return fail(errno) }
    return Glibc.tcgetattr(fd, settings.assumingMemoryBound(to: termios.self))
}

package func system_tcsetattr(_ fd: CInt, _ action: CInt, _ settings: UnsafeRawPointer, _ device: String) -> CInt {
    if let errno = seamEnter("tcsetattr", device) { return fail(errno) }
    return Glibc.tcsetattr(fd, action, settings.assumingMemoryBound(to: termios.self))
}

package func system_tcdrain(_ fd: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("tcdrain", device) { return fail(errno) }
    return Glibc.tcdrain(fd)
}

package func system_tcflush(_ fd: CInt, _ queue: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("tcflush", device) { return fail(errno) }
    return Glibc.tcflush(fd, queue)
}

package func system_cfsetispeed(_ settings: UnsafeMutableRawPointer, _ speed: UInt32, _ device: String) -> CInt {
    if let errno = seamEnter("cfsetispeed", device) { return fail(errno) }
    return Glibc.cfsetispeed(settings.assumingMemoryBound(to: termios.self), speed)
}

package func system_cfsetospeed(_ settings: UnsafeMutableRawPointer, _ speed: UInt32, _ device: String) -> CInt {
    if let errno = seamEnter("cfsetospeed", device) { return fail(errno) }
    return Glibc.cfsetospeed(settings.assumingMemoryBound(to: termios.self), speed)
}

package func system_cfgetospeed(_ settings: UnsafeRawPointer) -> UInt32 {
    Glibc.cfgetospeed(settings.assumingMemoryBound(to: termios.self))
}

package func system_cfmakeraw(_ settings: UnsafeMutableRawPointer) {
    cshim_cfmakeraw(settings.assumingMemoryBound(to: termios.self))
}

func system_posix_openpt(_ flags: CInt) -> CInt {
    if let errno = seamEnter("posix_openpt", "/dev/ptmx") { return fail(errno) }
    return cshim_posix_openpt(flags)
}

func system_grantpt(_ fd: CInt) -> CInt {
    if let errno = seamEnter("grantpt", "/dev/ptmx") { return fail(errno) }
    return cshim_grantpt(fd)
}

func system_unlockpt(_ fd: CInt) -> CInt {
    if let errno = seamEnter("unlockpt", "/dev/ptmx") { return fail(errno) }
    return cshim_unlockpt(fd)
}

/// ptsname_r returns an error number rather than setting errno; this wrapper turns it into
/// the -1/errno convention the result helpers expect.
func system_ptsname_r(_ fd: CInt, _ buffer: UnsafeMutablePointer<CChar>, _ count: Int) -> CInt {
    if let errno = seamEnter("ptsname_r", "/dev/ptmx") { return fail(errno) }
    let code = cshim_ptsname_r(fd, buffer, count)
    if code != 0 { return fail(Errno(rawValue: code)) }
    return 0
}

func system_opendir(_ path: String) -> OpaquePointer? {
    if let errno = seamEnter("opendir", path) {
        Errno.current = errno
        return nil
    }
    return Glibc.opendir(path)
}

/// readdir returns NULL both at the end and on error; the caller tells them apart by `errno`.
func system_readdir(_ dir: OpaquePointer, _ path: String) -> UnsafeMutablePointer<dirent>? {
    if let errno = seamEnter("readdir", path) {
        Errno.current = errno
        return nil
    }
    return Glibc.readdir(dir)
}

func system_closedir(_ dir: OpaquePointer, _ path: String) -> CInt {
    _ = seamEnter("closedir", path)
    return Glibc.closedir(dir)
}

package func system_fcntl(_ fd: CInt, _ command: CInt, _ value: CInt, _ call: SystemCall, _ device: String) -> CInt {
    if let errno = seamEnter(call, device) { return fail(errno) }
    return Glibc.fcntl(fd, command, value)
}

/// Sleeps for `duration` (`nanosleep`), resuming after a signal with the time that was left.
package func system_nanosleep(_ duration: Duration) {
    _ = seamEnter("nanosleep", "")
    let nanos = duration.clampedNanoseconds
    var request = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    var remaining = timespec()
    while Glibc.nanosleep(&request, &remaining) == -1 && Errno.current == .interrupted {
        request = remaining
    }
}

/// The names in a directory (`opendir`, `readdir`, `closedir`).
package func listDirectory(_ path: String) throws(FailedCall) -> [String] {
    guard let dir = system_opendir(path) else {
        throw FailedCall(call: "opendir", device: path, errno: .current)
    }
    defer { _ = system_closedir(dir, path) }
    var names: [String] = []
    while true {
        Errno.current = Errno(rawValue: 0)
        guard let entry = system_readdir(dir, path) else {
            let errno = Errno.current
            if errno.rawValue != 0 { throw FailedCall(call: "readdir", device: path, errno: errno) }
            return names
        }
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        names.append(name)
    }
}

/// Sets `errno` and returns the C failure value -1 (for the seam functions in other files).
@inline(__always)
package func failC(_ errno: Errno) -> CInt {
    Errno.current = errno
    return -1
}
