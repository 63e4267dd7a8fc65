// The ubx_ddc_sim module from outside the driver under test: its output stream, the bytes the
// host wrote, fault injection and counters (/dev/ubx-sim and its sysfs attributes).
// Glibc: the rig plays the receiver's side of the DDC bus (`open`, `poll` of /dev/ubx-sim), beside
// the code under test and not through its seam.
import Glibc
import LinuxSystem

/// The ubx_ddc_sim kernel module (a u-blox receiver on a simulated I2C adapter): feed its output,
/// read what the host sent, inject faults.
struct DDCSimModule {
    static let control = "/dev/ubx-sim"
    static let attributes = "/sys/class/misc/ubx-sim"
    static let adapterName = "ubx-ddc-sim"
    static let address: UInt16 = 0x42

    /// The i2c-dev node of the simulated adapter, found by its name, e.g. `/dev/i2c-0`.
    static func busPath() throws -> String {
        let root = "/sys/class/i2c-adapter"
        for entry in try FileSystem.entries(of: root) where try SysFile.text("\(root)/\(entry)/name") == adapterName {
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
                throw SystemError.ofLastCall("poll", on: Self.control)
            }
        }
    }

    /// Makes the next `transfers` I2C transfers fail as not acknowledged.
    func nakNext(_ transfers: Int) throws {
        try SysFile.write(String(transfers), to: "\(Self.attributes)/nak_next")
    }

    /// The not-acknowledged transfers still to come (`nak_next`).
    func naksPending() throws -> Int {
        guard let count = Int(try SysFile.text("\(Self.attributes)/nak_next")) else {
            throw ScenarioFailure("\(Self.attributes)/nak_next is not a number")
        }
        return count
    }

    /// The error a NAK returns from now on (`nak_errno`): EREMOTEIO (the default), ENXIO, EIO,
    /// ETIMEDOUT or EAGAIN.
    func setNAKErrno(_ errno: Errno) throws {
        try SysFile.write(String(errno.rawValue), to: "\(Self.attributes)/nak_errno")
    }

    /// Queues values the next count reads report instead of the real count ("bit15" sets bit 15).
    func queueBogusCounts(_ values: [String]) throws {
        try SysFile.write(values.joined(separator: " "), to: "\(Self.attributes)/bogus_counts")
    }

    /// Inserts one 0xFF into the stream after `bytes` more real bytes.
    func insertFF(after bytes: Int) throws {
        try SysFile.write(String(bytes), to: "\(Self.attributes)/ff_after")
    }

    /// The module's counters (transfers, naks, stream_bytes, host_bytes, unplugged, pending, ...).
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
