// The journal's one file, behind a small seam: the journal asks for whole-file reads, appends,
// syncs, truncation and an atomic replacement, and a test can stand in a storage that fails or
// loses what was not synced. The file itself is LinuxSystem's `AppendFile`: every call goes through
// its syscall seam, where tests inject `EIO`, `ENOSPC` and `EINTR`.
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
/// writes `journal.tmp`, `fsync`s it, `rename`s it over `journal` and `fsync`s the directory
/// (LinuxSystem's ``AppendFile``).
public final class FileJournalStorage: JournalStorage {
    public let directory: String
    public let path: String
    private let file: AppendFile

    /// Opens (creating the directory and its missing parents, mode 0700, and the file, 0600, as needed)
    /// and locks the journal.
    public init(directory: String) throws(JournalError) {
        self.directory = directory
        path = directory + "/journal"
        do throws(FileError) {
            try FileSystem.createDirectories(directory, permissions: 0o700)
            file = try AppendFile(path: path, permissions: 0o600)
        } catch {
            throw JournalError(error, path: directory + "/journal")
        }
    }

    public func readAll() throws(JournalError) -> [UInt8] {
        try journaling { () throws(FileError) in try file.readAll() }
    }

    public func append(_ bytes: [UInt8]) throws(JournalError) {
        try journaling { () throws(FileError) in try file.append(bytes) }
    }

    public func sync() throws(JournalError) {
        try journaling { () throws(FileError) in try file.synchronize() }
    }

    public func truncate(to length: Int) throws(JournalError) {
        try journaling { () throws(FileError) in
            try file.truncate(to: length)
            try file.synchronize()
        }
    }

    public func replace(with bytes: [UInt8]) throws(JournalError) {
        try journaling { () throws(FileError) in try file.replace(with: bytes) }
    }

    private func journaling<T>(_ body: () throws(FileError) -> T) throws(JournalError) -> T {
        do throws(FileError) {
            return try body()
        } catch {
            throw JournalError(error, path: path)
        }
    }
}

extension JournalError {
    /// The journal's error for a failed file call: ``locked(path:)`` when the lock is another's
    /// (`flock` with `EWOULDBLOCK`), else ``io(call:path:_:)``.
    init(_ error: FileError, path: String) {
        let failure = error.failure
        if failure.call == "flock" && failure.errno == .wouldBlock {
            self = .locked(path: path)
        } else {
            self = .io(call: failure.call, path: failure.device, failure.errno ?? .ioError)
        }
    }
}
