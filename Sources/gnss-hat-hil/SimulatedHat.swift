// The outside view of the simulated hat in the guest: the gnss_gpio_sim lines (levels the
// driver drives, pulls the harness drives) and the ubx_ddc_sim receiver (its output stream,
// the bytes the host wrote, fault injection). Plain Glibc calls on sysfs and /dev/ubx-sim,
// so scenarios can check the driver under test from outside it.
import CI2C
import CLinuxShims
import Glibc

/// A failed system call in the harness, with the call's name and errno.
struct SystemCallError: Error, CustomStringConvertible {
    let call: String
    let code: Int32

    var description: String {
        "\(call): \(String(cString: strerror(code))) (errno \(code))"
    }
}

/// Small file helpers for sysfs and device nodes (open(2), read(2), write(2)).
enum SysFile {
    /// Opens `path` with `flags`, retrying on EINTR.
    static func open(_ path: String, _ flags: Int32) throws -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC)
            if fd >= 0 {
                return fd
            }
            if errno != EINTR {
                throw SystemCallError(call: "open \(path)", code: errno)
            }
        }
    }

    /// Reads everything `fd` returns until end of file or, when non-blocking, until EAGAIN.
    static func readAll(_ fd: Int32, what: String) throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                result += chunk[0..<count]
            } else if count == 0 {
                return result
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN {
                return result
            } else {
                throw SystemCallError(call: "read \(what)", code: errno)
            }
        }
    }

    /// Writes all of `bytes` to `fd`; a short write that makes no progress is an error.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], what: String) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if count > 0 {
                offset += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                throw SystemCallError(call: "write \(what)", code: count < 0 ? errno : ENOSPC)
            }
        }
    }

    /// The text of a sysfs attribute without its trailing newline.
    static func text(_ path: String) throws -> String {
        let fd = try open(path, O_RDONLY)
        defer { close(fd) }
        let bytes = try readAll(fd, what: path)
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" {
            text.removeLast()
        }
        return text
    }

    /// Writes `text` to a sysfs attribute in one write(2), as sysfs expects.
    static func write(_ text: String, to path: String) throws {
        let fd = try open(path, O_WRONLY)
        defer { close(fd) }
        try writeAll(fd, Array(text.utf8), what: path)
    }

    /// The names in a directory (readdir(3)), without "." and "..".
    static func entries(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            throw SystemCallError(call: "opendir \(path)", code: errno)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." {
                names.append(name)
            }
        }
        return names.sorted()
    }
}

/// The gnss_gpio_sim bank: line levels as the outside world sees them, and pulls to drive inputs.
struct SimulatedLines {
    static let device = "/sys/devices/platform/gnss-gpio-sim"
    static let namesParameter = "/sys/module/gnss_gpio_sim/parameters/names"

    /// Line names in offset order, as the module was loaded with.
    let names: [String]

    init() throws {
        names = try SysFile.text(Self.namesParameter).split(separator: ",", omittingEmptySubsequences: false)
            .map(String.init)
    }

    /// The character device of the simulated chip, e.g. `/dev/gpiochip0`.
    func chipPath() throws -> String {
        guard let chip = try SysFile.entries(Self.device).first(where: { $0.hasPrefix("gpiochip") }) else {
            throw ScenarioFailure("no gpiochip under \(Self.device)")
        }
        return "/dev/" + chip
    }

    /// The offset of the line called `name`.
    func offset(of name: String) throws -> Int {
        guard let offset = names.firstIndex(of: name) else {
            throw ScenarioFailure("no simulated line named \(name) (lines: \(names.joined(separator: ",")))")
        }
        return offset
    }

    /// The physical level of line `name`: what a driver drives, else the pull.
    func level(of name: String) throws -> Bool {
        try SysFile.text("\(Self.device)/sim_gpio\(try offset(of: name))/value") == "1"
    }

    /// Drives input line `name` from outside by its pull; a change raises an edge event.
    func setPull(of name: String, high: Bool) throws {
        try SysFile.write(high ? "pull-up" : "pull-down", to: "\(Self.device)/sim_gpio\(try offset(of: name))/pull")
    }

    /// A watch on line `name`'s level, woken by every change the module notifies.
    func watch(_ name: String) throws -> LevelWatch {
        try LevelWatch(path: "\(Self.device)/sim_gpio\(try offset(of: name))/value")
    }

    /// Waits until line `name` is at `level`; returns false when `timeoutMilliseconds` pass
    /// between two notifications first (a bound on a hang, not a timing check).
    func waitForLevel(of name: String, _ level: Bool, timeoutMilliseconds: Int32) throws -> Bool {
        let watch = try watch(name)
        while try watch.level() != level {
            guard try watch.waitForChange(timeoutMilliseconds: timeoutMilliseconds) else {
                return false
            }
        }
        return true
    }
}

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
            throw SystemCallError(call: "pread \(path)", code: count < 0 ? errno : EIO)
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
                throw SystemCallError(call: "poll \(path)", code: errno)
            }
        }
    }
}

/// The ubx_ddc_sim receiver: feed its output, read what the host sent, inject faults.
struct SimulatedDDC {
    static let control = "/dev/ubx-sim"
    static let attributes = "/sys/class/misc/ubx-sim"
    static let adapterName = "ubx-ddc-sim"
    static let address: UInt16 = 0x42

    /// The i2c-dev node of the simulated adapter, found by its name, e.g. `/dev/i2c-0`.
    static func busPath() throws -> String {
        let root = "/sys/class/i2c-adapter"
        for entry in try SysFile.entries(root) where try SysFile.text("\(root)/\(entry)/name") == adapterName {
            return "/dev/" + entry
        }
        throw ScenarioFailure("no I2C adapter named \(adapterName)")
    }

    /// Empties both buffers and clears faults and counters.
    func reset() throws {
        try SysFile.write("1", to: "\(Self.attributes)/reset")
    }

    /// Queues receiver output for the host's reads of register 0xFF.
    func feed(_ bytes: [UInt8]) throws {
        let fd = try SysFile.open(Self.control, O_WRONLY)
        defer { close(fd) }
        try SysFile.writeAll(fd, bytes, what: Self.control)
    }

    /// Everything the host has written to the receiver since the last call.
    func hostBytes() throws -> [UInt8] {
        let fd = try SysFile.open(Self.control, O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        return try SysFile.readAll(fd, what: Self.control)
    }

    /// Whether bytes from the host wait to be read, by poll(2) on /dev/ubx-sim (POLLIN).
    func hostBytesWaiting(timeoutMilliseconds: Int32) throws -> Bool {
        let fd = try SysFile.open(Self.control, O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, timeoutMilliseconds)
            if ready >= 0 {
                return ready > 0 && descriptor.revents & Int16(POLLIN) != 0
            }
            if errno != EINTR {
                throw SystemCallError(call: "poll \(Self.control)", code: errno)
            }
        }
    }

    /// Makes the next `transfers` I2C transfers fail as not acknowledged.
    func nakNext(_ transfers: Int) throws {
        try SysFile.write(String(transfers), to: "\(Self.attributes)/nak_next")
    }

    /// Queues values the next count reads report instead of the real count ("bit15" sets bit 15).
    func queueBogusCounts(_ values: [String]) throws {
        try SysFile.write(values.joined(separator: " "), to: "\(Self.attributes)/bogus_counts")
    }

    /// Inserts one 0xFF into the stream after `bytes` more real bytes.
    func insertFF(after bytes: Int) throws {
        try SysFile.write(String(bytes), to: "\(Self.attributes)/ff_after")
    }

    /// The module's counters (transfers, naks, stream_bytes, host_bytes, pending, ...).
    func stats() throws -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        for line in try SysFile.text("\(Self.attributes)/stats").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = UInt64(parts[1]) {
                result[String(parts[0])] = value
            }
        }
        return result
    }
}

/// A raw i2c-dev handle that issues combined transfers with the I2C_RDWR ioctl.
struct RawI2C: ~Copyable {
    let fd: Int32

    init(path: String) throws {
        fd = try SysFile.open(path, O_RDWR)
    }

    deinit {
        close(fd)
    }

    /// Writes `write` (if any) then, after a repeated start, reads `readCount` bytes from `address`.
    func transfer(address: UInt16, write: [UInt8], readCount: Int) throws -> [UInt8] {
        var output = write
        var input = [UInt8](repeating: 0, count: readCount)
        let result = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeMutableBufferPointer { inp in
                var messages: [i2c_msg] = []
                if !out.isEmpty {
                    messages.append(i2c_msg(addr: address, flags: 0, len: UInt16(out.count), buf: out.baseAddress))
                }
                if readCount > 0 {
                    messages.append(i2c_msg(addr: address, flags: UInt16(I2C_M_RD), len: UInt16(readCount),
                                            buf: inp.baseAddress))
                }
                return messages.withUnsafeMutableBufferPointer { list in
                    var request = i2c_rdwr_ioctl_data(msgs: list.baseAddress, nmsgs: UInt32(list.count))
                    return cshim_ioctl_ptr(fd, UInt(I2C_RDWR), &request)
                }
            }
        }
        if result < 0 {
            throw SystemCallError(call: "ioctl I2C_RDWR", code: errno)
        }
        return input
    }
}
