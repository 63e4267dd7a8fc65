// The child-process runner the command and oracle tests use: it must never block on a full pipe
// and must survive a child that does not read its input.
import Foundation
import Testing
import TestSupport

@Suite("Running a child to its end", .timeLimit(.minutes(1)))
struct CommandRunTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("a child writing 256 KiB to each output while its 1 MiB input is still being fed, and exiting unread")
    func fullPipes() throws {
        let run = try CommandRun.run(
            executable: Self.shell,
            ["-c", "head -c 262144 /dev/zero | tr '\\0' o; head -c 262144 /dev/zero | tr '\\0' e >&2; exit 3"],
            input: Data(count: 1 << 20)
        )
        #expect(run.status == 3)
        #expect(run.out.utf8.count == 262_144 && run.out.utf8.allSatisfy { $0 == UInt8(ascii: "o") })
        #expect(run.err.utf8.count == 262_144 && run.err.utf8.allSatisfy { $0 == UInt8(ascii: "e") })
    }

    @Test("input reaches the child and is closed after; without input the child reads nothing")
    func input() throws {
        let echo = try CommandRun.run(executable: Self.shell, ["-c", "cat; echo end"], input: Data("abc\n".utf8))
        #expect(echo.status == 0 && echo.out == "abc\nend\n")
        let none = try CommandRun.run(executable: Self.shell, ["-c", "cat; echo end"])
        #expect(none.status == 0 && none.out == "end\n" && none.err.isEmpty)
    }

    @Test("terminateAfterFirstLine stops a child that would run two minutes (past the time limit), though tests run with SIGTERM blocked")
    func terminate() throws {
        let run = try CommandRun.run(executable: Self.shell, ["-c", "echo ready; exec sleep 120"],
                                     terminateAfterFirstLine: true)
        #expect(run.out == "ready\n")
        #expect(run.status == SIGTERM)
    }
}
