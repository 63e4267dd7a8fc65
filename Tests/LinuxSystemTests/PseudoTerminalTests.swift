import Glibc
@testable import LinuxSystem
import Testing

/// A short name per error case, so tables can say which case they expect.
func kind(_ error: PseudoTerminalError) -> String {
    switch error {
    case .hangUp: "hangUp"
    case .vanished: "vanished"
    case .writeTimedOut: "writeTimedOut"
    case .closed: "closed"
    case .failed: "failed"
    }
}

@Suite("The syscall seam: pseudo-terminals")
struct PseudoTerminalSeamTests {
    static let mappings: [(SystemCall, Errno, String)] = [
        ("posix_openpt", .noSuchFileOrDirectory, "failed"),
        ("grantpt", .permissionDenied, "failed"),
        ("unlockpt", .invalidArgument, "failed"),
        ("ptsname_r", .notATerminal, "failed"),
        ("tcgetattr", .ioError, "vanished"),
        ("tcsetattr", .noSuchDevice, "vanished"),
        ("fcntl(F_GETFL)", .invalidArgument, "failed"),
        ("open", .noSuchDeviceOrAddress, "vanished"),
    ]

    @Test("an injected error becomes the typed error, naming the call", arguments: mappings)
    func mapping(call: SystemCall, errno: Errno, expected: String) throws {
        let mock = SeamMock()
        mock.fail(call, with: errno)
        #expect {
            try SeamMock.$current.withValue(mock) { _ = try PseudoTerminal(holdDeviceOpen: true) }
        } throws: { error in
            guard let error = error as? PseudoTerminalError else { return false }
            return kind(error) == expected && error.failedCall?.call == call.rawValue
                && error.failedCall?.errno == errno && error.description.contains(errno.name)
        }
        #expect(mock.pendingFailures == 0)
    }

    static let retried: [SystemCall] = [
        "posix_openpt", "grantpt", "unlockpt", "ptsname_r", "tcgetattr", "tcsetattr", "fcntl(F_GETFL)",
        "fcntl(F_SETFL)", "open",
    ]

    @Test("EINTR is retried: three interruptions cost three more calls and no error", arguments: retried)
    func interrupted(call: SystemCall) throws {
        let clean = SeamMock()
        _ = try SeamMock.$current.withValue(clean) { try PseudoTerminal(holdDeviceOpen: true) }
        let interrupted = SeamMock()
        interrupted.fail(call, with: .interrupted, times: 3)
        _ = try SeamMock.$current.withValue(interrupted) { try PseudoTerminal(holdDeviceOpen: true) }
        #expect(clean.count(call) >= 1)
        #expect(interrupted.count(call) == clean.count(call) + 3)
        #expect(interrupted.pendingFailures == 0)
    }

    @Test("reads and writes after close, and a hang-up, are typed errors")
    func closedAndHungUp() throws {
        let pty = try PseudoTerminal(holdDeviceOpen: false)
        // A client opens the device side and goes: with nobody holding it, the controller hangs up.
        let client = open(pty.devicePath, O_RDWR | O_NOCTTY)
        #expect(client >= 0)
        close(client)
        #expect {
            for _ in 0..<4 { _ = try pty.read(timeout: .seconds(1)) }
        } throws: { error in
            guard let error = error as? PseudoTerminalError else { return false }
            return error.deviceIsGone && (kind(error) == "hangUp" || kind(error) == "vanished")
        }
        pty.close()
        #expect(throws: PseudoTerminalError.closed(device: pty.name)) { try pty.read(timeout: .zero) }
        #expect(throws: PseudoTerminalError.closed(device: pty.name)) { try pty.write([1]) }
    }

    @Test("a read returns what came in an array of about its size, not of the room it read into")
    func readKeepsOnlyWhatCame() throws {
        let pty = try PseudoTerminal()
        let device = open(pty.devicePath, O_RDWR | O_NOCTTY)
        #expect(device >= 0)
        defer { close(device) }
        var bytes: [UInt8] = [1, 2, 3]
        #expect(Glibc.write(device, &bytes, 3) == 3)
        let read = try pty.read(maxCount: 65536, timeout: .seconds(5))
        #expect(read == [1, 2, 3])
        // The read itself had room for 65536: a caller that keeps many small reads keeps small arrays.
        #expect(read.capacity < 1024)
    }
}
