import Glibc
import LinuxSystem
@testable import PiHardware
import Testing
import TestSupport  // readExactly

/// A short name per error case, so tables can say which case they expect.
func kind(_ error: SerialError) -> String {
    switch error {
    case .notFound: "notFound"
    case .permissionDenied: "permissionDenied"
    case .busy: "busy"
    case .notATerminal: "notATerminal"
    case .unsupportedSpeed: "unsupportedSpeed"
    case .hangUp: "hangUp"
    case .vanished: "vanished"
    case .writeTimedOut: "writeTimedOut"
    case .closed: "closed"
    case .failed: "failed"
    }
}

@Suite("The syscall seam: serial ports")
struct SerialSeamTests {
    /// What a case does once a pseudo-terminal is open: each exercises different calls.
    enum Action: String, CaseIterable, Sendable {
        case open, read, write, drain, speed
    }

    /// Runs `action` with `mock` installed, against a pseudo-terminal opened before it.
    static func run(_ action: Action, _ mock: SeamMock) throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath)
        try pty.write([0x42])
        try SeamMock.$current.withValue(mock) {
            switch action {
            case .open:
                _ = try SerialPort(path: pty.devicePath, speed: 38400, exclusive: true)
            case .read:
                #expect(try readExactly(1) { try port.read(timeout: $0) } == [0x42])
            case .write:
                try port.write([1, 2, 3])
            case .drain:
                try port.drain()
            case .speed:
                try port.setSpeed(4800)
            }
        }
    }

    static let mappings: [(SystemCall, Errno, Action, String)] = [
        ("open", .noSuchFileOrDirectory, .open, "notFound"),
        ("open", .permissionDenied, .open, "permissionDenied"),
        ("open", .resourceBusy, .open, "busy"),
        (.ioctl("TIOCEXCL"), .resourceBusy, .open, "busy"),
        ("tcgetattr", .notATerminal, .open, "notATerminal"),
        ("tcsetattr", .ioError, .open, "vanished"),
        ("cfsetispeed", .invalidArgument, .speed, "failed"),
        ("cfsetospeed", .invalidArgument, .speed, "failed"),
        ("tcsetattr", .noSuchDevice, .speed, "vanished"),
        ("poll", .noMemory, .read, "failed"),
        ("read", .ioError, .read, "vanished"),
        ("read", .noSuchDeviceOrAddress, .read, "vanished"),
        ("write", .ioError, .write, "vanished"),
        ("write", .brokenPipe, .write, "hangUp"),
        ("tcdrain", .ioError, .drain, "vanished"),
    ]

    @Test("an injected error becomes the typed error, naming the call", arguments: mappings)
    func mapping(call: SystemCall, errno: Errno, action: Action, expected: String) throws {
        let mock = SeamMock()
        mock.fail(call, with: errno)
        do {
            try Self.run(action, mock)
            Issue.record("\(call) failing with \(errno) did not throw")
        } catch {
            let error = try #require(error as? SerialError)
            #expect(kind(error) == expected)
            #expect(error.failedCall?.call == call.rawValue)
            #expect(error.failedCall?.errno == errno)
            #expect(error.description.contains(errno.name))
        }
        #expect(mock.pendingFailures == 0)
    }

    static let retried: [(SystemCall, Action)] = [
        ("open", .open), (.ioctl("TIOCEXCL"), .open), ("tcgetattr", .open), ("tcsetattr", .open),
        ("cfsetispeed", .open), ("cfsetospeed", .open), ("poll", .read), ("read", .read), ("write", .write),
        ("tcdrain", .drain),
    ]

    @Test("EINTR is retried: three interruptions cost three more calls and no error", arguments: retried)
    func interrupted(call: SystemCall, action: Action) throws {
        let clean = SeamMock()
        try Self.run(action, clean)
        let interrupted = SeamMock()
        interrupted.fail(call, with: .interrupted, times: 3)
        try Self.run(action, interrupted)
        #expect(clean.count(call) >= 1)
        #expect(interrupted.count(call) == clean.count(call) + 3)
        #expect(interrupted.pendingFailures == 0)
    }

    @Test("the seam records each call with its device")
    func records() throws {
        let mock = SeamMock()
        let pty = try PseudoTerminal()
        try SeamMock.$current.withValue(mock) {
            let port = try SerialPort(path: pty.devicePath, speed: 4800)
            port.close()
        }
        #expect(mock.records.first == SeamMock.Record(call: "open", device: pty.devicePath))
        #expect(mock.records.last == SeamMock.Record(call: "close", device: pty.devicePath))
        #expect(mock.calls == [
            "open", .ioctl("TIOCEXCL"), "tcgetattr", "cfsetispeed", "cfsetospeed", "tcsetattr", "tcgetattr", "close",
        ])
    }

    @Test("the mock is per task: a test without one runs the real calls unrecorded")
    func perTask() throws {
        let mock = SeamMock()
        mock.fail("open", with: .ioError)
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath)
        #expect(try port.speed() == 9600)
        #expect(mock.records.isEmpty)
    }

    @Test("directories are listed through the seam, gpiochips in number order")
    func chipPaths() throws {
        var template = Array("/tmp/gnsshat-chips-XXXXXX".utf8CString)
        let directory = try #require(template.withUnsafeMutableBufferPointer { $0.baseAddress.flatMap(mkdtemp) })
        let path = String(cString: directory)
        defer {
            for entry in (try? listDirectory(path)) ?? [] where entry != "." && entry != ".." {
                unlink(path + "/" + entry)
            }
            rmdir(path)
        }
        for name in ["gpiochip10", "gpiochip2", "gpiochip0", "gpiochipX", "ttyS0", "gpiomem"] {
            close(creat(path + "/" + name, 0o600))
        }
        let expected = ["gpiochip0", "gpiochip2", "gpiochip10"].map { path + "/" + $0 }
        #expect(try listGPIOChipPaths(directory: path) == expected)
        let mock = SeamMock()
        mock.fail("readdir", with: .ioError)
        #expect(throws: FailedCall(call: "readdir", device: path, errno: .ioError)) {
            try SeamMock.$current.withValue(mock) { try listGPIOChipPaths(directory: path) as [String] }
        }
        #expect(throws: FailedCall(call: "opendir", device: path + "/none", errno: .noSuchFileOrDirectory)) {
            try listGPIOChipPaths(directory: path + "/none")
        }
    }
}
