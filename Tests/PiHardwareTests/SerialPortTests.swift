import Glibc
@testable import LinuxSystem  // ThreadCondition
@testable import PiHardware
import Testing
import TestSupport  // readExactly

@Suite("Serial port against a pseudo-terminal")
struct SerialPortTests {
    @Test("every standard speed is set and read back", arguments: SerialPort.standardSpeeds)
    func speedsReadBack(speed: Int) throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: speed)
        #expect(try port.speed() == speed)
    }

    @Test("a speed can be changed after opening")
    func speedChange() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: 9600)
        try port.setSpeed(115200)
        #expect(try port.speed() == 115200)
    }

    @Test("a non-standard speed is a typed error", arguments: [0, 1200, 12345, 1_000_000])
    func unsupportedSpeed(speed: Int) throws {
        let pty = try PseudoTerminal()
        #expect(throws: SerialError.unsupportedSpeed(speed, device: pty.devicePath)) {
            try SerialPort(path: pty.devicePath, speed: speed)
        }
    }

    @Test("all 256 byte values pass both ways unchanged")
    func bytesBothWays() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: 115200)
        // Every value, including CR, LF, XON/XOFF, ^C and DEL that a cooked tty would eat.
        let everything = (0...255).map(UInt8.init) + [0x0D, 0x0A, 0x11, 0x13, 0x03, 0x7F, 0x00]
        try pty.write(everything)
        #expect(try readExactly(everything.count) { try port.read(timeout: $0) } == everything)
        try port.write(everything.reversed())
        try port.drain()
        #expect(try readExactly(everything.count) { try pty.read(timeout: $0) } == everything.reversed())
    }

    @Test("a read with no timeout returns bytes as they come, and nothing once woken", arguments: [false, true])
    func readUntilWoken(pseudoTerminalSide: Bool) throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: 115200)
        let waker = try Waker()
        let read: @Sendable () throws -> [UInt8]
        if pseudoTerminalSide {
            read = { () throws -> [UInt8] in try pty.read(maxCount: 64, until: waker) }
        } else {
            read = { () throws -> [UInt8] in try port.read(maxCount: 64, until: waker) }
        }
        if pseudoTerminalSide { try port.write([1, 2, 3]) } else { try pty.write([1, 2, 3]) }
        #expect(try read() == [1, 2, 3])
        // Woken from another thread while it waits: no bytes, no error.
        let result = ThreadCondition<Result<[UInt8], any Error>?>(nil)
        let reader = try LoopThread(name: "test-reader") { result.withLock { $0 = Result { try read() } } }
        waker.wake()
        reader.join()
        #expect(try result.withLock { $0 }?.get() == [])
        // A wake that came while nobody waited is used up by the next read, not kept for later.
        waker.wake()
        #expect(try read() == [])
        if pseudoTerminalSide { try port.write([4]) } else { try pty.write([4]) }
        #expect(try read() == [4])
    }

    @Test("a read into a buffer leaves what came in it, in its own storage while nothing else holds it")
    func readIntoReusesStorage() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: 115200)
        let waker = try Waker()
        var buffer: [UInt8] = [9, 9, 9, 9, 9]
        try pty.write([1, 2, 3])
        try port.read(into: &buffer, maxCount: 64, until: waker)
        #expect(buffer == [1, 2, 3])
        let storage = buffer.withUnsafeBufferPointer { $0.baseAddress }
        try pty.write([4, 5])
        try port.read(into: &buffer, maxCount: 64, until: waker)
        #expect(buffer == [4, 5])
        // Unique: the same storage, no allocation for the second read.
        #expect(buffer.withUnsafeBufferPointer { $0.baseAddress } == storage)
        // Held elsewhere (a consumer kept the bytes): they stay as they were; the read goes elsewhere.
        let kept = buffer
        try pty.write([6])
        try port.read(into: &buffer, maxCount: 64, until: waker)
        #expect(buffer == [6])
        #expect(kept == [4, 5])
        // Woken with nothing to read: the buffer is empty, no error.
        waker.wake()
        try port.read(into: &buffer, maxCount: 64, until: waker)
        #expect(buffer.isEmpty)
        // At most maxCount bytes per read; the rest waits for the next one.
        try pty.write([1, 2, 3, 4, 5, 6, 7, 8])
        var received: [UInt8] = []
        while received.count < 8 {
            try port.read(into: &buffer, maxCount: 3, until: waker)
            #expect(buffer.count <= 3)
            received += buffer
        }
        #expect(received == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test("the seam mock in force at the open stays with the port: a read on another task takes its failure")
    func seamMockFollowsThePort() async throws {
        let pty = try PseudoTerminal()
        let mock = SeamMock()
        let port = try SeamMock.$current.withValue(mock) { try SerialPort(path: pty.devicePath, speed: 115200) }
        try pty.write([1, 2, 3])
        mock.fail("read", with: .ioError)
        // A detached task inherits no task-local: only the port's own hold on the mock can fail the read.
        let outcome = await Task.detached { () -> Result<[UInt8], SerialError> in
            #expect(SeamMock.current == nil)
            do throws(SerialError) {
                return .success(try port.read(timeout: .seconds(5)))
            } catch {
                return .failure(error)
            }
        }.value
        guard case .failure(.vanished(let failure)) = outcome else {
            Issue.record("expected the injected EIO as a vanished port, got \(outcome)")
            return
        }
        #expect(failure.call == "read" && failure.errno == .ioError)
        #expect(mock.pendingFailures == 0)
        #expect(try readExactly(3) { try port.read(timeout: $0) } == [1, 2, 3], "the bytes are still there")
        port.close()
    }

    @Test("a read into a buffer reports a hang-up as the plain read does")
    func readIntoHangUp() throws {
        var pty: PseudoTerminal? = try PseudoTerminal()
        let port = try SerialPort(path: try #require(pty).devicePath, speed: 115200)
        let waker = try Waker()
        pty = nil
        var buffer: [UInt8] = []
        #expect(throws: SerialError.self) { try port.read(into: &buffer, maxCount: 64, until: waker) }
        #expect(buffer.isEmpty)
    }

    @Test("a large write is delivered whole")
    func largeWrite() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, speed: 921600)
        let bytes = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try port.write(bytes)
        #expect(try readExactly(bytes.count) { try pty.read(timeout: $0) } == bytes)
    }

    @Test("raw 8N1 with and without RTS/CTS", arguments: [false, true])
    func flowControl(rtsCts: Bool) throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath, rtsCts: rtsCts)
        #expect(try port.usesRtsCts() == rtsCts)
    }

    @Test("exclusive use is taken with TIOCEXCL, and only when asked", arguments: [false, true])
    func exclusive(exclusive: Bool) throws {
        let pty = try PseudoTerminal()
        let mock = SeamMock()
        let port = try SeamMock.$current.withValue(mock) {
            try SerialPort(path: pty.devicePath, exclusive: exclusive)
        }
        #expect(try port.isExclusive() == exclusive)
        #expect(mock.count(.ioctl("TIOCEXCL")) == (exclusive ? 1 : 0))
        // O_NOCTTY and raw mode go with every open.
        #expect(mock.calls.first == "open")
        #expect(mock.calls.contains("tcsetattr"))
    }

    @Test("a read with nothing waiting times out empty")
    func readTimeout() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath)
        #expect(try port.read(timeout: .zero) == [])
    }

    @Test("the far side closing is a typed error, not an endless run of empty reads")
    func farSideCloses() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath)
        try pty.write([0x24, 0x47])
        pty.close()
        // Bytes sent before the hang-up may or may not survive it; after them comes the error.
        var error: SerialError?
        for _ in 0..<4 {
            do {
                _ = try port.read(timeout: .seconds(1))
            } catch let caught {
                error = caught
                break
            }
        }
        let failure = try #require(error)
        #expect(failure.deviceIsGone)
        switch failure {
        case .hangUp, .vanished: break
        default: Issue.record("expected a hang-up, got \(failure)")
        }
    }

    @Test("the client closing makes the controller read a hang-up once it holds nothing open")
    func clientCloses() throws {
        let pty = try PseudoTerminal(holdDeviceOpen: false)
        var port: SerialPort? = try SerialPort(path: pty.devicePath)
        _ = port
        port = nil
        #expect(throws: (any Error).self) {
            for _ in 0..<4 { _ = try pty.read(timeout: .seconds(1)) }
        }
    }

    @Test("a held device side keeps the controller quiet while the client reopens")
    func heldDeviceSide() throws {
        let pty = try PseudoTerminal(holdDeviceOpen: true)
        do {
            let port = try SerialPort(path: pty.devicePath)
            port.close()
        }
        #expect(try pty.read(timeout: .zero) == [])
        let again = try SerialPort(path: pty.devicePath)
        try again.write([1, 2, 3])
        #expect(try readExactly(3) { try pty.read(timeout: $0) } == [1, 2, 3])
    }

    @Test("calls after close are a typed error")
    func closed() throws {
        let pty = try PseudoTerminal()
        let port = try SerialPort(path: pty.devicePath)
        port.close()
        port.close()
        #expect(throws: SerialError.closed(device: pty.devicePath)) { try port.read(timeout: .zero) }
        #expect(throws: SerialError.closed(device: pty.devicePath)) { try port.write([1]) }
    }

    @Test("a missing device and a non-terminal are told apart")
    func openErrors() throws {
        #expect {
            try SerialPort(path: "/dev/ttyDOES-NOT-EXIST")
        } throws: { error in
            guard case .notFound(let failure) = error as? SerialError else { return false }
            return failure.call == "open" && failure.device == "/dev/ttyDOES-NOT-EXIST"
        }
        #expect {
            try SerialPort(path: "/dev/null")
        } throws: { error in
            if case .notATerminal = error as? SerialError { true } else { false }
        }
    }
}
