// The client against pygnssutils' gnssserver in NTRIP caster mode (pinned in .build/venv by
// scripts/setup.sh): NTRIP 2 answers with no CRLF after the status line and no chunking. The test
// feeds gnssserver's input socket with RTCM frames, one at a time, each waited for at the client.
import Foundation
import Glibc
import GNSSHatTesting
import NTRIP
import Signals
import Testing
import TestSupport

@Suite("NTRIP client against pygnssutils' gnssserver")
struct PygnssutilsTests {
    @Test("gnssserver --ntripmode 1: its malformed NTRIP 2 answer is read, frames flow; a wrong password is a 401")
    func flow() async throws {
        let frames = try corpusFrames()
        let gnssserver = try TestPaths.tool(
            TestPaths.packageRoot.appendingPathComponent(".build/venv/bin/gnssserver").path,
            package: "pygnssutils (scripts/setup.sh)")
        // gnssserver reads its input from a socket it connects to: ours.
        let feed = try FeedSocket()
        let port = try freeLoopbackPort()
        let server = try Daemon("gnssserver", executable: gnssserver, [
            "--socket", "127.0.0.1:\(feed.port)", "--hostip", "127.0.0.1", "--outport", "\(port)",
            "--ntripmode", "1", "--ntripversion", "2.0", "--ntripuser", "rover", "--ntrippassword", "secret",
            "--verbosity", "2", "--timeout", "600",
        ], stopSignal: SIGKILL)
        defer { server.stop() }
        let connection = try feed.accept()
        // gnssserver's input waits for its first bytes before it starts its caster, and takes a read that
        // times out (--timeout, 3 s by default) for the end of its input: a long time-out, and a first
        // frame nobody receives (no client is connected yet) to start it.
        connection.write(frames[0])
        // gnssserver says it starts its caster just before it binds the port: an attempt that comes
        // before the bind is refused, and the client's back-off (on the manual clock) tries again.
        try await server.line(containing: "Starting output thread, broadcasting on 127.0.0.1:\(port)")
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/pygnssutils")
        let token = rig.subscribe()
        let streaming = try await rig.waitForStreaming()
        #expect(streaming.contains("(HTTP/1.1 200 OKNtrip-Version: Ntrip/2.0, attempt "), "\(streaming)")
        for (index, frame) in frames.prefix(4).enumerated() {
            connection.write(frame)
            do {
                try await rig.waitForFrames(index + 1)
            } catch {
                throw TestSetupError("\(error); gnssserver printed \(server.output)")
            }
        }
        #expect(rig.frames.items.map { Array($0.bytes) } == Array(frames.prefix(4)))
        token.cancel()
        await rig.client.shutdown()

        let wrong = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/pygnssutils", password: "wrong")
        #expect(!rig.reports.lines.joined().contains("refused user"))
        let refused = wrong.subscribe()
        let line = try await wrong.reports.line(containing: "failed:")
        #expect(line.contains("failed: the caster refused user 'rover' for mountpoint pygnssutils "
            + "(HTTP/1.1 401 Unauthorized)"), "\(line)")
        refused.cancel()
        await wrong.client.shutdown()
    }
}

/// A loopback listener gnssserver connects to for its input, and the connection it accepts.
final class FeedSocket: @unchecked Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard ok else { throw TestSetupError("feed socket: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(listener) }

    /// Waits (up to 30 s) for gnssserver to connect.
    func accept() throws -> FeedConnection {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 30_000) == 1 else { throw TestSetupError("gnssserver did not connect to its input") }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw TestSetupError("accept: errno \(errno)") }
        return FeedConnection(fd: fd)
    }
}

final class FeedConnection: @unchecked Sendable {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
