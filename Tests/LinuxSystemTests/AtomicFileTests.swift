// FileSystem.replaceAtomically against a real temporary directory: the new bytes replace the old ones,
// every step goes through the seam in order, and a failure at any step before the rename leaves the old
// file and no temporary behind.
import Foundation
import LinuxSystem
import Testing

@Suite("Atomic file replacement")
struct AtomicFileTests {
    static func makeDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-atomic-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("a new file, then a replacement: the bytes, the permissions, no temporary left")
    func replaces() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/aiding.state"
        let first = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try FileSystem.replaceAtomically(path, with: first)
        #expect(try FileSystem.contents(of: path) == first)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        try FileSystem.replaceAtomically(path, with: [1, 2, 3], permissions: 0o644)
        #expect(try FileSystem.contents(of: path) == [1, 2, 3])
        #expect(try FileSystem.entries(of: directory) == ["aiding.state"])
        try FileSystem.replaceAtomically(path, with: [])
        #expect(try FileSystem.contents(of: path) == [])
    }

    @Test("the calls, in order: temporary written and flushed, renamed, then the directory flushed")
    func order() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state"
        let temporary = FileSystem.temporaryName(for: path)
        let mock = SeamMock()
        try SeamMock.$current.withValue(mock) { try FileSystem.replaceAtomically(path, with: [9, 8, 7]) }
        #expect(
            mock.records.map(\.description) == [
                "open \(temporary)", "write \(temporary)", "fsync \(temporary)", "close \(temporary)",
                "rename \(temporary)", "open \(directory)", "fsync \(directory)", "close \(directory)",
            ])
        #expect(try FileSystem.contents(of: path) == [9, 8, 7])
    }

    @Test(
        "a failure before the rename is a typed error naming the call; the old file stays, no temporary",
        arguments: ["write", "fsync", "rename"] as [SystemCall])
    func failureKeepsOld(call: SystemCall) throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state"
        try FileSystem.replaceAtomically(path, with: [1, 1, 1])
        let mock = SeamMock()
        mock.fail(call, with: .ioError)
        #expect {
            try SeamMock.$current.withValue(mock) { try FileSystem.replaceAtomically(path, with: [2, 2, 2, 2]) }
        } throws: { error in
            let failure = (error as? FileError)?.failure
            return failure?.call == call.rawValue && failure?.errno == .ioError
        }
        #expect(try FileSystem.contents(of: path) == [1, 1, 1])
        #expect(try FileSystem.entries(of: directory) == ["state"])
        #expect(mock.pendingFailures == 0)
    }

    @Test("EINTR is retried at every step")
    func interrupts() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state"
        let mock = SeamMock()
        for call: SystemCall in ["open", "write", "fsync", "rename"] { mock.fail(call, with: .interrupted, times: 2) }
        try SeamMock.$current.withValue(mock) { try FileSystem.replaceAtomically(path, with: [5]) }
        #expect(try FileSystem.contents(of: path) == [5])
        #expect(mock.pendingFailures == 0)
        #expect(mock.count("rename") == 3)
    }

    @Test("a temporary left by a crash is overwritten, not appended to")
    func staleTemporary() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state"
        try Data(repeating: 0xEE, count: 100).write(to: URL(fileURLWithPath: FileSystem.temporaryName(for: path)))
        try FileSystem.replaceAtomically(path, with: [4, 4])
        #expect(try FileSystem.contents(of: path) == [4, 4])
        #expect(try FileSystem.entries(of: directory) == ["state"])
    }

    @Test("a missing directory is a typed error from open; createDirectory makes it, twice is fine")
    func directories() throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/gnss-hat"
        #expect {
            try FileSystem.replaceAtomically(state + "/state", with: [1])
        } throws: { error in
            let failure = (error as? FileError)?.failure
            return failure?.call == "open" && failure?.errno == .noSuchFileOrDirectory
        }
        try FileSystem.createDirectory(state)
        try FileSystem.createDirectory(state)
        try FileSystem.replaceAtomically(state + "/state", with: [1])
        #expect(try FileSystem.contents(of: state + "/state") == [1])
        try FileSystem.removeFile(state + "/state")
        try FileSystem.removeFile(state + "/state")
        #expect(!FileSystem.exists(state + "/state"))
        #expect(throws: FileError.self) { try FileSystem.createDirectory(directory + "/no/such/parent") }
    }
}
