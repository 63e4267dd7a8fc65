// A file that grows by appends and must survive a power cut (the MQTT bridge's journal): one writer,
// held with an exclusive `flock`, read whole when opened, made durable on request, cut back or
// replaced whole atomically. Every call goes through the seam; a test's mock in force when the file
// is opened stays with it, whatever thread appends later.
internal import Glibc

/// An append-only file held with an exclusive lock while open (`flock(LOCK_EX | LOCK_NB)`): a second
/// opener, in this process or another, is refused with `EWOULDBLOCK` (``Errno/wouldBlock``).
///
/// Appends are `write`s on an `O_APPEND` descriptor, `EINTR` retried; one that fails part way has what
/// it wrote cut off again (`ftruncate`), so the file never ends in half a record the caller was told
/// failed. ``synchronize()`` is `fdatasync`; ``replace(with:)`` writes a temporary file beside it,
/// `fsync`s it, `rename`s it over the file and `fsync`s the directory, holding the lock throughout.
/// One owner at a time (the caller orders the calls).
public final class AppendFile {
    public let path: String
    private var fd: CInt
    /// The file's length as far as this object knows: what it found at the open, plus what it wrote.
    public private(set) var length: Int
    /// The seam's mock in force at the open (tests only), installed again around every later call.
    private let seam: SeamMock?

    /// Opens `path` for reading and appending (`open` with `O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC`,
    /// creating it with `permissions`), locks it (`flock`) and finds its length (`lseek`). The directory
    /// must exist. A file another holder has locked is refused with `EWOULDBLOCK` from `flock`.
    public init(path: String, permissions: UInt32 = 0o600) throws(FileError) {
        self.path = path
        let seam = SeamMock.inForce
        self.seam = seam
        (fd, length) = try withSeamMock(seam) { () throws(FileError) -> (CInt, Int) in
            let fd = try Self.openLocked(path, permissions: permissions)
            switch retryingInterrupts("lseek", path, { system_lseek(fd, 0, SEEK_END, path) }) {
            case .success(let end): return (fd, Int(end))
            case .failure(let failure):
                _ = system_close(fd, path)
                throw FileError(failure)
            }
        }
    }

    deinit {
        close()
    }

    /// Opens and locks `path`; closes it again when the lock is refused.
    private static func openLocked(_ path: String, permissions: UInt32) throws(FileError) -> CInt {
        let flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC
        let fd = try FileSystem.value(retryingInterrupts("open", path) { system_open(path, flags, permissions) })
        if case .failure(let failure) = retryingInterrupts("flock", path, {
            system_flock(fd, LOCK_EX | LOCK_NB, path)
        }) {
            _ = system_close(fd, path)
            throw FileError(failure)
        }
        return fd
    }

    /// The whole file, read from its start (`pread`, `EINTR` retried).
    public func readAll() throws(FileError) -> [UInt8] {
        try withSeamMock(seam) { () throws(FileError) -> [UInt8] in
            let fd = try descriptor(for: "pread")
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let offset = Int64(bytes.count)
                let count = try FileSystem.value(chunk.withUnsafeMutableBytes { raw in
                    retryingInterrupts("pread", path) { system_pread(fd, raw.baseAddress, raw.count, offset, path) }
                })
                if count == 0 { return bytes }
                bytes += chunk[..<count]
            }
        }
    }

    /// Writes `bytes` at the end (`write` until all are written, `EINTR` retried). When a write fails
    /// after part of them went in, the file is cut back to its length before (`ftruncate`); if even
    /// that fails, ``length`` counts the part, which stays.
    public func append(_ bytes: [UInt8]) throws(FileError) {
        try withSeamMock(seam) { () throws(FileError) in
            let fd = try descriptor(for: "write")
            var written = 0
            do throws(FileError) {
                try FileSystem.writeAll(fd, bytes, path: path, written: &written)
                length += written
            } catch {
                if written > 0 {
                    let before = Int64(length)
                    let cut = retryingInterrupts("ftruncate", path) { system_ftruncate(fd, before, path) }
                    if case .failure = cut { length += written }
                }
                throw error
            }
        }
    }

    /// Makes everything written so far survive a power cut (`fdatasync`, `EINTR` retried).
    public func synchronize() throws(FileError) {
        try withSeamMock(seam) { () throws(FileError) in
            let fd = try descriptor(for: "fdatasync")
            try FileSystem.check(retryingInterrupts("fdatasync", path) { system_fdatasync(fd, path) })
        }
    }

    /// Cuts the file to its first `length` bytes (`ftruncate`, `EINTR` retried; not synchronized).
    public func truncate(to length: Int) throws(FileError) {
        try withSeamMock(seam) { () throws(FileError) in
            let fd = try descriptor(for: "ftruncate")
            let target = Int64(length)
            try FileSystem.check(retryingInterrupts("ftruncate", path) { system_ftruncate(fd, target, path) })
            self.length = length
        }
    }

    /// Replaces the whole file with `bytes` so that a power cut at any moment leaves the old content or
    /// the new: ``FileSystem/temporaryName(for:)`` is removed if a crash left it (`unlink`), opened and
    /// locked, written, `fsync`ed and `rename`d over the file, then the directory is `fsync`ed. The file
    /// stays locked throughout (the new one before the old one goes). When a step before the rename
    /// fails, the temporary is removed and the file is as it was.
    public func replace(with bytes: [UInt8]) throws(FileError) {
        try withSeamMock(seam) { () throws(FileError) in
            let oldFD = try descriptor(for: "rename")
            let temporary = FileSystem.temporaryName(for: path)
            _ = system_unlink(temporary)
            let newFD = try Self.openLocked(temporary, permissions: 0o600)
            do throws(FileError) {
                try FileSystem.writeAll(newFD, bytes, path: temporary)
                try FileSystem.check(retryingInterrupts("fsync", temporary) { system_fsync(newFD, temporary) })
                try FileSystem.check(retryingInterrupts("rename", temporary) { system_rename(temporary, path) })
            } catch {
                _ = system_close(newFD, temporary)
                _ = system_unlink(temporary)
                throw error
            }
            _ = system_close(oldFD, path)
            fd = newFD
            length = bytes.count
            // The new content is in place; a directory that cannot be flushed is still reported.
            try FileSystem.syncDirectory(containing: path)
        }
    }

    /// The open descriptor; a closed file is an error naming `call` (never a call on a closed descriptor,
    /// which the seam would take for a bug).
    private func descriptor(for call: String) throws(FileError) -> CInt {
        guard fd >= 0 else { throw FileError(FailedCall(call: call, device: path + " (closed)", errno: nil)) }
        return fd
    }

    /// Closes the file, which drops its lock (`close`). Closing twice does nothing.
    public func close() {
        guard fd >= 0 else { return }
        withSeamMock(seam) { _ = system_close(fd, path) }
        fd = -1
    }
}

extension FileSystem {
    /// The value of a call that went through the seam, or its failure as a `FileError`.
    static func value<T>(_ result: Result<T, FailedCall>) throws(FileError) -> T {
        switch result {
        case .success(let value): return value
        case .failure(let failure): throw FileError(failure)
        }
    }
}
