// A real peer run by a test (str2str, gnssserver, socat): its merged output kept line by line, its
// standard input written as raw bytes, stopped or killed by the test.
import Foundation
import Glibc
import LinuxSystem
import GNSSProtocol
import TestSupport

final class Peer: @unchecked Sendable {
    let name: String
    let output: Recorder<String>
    private let process = Process()
    private let input: FileHandle?

    init(_ name: String, executable: String, package: String, _ arguments: [String], withInput: Bool = false,
         environment: [String: String]? = nil) throws {
        self.name = name
        output = Recorder(name)
        process.executableURL = try TestPaths.tool(executable, package: package)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let inputPipe = withInput ? Pipe() : nil
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        input = inputPipe?.fileHandleForWriting
        // Peers started later must not inherit these pipes.
        for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting]
            + [inputPipe?.fileHandleForReading, inputPipe?.fileHandleForWriting].compactMap({ $0 }) {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        try runWithNoSignalBlocked(process)
        try? pipe.fileHandleForWriting.close()
        try? inputPipe?.fileHandleForReading.close()
        let fd = pipe.fileHandleForReading.fileDescriptor
        let output = output
        Thread.detachNewThread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: 0x0A) {
                    output.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            withExtendedLifetime(pipe) {}
        }
    }

    /// Writes raw bytes to the peer's standard input.
    func write(_ bytes: [UInt8]) throws {
        guard let input else { throw TestSetupError("\(name) was started without an input") }
        try input.write(contentsOf: Data(bytes))
    }

    var isRunning: Bool { process.isRunning }

    /// Ends the peer: its input closed, then `signal`. SIGKILL by default: str2str can hang on SIGTERM
    /// (and Foundation's wait for it spins a thread of the pool meanwhile); no test needs a clean exit.
    func stop(signal: Int32 = SIGKILL) {
        try? input?.close()
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
    }

    deinit { stop(signal: SIGKILL) }
}

/// A port nobody listens on now, below the kernel's ephemeral range (so no outgoing connection takes
/// it meanwhile), never handed out twice in this process.
func freePort() throws -> Int {
    let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } }
        ?? 32768
    for _ in 0..<200 {
        let candidate = Int.random(in: 12_000..<max(12_001, ephemeralStart))
        guard handedOut.withLock({ $0.insert(candidate).inserted }) else { continue }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { continue }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(candidate).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound == 0 { return candidate }
    }
    throw TestSetupError("no free loopback port after 200 tries")
}

private let handedOut = Lock<Set<Int>>([])

/// RTCM 3 frames cut from the F9P capture (4072, 1077, 1087, 1230, ...), each whole.
func corpusFrames() throws -> [[UInt8]] {
    let bytes = try captureBytes(TestPaths.corpus().appendingPathComponent("gpsd/ublox-f9p-rtcm.log"))
    var framer = Framer()
    framer.append(contentsOf: bytes)
    var frames: [[UInt8]] = []
    while let frame = framer.next() {
        if frame.kind == .rtcm3 { frames.append(Array(frame.bytes)) }
    }
    guard frames.count >= 4 else { throw TestSetupError("only \(frames.count) RTCM frames in the capture") }
    return frames
}
