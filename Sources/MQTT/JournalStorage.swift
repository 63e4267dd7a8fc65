// The journal's one file, behind a small seam: the journal asks for whole-file reads, appends,
// syncs, truncation and an atomic replacement, and a test can stand in a storage that fails or
// loses what was not synced. The file implementation calls Glibc directly for now (LinuxSystem's
// descriptors may take its place).
internal import Glibc
public import LinuxSystem

/// Why the journal could not read or write its file.
public enum JournalError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A file call failed: the call, the path and the error number.
    case io(call: String, path: String, Errno)
    /// Another process holds the journal (`flock`): two writers would interleave their records.
    case locked(path: String)
    /// A message larger than a record may be (1 MiB).
    case recordTooLarge(bytes: Int)

    public var description: String {
        switch self {
        case let .io(call, path, errno): "journal: \(call) \(path): \(errno)"
        case let .locked(path): "journal: \(path) is in use by another process"
        case let .recordTooLarge(bytes): "journal: a message of \(bytes) bytes is larger than a record may be (1 MiB)"
        }
    }
}

/// Where a ``Journal`` keeps its bytes: one append-only file.
public protocol JournalStorage: AnyObject {
    /// The whole file (empty when it does not exist yet).
    func readAll() throws(JournalError) -> [UInt8]
    /// Appends `bytes` at the end, in one write.
    func append(_ bytes: [UInt8]) throws(JournalError)
    /// Makes everything appended so far survive a power loss.
    func sync() throws(JournalError)
    /// Cuts the file to its first `length` bytes, durably.
    func truncate(to length: Int) throws(JournalError)
    /// Replaces the whole file with `bytes` atomically: after a power loss it holds either the old
    /// bytes or the new, never a mix.
    func replace(with bytes: [UInt8]) throws(JournalError)
}

/// The journal's file `journal` in a state directory, held with an exclusive `flock` while open.
///
/// Appends are `write` on an `O_APPEND` descriptor; ``sync()`` is `fdatasync`; ``replace(with:)``
/// writes `journal.new`, `fsync`s it, `rename`s it over `journal` and `fsync`s the directory.
public final class FileJournalStorage: JournalStorage {
    public let directory: String
    public let path: String
    private var fd: CInt

    /// Opens (creating the directory and its missing parents, mode 0700, and the file, 0600, as needed)
    /// and locks the journal.
    public init(directory: String) throws(JournalError) {
        self.directory = directory
        path = directory + "/journal"
        try Self.makeDirectory(directory)
        fd = try Self.openLocked(path)
    }

    /// Makes `directory` and any missing parent (`mkdir`, mode 0700: the journal is nobody else's).
    private static func makeDirectory(_ directory: String) throws(JournalError) {
        guard mkdir(directory, 0o700) != 0 else { return }
        let number = errno
        if number == EEXIST { return }
        guard number == ENOENT, let slash = directory.lastIndex(of: "/"), slash != directory.startIndex else {
            throw .io(call: "mkdir", path: directory, Errno(rawValue: number))
        }
        try makeDirectory(String(directory[..<slash]))
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .io(call: "mkdir", path: directory, Errno(rawValue: errno))
        }
    }

    deinit {
        close(fd)
    }

    private static func openLocked(_ path: String) throws(JournalError) -> CInt {
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(call: "open", path: path, Errno(rawValue: errno)) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            close(fd)
            if number == EWOULDBLOCK { throw .locked(path: path) }
            throw .io(call: "flock", path: path, Errno(rawValue: number))
        }
        return fd
    }

    public func readAll() throws(JournalError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw .io(call: "pread", path: path, Errno(rawValue: errno)) }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            offset += off_t(count)
        }
    }

    public func append(_ bytes: [UInt8]) throws(JournalError) {
        try writeAll(fd, bytes, path: path)
    }

    public func sync() throws(JournalError) {
        guard fdatasync(fd) == 0 else { throw .io(call: "fdatasync", path: path, Errno(rawValue: errno)) }
    }

    public func truncate(to length: Int) throws(JournalError) {
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw .io(call: "ftruncate", path: path, Errno(rawValue: errno))
        }
        try sync()
    }

    public func replace(with bytes: [UInt8]) throws(JournalError) {
        let temporary = path + ".new"
        unlink(temporary)
        let newFD = try Self.openLocked(temporary)
        do throws(JournalError) {
            try writeAll(newFD, bytes, path: temporary)
            guard fsync(newFD) == 0 else { throw JournalError.io(call: "fsync", path: temporary, Errno(rawValue: errno)) }
            guard rename(temporary, path) == 0 else {
                throw JournalError.io(call: "rename", path: temporary, Errno(rawValue: errno))
            }
        } catch {
            close(newFD)
            unlink(temporary)
            throw error
        }
        // The rename is durable once the directory is.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
        close(fd)
        fd = newFD
    }

    private func writeAll(_ fd: CInt, _ bytes: [UInt8], path: String) throws(JournalError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .io(call: "write", path: path, Errno(rawValue: count < 0 ? errno : EIO)) }
            offset += count
        }
    }
}
