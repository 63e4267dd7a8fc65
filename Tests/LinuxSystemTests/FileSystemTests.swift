// FileSystem: the libc answers the board loader and the command use instead of Foundation's.
import Foundation
import LinuxSystem
import Testing

@Suite("File system and environment through libc")
struct FileSystemTests {
    @Test("environment variables: set, empty and unset")
    func environment() {
        setenv("GNSSHAT_FS_TEST", "a:b", 1)
        #expect(FileSystem.environment("GNSSHAT_FS_TEST") == "a:b")
        setenv("GNSSHAT_FS_TEST", "", 1)
        #expect(FileSystem.environment("GNSSHAT_FS_TEST") == "")
        unsetenv("GNSSHAT_FS_TEST")
        #expect(FileSystem.environment("GNSSHAT_FS_TEST") == nil)
    }

    @Test("contents, entries, existence and links of a directory made for the test")
    func files() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("gnsshat-fs-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Larger than one read chunk, so the loop must gather several.
        let content = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(content).write(to: URL(fileURLWithPath: directory + "/b.json"))
        try Data().write(to: URL(fileURLWithPath: directory + "/a.json"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "b.json")
        try FileManager.default.createSymbolicLink(atPath: directory + "/dangling", withDestinationPath: "nowhere")

        #expect(try FileSystem.contents(of: directory + "/b.json") == content)
        #expect(try FileSystem.contents(of: directory + "/a.json") == [])
        #expect(try FileSystem.entries(of: directory) == ["a.json", "b.json", "dangling", "link"])
        #expect(FileSystem.exists(directory + "/a.json"))
        #expect(FileSystem.exists(directory + "/link"))
        #expect(!FileSystem.exists(directory + "/dangling"), "a dangling link is not a file")
        #expect(!FileSystem.exists(directory + "/missing.json"))
        #expect(FileSystem.linkDestination(directory + "/link") == "b.json")
        #expect(FileSystem.linkDestination(directory + "/a.json") == nil, "not a link")
    }

    @Test("a missing file or directory is a typed error naming the call and the path")
    func missing() {
        #expect {
            _ = try FileSystem.contents(of: "/nonexistent/gnsshat.json")
        } throws: { error in
            let failure = (error as? FileError)?.failure
            return failure?.call == "open" && failure?.device == "/nonexistent/gnsshat.json"
        }
        #expect {
            _ = try FileSystem.entries(of: "/nonexistent/gnsshat")
        } throws: { error in
            let failure = (error as? FileError)?.failure
            return failure?.call == "opendir" && failure?.errno == .noSuchFileOrDirectory
        }
    }
}
