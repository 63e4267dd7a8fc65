// Small file helpers for the harness's sysfs attributes and device nodes (open(2), read(2),
// write(2)): sysfs wants one write(2) per value, and /dev/ubx-sim is read until EAGAIN. Whole-file
// reads and directory listings are LinuxSystem's FileSystem; failures are its SystemError.
// Glibc: the rig's own sysfs and device-node calls (the hardware's side), not the product's seam.
import Glibc
import LinuxSystem

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
                throw SystemError.ofLastCall("open", on: path)
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
                throw SystemError.ofLastCall("read", on: what)
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
                let code = count < 0 ? Errno.current : Errno(rawValue: ENOSPC)
                throw SystemError(FailedCall(call: "write", device: what, errno: code))
            }
        }
    }

    /// The text of a sysfs attribute without its trailing newline (LinuxSystem's `FileSystem.contents`).
    static func text(_ path: String) throws -> String {
        var text = String(decoding: try FileSystem.contents(of: path), as: UTF8.self)
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
}

extension SystemError {
    /// The failure of `call` on `device`, with the calling thread's errno (read right after the call).
    static func ofLastCall(_ call: String, on device: String) -> SystemError {
        SystemError(FailedCall(call: call, device: device, errno: .current))
    }
}
