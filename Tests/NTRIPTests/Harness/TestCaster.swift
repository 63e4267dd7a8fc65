// A small NTRIP 2 caster of the tests' own on a loopback socket: it answers chunked (or as NTRIP 1,
// `ICY 200 OK`), can wait for a GGA before it sends anything (a virtual-reference-station caster),
// and can answer with its sourcetable, a 401 or a ban. It records every request, every line the
// client sends in the stream (GGA), and every end of stream it reads, so tests check the client from
// the caster's side. Blocking sockets, a thread per connection: test code only.
import Foundation
import Glibc
import LinuxSystem
import TestSupport

final class TestCaster: @unchecked Sendable {
    enum Answer: Sendable {
        /// 200 and the frames the test sends; `chunked` NTRIP 2, else NTRIP 1's `ICY 200 OK`.
        case stream(chunked: Bool)
        /// 200, then nothing until the client has sent a GGA in the stream.
        case virtualReferenceStation
        /// The sourcetable, then close.
        case sourcetable
        case unauthorized
        case banned
    }

    /// What the caster saw, in order.
    enum Seen: Sendable, CustomStringConvertible {
        case request(String)
        case line(String)
        case endOfStream(connection: Int)

        var description: String {
            switch self {
            case .request(let text): "request \(text.split(separator: "\r\n").first ?? "")"
            case .line(let text): "line \(text)"
            case .endOfStream(let connection): "end of stream on connection \(connection)"
            }
        }
    }

    private struct Client {
        var fd: Int32
        var chunked: Bool
        var streaming: Bool
    }

    let port: Int
    let seen = Recorder<Seen>("test caster")
    let sourcetable: String
    let user: String
    let password: String
    private let listener: Int32
    private let answer: Lock<Answer>
    private let clients = Lock<[Int: Client]>([:])
    private let connections = Lock(0)

    private let listenerClosed = DispatchSemaphore(value: 0)
    private let shutDown = Lock(false)

    /// Listens on 127.0.0.1:`port` (0: a port the kernel chooses).
    init(answer: Answer, port: Int = 0, user: String = "rover", password: String = "secret", sourcetable: String) throws {
        self.answer = Lock(answer)
        self.user = user
        self.password = password
        self.sourcetable = sourcetable
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { throw TestSetupError("test caster: cannot listen (errno \(errno))") }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { shutdown() }

    /// What the next connections are answered.
    func answer(with next: Answer) {
        answer.withLock { $0 = next }
    }

    /// How many connections are streaming now.
    var streamingCount: Int { clients.withLock { $0.values.filter(\.streaming).count } }

    /// Sends `bytes` to every streaming connection (one chunk each on chunked ones).
    func send(_ bytes: [UInt8]) {
        let targets = clients.withLock { Array($0.values.filter(\.streaming)) }
        for client in targets {
            var data = bytes
            if client.chunked {
                data = Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + Array("\r\n".utf8)
            }
            writeAll(client.fd, data)
        }
    }

    /// Closes the listener and every connection (the client reads the end of the stream).
    func shutdown() {
        let first = shutDown.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        // The port is free again once this returns.
        listenerClosed.wait()
        let all = clients.withLock { clients -> [Client] in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { Glibc.shutdown(client.fd, Int32(SHUT_RDWR)) }
    }

    // MARK: - Threads

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                Glibc.close(listener)
                listenerClosed.signal()
                return
            }
            let number = connections.withLock { count -> Int in
                count += 1
                return count
            }
            Thread.detachNewThread { [self] in serve(fd, number: number) }
        }
    }

    private func serve(_ fd: Int32, number: Int) {
        defer { Glibc.close(fd) }
        var reader = LineReader(fd: fd)
        guard let request = reader.head() else {
            seen.append(.endOfStream(connection: number))
            return
        }
        seen.append(.request(request))
        let authorised = request.contains("Authorization: Basic " + Self.base64("\(user):\(password)") + "\r\n")
        let wantsSourcetable = request.hasPrefix("GET / ")
        let answer = self.answer.withLock { $0 }
        switch answer {
        case _ where !authorised:
            writeAll(fd, Array(("HTTP/1.1 401 Unauthorized\r\nNtrip-Version: Ntrip/2.0\r\n"
                + "WWW-Authenticate: Basic realm=\"/\"\r\nConnection: close\r\n\r\n").utf8))
            return
        case .banned:
            writeAll(fd, Array("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\nBanned: too many reconnects\r\n".utf8))
            return
        case .unauthorized:
            writeAll(fd, Array("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n".utf8))
            return
        case .sourcetable:
            sendSourcetable(fd)
            return
        case _ where wantsSourcetable || !request.hasPrefix("GET /MOUNT "):
            sendSourcetable(fd)
            return
        case .stream(let chunked):
            let head = chunked
                ? "HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nContent-Type: gnss/data\r\nTransfer-Encoding: chunked\r\n\r\n"
                : "ICY 200 OK\r\n"
            // Registered before the answer goes out: a frame sent once the client has the answer reaches it.
            clients.withLock { $0[number] = Client(fd: fd, chunked: chunked, streaming: true) }
            writeAll(fd, Array(head.utf8))
        case .virtualReferenceStation:
            clients.withLock { $0[number] = Client(fd: fd, chunked: true, streaming: false) }
            writeAll(fd, Array("HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        }
        // The stream: every line the client sends (its GGA) is recorded; the first GGA starts a VRS stream.
        while let line = reader.line() {
            if line.hasPrefix("$") && line.contains("GGA") {
                clients.withLock { clients in clients[number]?.streaming = true }
            }
            seen.append(.line(line))
        }
        clients.withLock { _ = $0.removeValue(forKey: number) }
        seen.append(.endOfStream(connection: number))
    }

    private func sendSourcetable(_ fd: Int32) {
        let body = sourcetable + "ENDSOURCETABLE\r\n"
        writeAll(fd, Array(("HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nContent-Type: gnss/sourcetable\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8))
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            offset += count
        }
    }

    static func base64(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
    }
}

/// Reads a request head and then lines from a blocking socket.
struct LineReader {
    let fd: Int32
    private var pending: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// Up to the empty line, or nil at the end of the stream.
    mutating func head() -> String? {
        while true {
            if let end = find(Array("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<(end + 4)], as: UTF8.self)
                pending.removeSubrange(..<(end + 4))
                return head
            }
            guard fill() else { return nil }
        }
    }

    /// The next line without its CRLF, or nil at the end of the stream.
    mutating func line() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self).trimmingCharacters(in: .newlines)
                pending.removeSubrange(...newline)
                return line
            }
            guard fill() else { return nil }
        }
    }

    private mutating func fill() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            pending += buffer[..<count]
            return true
        }
    }

    private func find(_ marker: [UInt8]) -> Int? {
        guard pending.count >= marker.count else { return nil }
        for index in 0...(pending.count - marker.count) where pending[index..<index + marker.count].elementsEqual(marker) {
            return index
        }
        return nil
    }
}
