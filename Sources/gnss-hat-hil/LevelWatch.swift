// A watch on one gnss_gpio_sim line's sysfs value file (pread(2), poll(2) with POLLPRI).
// Glibc: `pread` and `poll(POLLPRI)` on a gpio-sim sysfs file, the hardware's side the rig plays.
import Glibc
import LinuxSystem

/// An open sysfs `value` file of one simulated line. sysfs arms the change notification with
/// each read from offset 0; poll(2) with POLLPRI then wakes on the next change.
struct LevelWatch: ~Copyable {
    let path: String
    let fd: Int32

    init(path: String) throws {
        let fd = try SysFile.open(path, O_RDONLY)
        do {
            _ = try Self.readLevel(fd, path: path)
        } catch {
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// The current level (pread(2) at offset 0, which also re-arms the notification).
    func level() throws -> Bool {
        try Self.readLevel(fd, path: path)
    }

    private static func readLevel(_ fd: Int32, path: String) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw SystemError(FailedCall(call: "pread", device: path, errno: count < 0 ? .current : .ioError))
        }
        return buffer[0] == UInt8(ascii: "1")
    }

    /// Whether a change was notified since the last `level()`, waiting up to `timeoutMilliseconds`.
    func waitForChange(timeoutMilliseconds: Int32) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLPRI | POLLERR), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, timeoutMilliseconds)
            if ready >= 0 {
                return ready > 0
            }
            if errno != EINTR {
                throw SystemError.ofLastCall("poll", on: path)
            }
        }
    }
}
