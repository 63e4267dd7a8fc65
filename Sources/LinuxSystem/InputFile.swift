// Plain files and the process's standard streams, for the command line: a capture read in
// chunks, text written whole, the exit status. Kept here so the executable makes no C call.
internal import CLinuxShims
internal import Glibc

/// Why a file could not be read.
public struct FileError: HardwareFault, Equatable {
    /// The call, the path and the errno.
    public let failure: FailedCall

    public init(_ failure: FailedCall) {
        self.failure = failure
    }

    public var failedCall: FailedCall? { failure }
    public var deviceIsGone: Bool { false }
    public var description: String { failure.description }
}

/// A file (or standard input) read from start to end in chunks (`open`, `read`, `close`).
public final class InputFile: Sendable {
    /// The path, or `-` for standard input.
    public let path: String
    private let descriptor: Lock<CInt>
    private let owned: Bool

    /// Opens `path` for reading (`open` with `O_RDONLY | O_CLOEXEC`); `-` is standard input.
    public init(path: String) throws(FileError) {
        self.path = path
        if path == "-" {
            descriptor = Lock(0)
            owned = false
            return
        }
        switch retryingInterrupts("open", path, { system_open(path, O_RDONLY | O_CLOEXEC) }) {
        case .success(let fd): descriptor = Lock(fd)
        case .failure(let failure): throw FileError(failure)
        }
        owned = true
    }

    deinit { close() }

    /// Reads up to `buffer.count` bytes into `buffer` (`read`, `EINTR` retried); returns how many,
    /// 0 at the end of the file.
    public func read(into buffer: inout [UInt8]) throws(FileError) -> Int {
        let path = self.path
        return try descriptor.withLock { fd throws(FileError) -> Int in
            guard fd >= 0 else { throw FileError(FailedCall(call: "read", device: path, errno: nil)) }
            let result = buffer.withUnsafeMutableBytes { raw in
                retryingInterrupts("read", path) { system_read(fd, raw.baseAddress, raw.count, path) }
            }
            switch result {
            case .success(let count): return count
            case .failure(let failure): throw FileError(failure)
            }
        }
    }

    /// Closes the file (`close`; standard input stays open). Closing twice does nothing.
    public func close() {
        let path = self.path
        let owned = self.owned
        descriptor.withLock { fd in
            if fd >= 0 && owned { _ = system_close(fd, path) }
            fd = -1
        }
    }
}

/// Standard output and standard error.
public enum StandardStream: Sendable {
    case output
    case error

    var fd: CInt { self == .output ? 1 : 2 }
    var name: String { self == .output ? "standard output" : "standard error" }

    // One writer at a time, so lines from several threads do not interleave.
    private static let lock = Lock(())

    /// Writes all of `text` (`write`, `EINTR` retried). A closed reader (`EPIPE`) or any other
    /// failure drops the rest: there is nowhere left to report it.
    public func write(_ text: String) {
        write(Array(text.utf8))
    }

    /// Writes all of `bytes` (`write`, `EINTR` retried).
    public func write(_ bytes: [UInt8]) {
        let fd = self.fd
        let name = self.name
        Self.lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let result = retryingInterrupts("write", name) {
                        system_write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, name)
                    }
                    guard case .success(let count) = result, count > 0 else { return }
                    offset += count
                }
            }
        }
    }

    /// Whether the stream is a terminal (`isatty`).
    public var isTerminal: Bool { isatty(fd) == 1 }
}

/// The process itself.
public enum ProcessExit {
    /// Ends the process with `status` (`exit`: buffered output is flushed).
    public static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }

    /// Ignores `SIGPIPE`, so a closed reader (`gnss-hat decode x | head`) ends a write with
    /// `EPIPE` instead of killing the process (`signal`).
    public static func ignoreBrokenPipe() {
        _ = signal(SIGPIPE, SIG_IGN)
    }
}
