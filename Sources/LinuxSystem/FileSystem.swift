// The few file-system and environment questions the library and the command ask (board files,
// device nodes, $GNSSHAT_BOARDS), answered with plain libc calls so that nothing shipped needs
// Foundation's FileManager or ProcessInfo (they would add megabytes to the static binary).
internal import Glibc

public enum FileSystem {
    /// The value of environment variable `name` (`getenv`), or nil when it is not set.
    public static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// Whether the process runs as root (`geteuid() == 0`).
    public static var isSuperuser: Bool { geteuid() == 0 }

    /// Whether something exists at `path` (`access(F_OK)`; a dangling link does not count).
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// The whole content of the file at `path` (`open`, `read` until the end, `close`), or its first
    /// `limit` bytes when it is longer.
    public static func contents(of path: String, upTo limit: Int = .max) throws(FileError) -> [UInt8] {
        let file = try InputFile(path: path)
        defer { file.close() }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while content.count < limit {
            let count = try file.read(into: &chunk)
            if count == 0 { return content }
            content += chunk[..<min(count, limit - content.count)]
        }
        return content
    }

    /// The names in `directory` but `.` and `..`, sorted (`opendir`, `readdir`, `closedir`).
    public static func entries(of directory: String) throws(FileError) -> [String] {
        do {
            return try listDirectory(directory).filter { $0 != "." && $0 != ".." }.sorted()
        } catch {
            throw FileError(error)
        }
    }

    /// Where the symbolic link at `path` points (`readlink`), or nil when it is not a link.
    public static func linkDestination(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBufferPointer { raw -> Int in
            guard let base = raw.baseAddress else { return -1 }
            return readlink(path, base, raw.count)
        }
        guard count > 0, count < buffer.count else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
