// AppendFile against a real temporary directory: appends, the lock, the calls in order through the seam,
// EINTR retried at every call, EIO and ENOSPC reported as typed errors that leave the file as it was,
// and a mock that follows the file to another thread.
import Foundation
import GNSSHatTesting  // onThread
import LinuxSystem
import Testing

@Suite("Append-only files")
struct AppendFileTests {
    static func makeDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-append-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The failed call and errno of a `FileError`, as text.
    static func failure(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch let error as FileError {
            return "\(error.failure.call) \(error.failure.errno?.name ?? "-")"
        } catch {
            return "\(error)"
        }
    }

    @Test("appends are read back whole, the lock refuses a second opener, a reopen finds the length")
    func appendsAndLock() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal"
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        do {
            let file = try AppendFile(path: path)
            #expect(try file.readAll() == [] && file.length == 0)
            try file.append([1, 2, 3])
            try file.append(big)
            try file.synchronize()
            #expect(file.length == 3 + big.count)
            #expect(try file.readAll() == [1, 2, 3] + big)
            #expect(Self.failure { _ = try AppendFile(path: path) } == "flock EAGAIN")
            try file.truncate(to: 2)
            #expect(try file.readAll() == [1, 2] && file.length == 2)
            file.close()
            #expect(Self.failure { try file.append([9]) } == "write -")
        }
        let reopened = try AppendFile(path: path)
        #expect(reopened.length == 2)
        try reopened.append([4])
        #expect(try reopened.readAll() == [1, 2, 4])
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("every call goes through the seam, in order")
    func calls() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal"
        let temporary = FileSystem.temporaryName(for: path)
        let mock = SeamMock()
        let file = try SeamMock.$current.withValue(mock) { try AppendFile(path: path) }
        try file.append([1])
        _ = try file.readAll()
        try file.synchronize()
        try file.truncate(to: 0)
        try file.replace(with: [5, 6])
        file.close()
        #expect(
            mock.records.map(\.description) == [
                "open \(path)", "flock \(path)", "lseek \(path)", "write \(path)", "pread \(path)", "pread \(path)",
                "fdatasync \(path)", "ftruncate \(path)", "unlink \(temporary)", "open \(temporary)",
                "flock \(temporary)", "write \(temporary)", "fsync \(temporary)", "rename \(temporary)",
                "close \(path)", "open \(directory)", "fsync \(directory)", "close \(directory)", "close \(path)",
            ])
        #expect(try FileSystem.contents(of: path) == [5, 6])
        #expect(try FileSystem.entries(of: directory) == ["journal"])
    }

    @Test("EINTR is retried at every call, twice each")
    func interrupts() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal"
        let mock = SeamMock()
        let calls: [SystemCall] = [
            "open", "flock", "lseek", "pread", "write", "fdatasync", "ftruncate", "fsync", "rename", "mkdir",
        ]
        for call in calls { mock.fail(call, with: .interrupted, times: 2) }
        let file = try SeamMock.$current.withValue(mock) { () throws -> AppendFile in
            try FileSystem.createDirectories(directory + "/a/b")
            return try AppendFile(path: path)
        }
        try file.append([1, 2])
        #expect(try file.readAll() == [1, 2])
        try file.synchronize()
        try file.truncate(to: 1)
        try file.replace(with: [3])
        #expect(try file.readAll() == [3])
        #expect(mock.pendingFailures == 0)
        #expect(FileSystem.exists(directory + "/a/b"))
    }

    @Test(
        "EIO and ENOSPC on write and fdatasync are typed errors naming the call; the file is as it was",
        arguments: [("write", Errno.ioError), ("write", .noSpaceLeft), ("fdatasync", .ioError),
                    ("fdatasync", .noSpaceLeft)] as [(SystemCall, Errno)])
    func failures(call: SystemCall, errno: Errno) throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mock = SeamMock()
        let file = try SeamMock.$current.withValue(mock) { try AppendFile(path: directory + "/journal") }
        try file.append([1, 1])
        mock.fail(call, with: errno)
        #expect(Self.failure {
            try file.append([2, 2])
            try file.synchronize()
        } == "\(call) \(errno.name)")
        let expected: [UInt8] = call == "write" ? [1, 1] : [1, 1, 2, 2]
        #expect(try file.readAll() == expected && file.length == expected.count)
        // The next calls work again.
        try file.append([3])
        try file.synchronize()
        #expect(try file.readAll() == expected + [3])
    }

    @Test("a write cut short by a full disk is cut off again: the file never ends in part of an append")
    func shortWriteThenFull() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let armed = Lock<SeamMock?>(nil)
        // The first write takes 5 bytes; the disk is full for the one that follows.
        let mock = SeamMock(write: { _, _ in
            armed.withLock { mock in
                mock?.fail("write", with: .noSpaceLeft)
                mock = nil
            }
            return 5
        })
        let file = try SeamMock.$current.withValue(mock) { try AppendFile(path: directory + "/journal") }
        armed.withLock { $0 = mock }
        #expect(Self.failure { try file.append(Array(repeating: 7, count: 12)) } == "write ENOSPC")
        #expect(mock.calls.suffix(3) == ["write", "write", "ftruncate"])
        #expect(try file.readAll() == [] && file.length == 0)
    }

    @Test("a replace that fails before its rename leaves the file and no temporary", arguments: [
        "write", "fsync", "rename",
    ] as [SystemCall])
    func replaceFailure(call: SystemCall) throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mock = SeamMock()
        let file = try SeamMock.$current.withValue(mock) { try AppendFile(path: directory + "/journal") }
        try file.append([1, 2, 3])
        mock.fail(call, with: .noSpaceLeft)
        #expect(Self.failure { try file.replace(with: [9]) } == "\(call) ENOSPC")
        #expect(try file.readAll() == [1, 2, 3])
        #expect(try FileSystem.entries(of: directory) == ["journal"])
        try file.append([4])
        #expect(try FileSystem.contents(of: directory + "/journal") == [1, 2, 3, 4])
    }

    @Test("a file opened under a mock keeps it on another thread, where the task-local does not reach")
    func mockFollowsTheFile() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mock = SeamMock()
        let file = try SeamMock.$current.withValue(mock) { try AppendFile(path: directory + "/journal") }
        mock.fail("write", with: .ioError)
        let box = UncheckedBox(file)
        let outcome = try onThread({ Self.failure { try box.value.append([1]) } }, meanwhile: {})
        #expect(outcome == "write EIO")
        #expect(mock.pendingFailures == 0 && mock.count("write") == 1)
    }
}

/// Hands a non-Sendable object to one other thread, which alone uses it until joined.
private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

@Suite("Directories, bounded reads and the host name")
struct FileSystemAdditionsTests {
    @Test("createDirectories makes every missing parent; existing ones are fine; a file in the way is not")
    func directories() throws {
        let directory = try AppendFileTests.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileSystem.createDirectories(directory + "/a/b/c", permissions: 0o700)
        try FileSystem.createDirectories(directory + "/a/b/c")
        #expect(try FileSystem.entries(of: directory + "/a/b") == ["c"])
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/a/b")
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        try FileSystem.replaceAtomically(directory + "/file", with: [1])
        #expect(AppendFileTests.failure { try FileSystem.createDirectories(directory + "/file/x") } == "mkdir ENOTDIR")
    }

    @Test("contents(of:upTo:) stops at the limit")
    func boundedContents() throws {
        let directory = try AppendFileTests.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
        try FileSystem.replaceAtomically(directory + "/f", with: bytes)
        #expect(try FileSystem.contents(of: directory + "/f", upTo: 20_000) == Array(bytes.prefix(20_000)))
        #expect(try FileSystem.contents(of: directory + "/f", upTo: 3) == [0, 1, 2])
        #expect(try FileSystem.contents(of: directory + "/f") == bytes)
    }

    @Test("the host name is the kernel's; a failed gethostname is a typed error")
    func hostName() throws {
        let kernel = try String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8)
        #expect(try Host.name() == kernel.trimmingCharacters(in: .newlines))
        let mock = SeamMock()
        mock.fail("gethostname", with: .invalidArgument)
        #expect {
            try SeamMock.$current.withValue(mock) { _ = try Host.name() }
        } throws: { error in
            (error as? SystemError)?.failedCall?.errno == .invalidArgument
        }
    }
}
