// Files that must survive a power cut whole: written beside their final name, flushed, renamed over
// it, and the directory flushed, so that after a crash the name holds the old bytes or the new, never
// a mix. Every call goes through the seam, so a test can fail any step and see what is left.
internal import Glibc

extension FileSystem {
    /// The name a file is written under before ``replaceAtomically(_:with:permissions:)`` renames it.
    public static func temporaryName(for path: String) -> String { path + ".tmp" }

    /// Replaces the file at `path` with `bytes` so that a crash or power cut at any moment leaves either
    /// the old content or the new one: `open` of ``temporaryName(for:)`` (created with `permissions`,
    /// or truncated when a crash left it), `write` of every byte, `fsync`, `close`, `rename` over
    /// `path`, then `open`, `fsync` and `close` of the directory so the rename itself is durable.
    /// When a step before the rename fails, the temporary file is removed (`unlink`) and `path` is as
    /// it was; a failure of the directory's `fsync` is reported too, though the new content is in place.
    public static func replaceAtomically(
        _ path: String, with bytes: [UInt8], permissions: UInt32 = 0o600
    ) throws(FileError) {
        let temporary = temporaryName(for: path)
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW
        let fd: CInt
        switch retryingInterrupts("open", temporary, { system_open(temporary, flags, permissions) }) {
        case .success(let value): fd = value
        case .failure(let failure): throw FileError(failure)
        }
        do throws(FileError) {
            try writeAll(fd, bytes, path: temporary)
            try check(retryingInterrupts("fsync", temporary) { system_fsync(fd, temporary) })
        } catch {
            _ = system_close(fd, temporary)
            _ = system_unlink(temporary)
            throw error
        }
        do throws(FileError) {
            // close reports a write the kernel could not complete (NFS, a full disk): it counts.
            if system_close(fd, temporary) == -1 {
                throw FileError(FailedCall(call: "close", device: temporary, errno: .current))
            }
            try check(retryingInterrupts("rename", temporary) { system_rename(temporary, path) })
        } catch {
            _ = system_unlink(temporary)
            throw error
        }
        try syncDirectory(containing: path)
    }

    /// Creates the directory `path` with `permissions` (`mkdir`); one that exists already is fine.
    /// The parent must exist.
    public static func createDirectory(_ path: String, permissions: UInt32 = 0o700) throws(FileError) {
        switch retryingInterrupts("mkdir", path, { system_mkdir(path, permissions) }) {
        case .success: return
        case .failure(let failure) where failure.errno == .fileExists: return
        case .failure(let failure): throw FileError(failure)
        }
    }

    /// Creates the directory `path` and every missing parent, each with `permissions` (`mkdir`, from
    /// the deepest existing parent down); directories that exist already are fine.
    public static func createDirectories(_ path: String, permissions: UInt32 = 0o700) throws(FileError) {
        switch retryingInterrupts("mkdir", path, { system_mkdir(path, permissions) }) {
        case .success: return
        case .failure(let failure) where failure.errno == .fileExists: return
        case .failure(let failure) where failure.errno == .noSuchFileOrDirectory:
            let parent = directory(of: path)
            guard parent != path, parent != ".", parent != "/" else { throw FileError(failure) }
            try createDirectories(parent, permissions: permissions)
            try createDirectory(path, permissions: permissions)
        case .failure(let failure): throw FileError(failure)
        }
    }

    /// Removes the file at `path` (`unlink`); a file that is not there is fine.
    public static func removeFile(_ path: String) throws(FileError) {
        switch retryingInterrupts("unlink", path, { system_unlink(path) }) {
        case .success: return
        case .failure(let failure) where failure.errno == .noSuchFileOrDirectory: return
        case .failure(let failure): throw FileError(failure)
        }
    }

    /// The directory part of `path` (`.` when it has none).
    static func directory(of path: String) -> String {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == 0 { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// Makes a rename in the directory of `path` durable: `open` of the directory, `fsync`, `close`.
    static func syncDirectory(containing path: String) throws(FileError) {
        let directory = directory(of: path)
        let fd: CInt
        switch retryingInterrupts("open", directory, { system_open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
        case .success(let value): fd = value
        case .failure(let failure): throw FileError(failure)
        }
        defer { _ = system_close(fd, directory) }
        try check(retryingInterrupts("fsync", directory) { system_fsync(fd, directory) })
    }

    /// `write` until every byte is written (`EINTR` retried; a write of nothing counts as `EIO`).
    static func writeAll(_ fd: CInt, _ bytes: [UInt8], path: String) throws(FileError) {
        var written = 0
        try writeAll(fd, bytes, path: path, written: &written)
    }

    /// As ``writeAll(_:_:path:)``, counting in `written` the bytes written before a failure.
    static func writeAll(_ fd: CInt, _ bytes: [UInt8], path: String, written: inout Int) throws(FileError) {
        written = 0
        while written < bytes.count {
            let offset = written
            let result = bytes.withUnsafeBytes { raw in
                retryingInterrupts("write", path) {
                    system_write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, path)
                }
            }
            switch result {
            case .success(0): throw FileError(FailedCall(call: "write", device: path, errno: .ioError))
            case .success(let count): written += count
            case .failure(let failure): throw FileError(failure)
            }
        }
    }

    static func check<T>(_ result: Result<T, FailedCall>) throws(FileError) {
        if case .failure(let failure) = result { throw FileError(failure) }
    }
}
