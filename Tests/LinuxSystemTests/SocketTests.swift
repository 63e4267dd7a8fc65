import CLinuxShims
import Glibc
@testable import LinuxSystem
import Synchronization
import Testing
import TestSupport  // readExactly

/// A fresh path for a Unix socket in a private temporary directory, removed by `cleanUp`.
func temporarySocketPath(_ name: String) throws -> (path: String, cleanUp: () -> Void) {
    var template = Array("/tmp/gnsshat-sock-XXXXXX".utf8CString)
    let directory = try #require(template.withUnsafeMutableBufferPointer { $0.baseAddress.flatMap(mkdtemp) })
    let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    _ = directory
    return (path + "/" + name, {
        unlink(path + "/" + name)
        rmdir(path)
    })
}

/// Accepts the next connection, waiting for the listener to become readable.
func acceptWaiting(_ listener: SocketListener) throws -> SocketConnection {
    let poller = try Poller()
    try poller.add(listener.rawDescriptor, token: 1, interest: .readable)
    for _ in 0..<100 {
        if let connection = try listener.accept() { return connection }
        _ = try poller.wait(timeout: .milliseconds(100))
    }
    throw SocketError.closed(device: "no connection arrived")
}

@Suite("Socket addresses")
struct SocketAddressTests {
    @Test("ADDR:PORT forms parse to the family, host and port", arguments: [
        ("127.0.0.1:2947", SocketAddress.ipv4("127.0.0.1", port: 2947)),
        ("0.0.0.0:10", .ipv4("0.0.0.0", port: 10)),
        (":2948", .ipv4("0.0.0.0", port: 2948)),
        ("*:2948", .ipv4("0.0.0.0", port: 2948)),
        ("localhost", .ipv4("127.0.0.1", port: 2947)),
        ("localhost:0", .ipv4("127.0.0.1", port: 0)),
        ("[::1]:2947", .ipv6("::1", port: 2947)),
        ("[::]", .ipv6("::", port: 2947)),
        ("::1", .ipv6("::1", port: 2947)),
        ("fe80::1", .ipv6("fe80::1", port: 2947)),
        ("/run/gnss-hat.sock", .unix("/run/gnss-hat.sock")),
        ("./gnss.sock", .unix("./gnss.sock")),
    ])
    func parses(text: String, expected: SocketAddress) throws {
        #expect(try SocketAddress(parsing: text, defaultPort: 2947) == expected)
    }

    @Test("descriptions round-trip through the parser", arguments: [
        SocketAddress.ipv4("10.0.0.2", port: 80), .ipv6("::1", port: 2947), .unix("/tmp/x.sock"),
    ])
    func roundTrip(address: SocketAddress) throws {
        #expect(try SocketAddress(parsing: address.description, defaultPort: 1) == address)
    }

    @Test("bad addresses are refused with a reason", arguments: [
        "gps.example.org:2947", "127.0.0.1:70000", "127.0.0.1:port", "[::1", "[::1]x", "300.1.1.1:1",
    ])
    func refuses(text: String) {
        #expect(throws: SocketError.self) { try SocketAddress(parsing: text, defaultPort: 2947) }
    }

    @Test("a Unix path longer than sun_path is refused")
    func longPath() {
        let path = "/" + String(repeating: "x", count: 200)
        #expect(throws: SocketError.invalidAddress(path, reason: "a Unix socket path must be 1 to 107 bytes")) {
            try SocketAddress(parsing: path, defaultPort: 0)
        }
    }
}

@Suite("Stream sockets over loopback")
struct StreamSocketTests {
    @Test("a listener on port 0 gets a port; bytes go both ways; a close is the end of the stream",
          arguments: ["127.0.0.1:0", "[::1]:0"])
    func loopback(text: String) throws {
        let listener = try SocketListener(address: SocketAddress(parsing: text, defaultPort: 0))
        let port = try #require(listener.address.port)
        #expect(port != 0)
        let client = try SocketConnection.connect(to: listener.address)
        let server = try acceptWaiting(listener)
        #expect(server.peer.contains(text.hasPrefix("[") ? "::1" : "127.0.0.1"))
        try client.sendAll(Array("?VERSION;\n".utf8))
        #expect(try readExactly(10) { try server.receive(timeout: $0) } == Array("?VERSION;\n".utf8))
        let reply = Array("{\"class\":\"VERSION\"}\r\n".utf8)
        let sent = reply.withUnsafeBytes { try? server.send($0) }
        #expect(sent == reply.count)
        #expect(try readExactly(reply.count) { try client.receive(timeout: $0) } == reply)
        client.close()
        var buffer = [UInt8](repeating: 0, count: 16)
        var outcome = ReceiveOutcome.wouldBlock
        for _ in 0..<100 where outcome == .wouldBlock {
            outcome = try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
            if outcome == .wouldBlock { _ = try server.receive(maxCount: 0, timeout: .milliseconds(10)) }
        }
        #expect(outcome == .endOfStream)
        server.close()
        #expect(server.isClosed)
        #expect(throws: SocketError.closed(device: "client \(server.peer)")) {
            try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
        }
    }

    @Test("sending to a peer that has gone is an error, not SIGPIPE")
    func peerGone() throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let client = try SocketConnection.connect(to: listener.address)
        let server = try acceptWaiting(listener)
        client.close()
        let chunk = [UInt8](repeating: 0x41, count: 65536)
        var caught: SocketError?
        for _ in 0..<200 where caught == nil {
            do {
                _ = try chunk.withUnsafeBytes { try server.send($0) }
                _ = try? server.receive(maxCount: 0, timeout: .milliseconds(5))
            } catch let error as SocketError {
                caught = error
            }
        }
        let error = try #require(caught)
        #expect(error.deviceIsGone)
        #expect(error.failedCall?.call == "send")
    }

    @Test("two listeners on one port: the second is told the address is in use")
    func inUse() throws {
        let first = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let port = try #require(first.address.port)
        #expect {
            _ = try SocketListener(address: .ipv4("127.0.0.1", port: port))
        } throws: { error in
            guard case .addressInUse(let failure) = error as? SocketError else { return false }
            return failure.call == "bind" && failure.errno == .addressInUse
        }
        // IPv4 and IPv6 wildcards coexist on one port (the IPv6 listener is IPv6-only).
        let wildcard4 = try SocketListener(address: .ipv4("0.0.0.0", port: 0))
        let shared = try #require(wildcard4.address.port)
        let wildcard6 = try SocketListener(address: .ipv6("::", port: shared))
        #expect(wildcard6.address == .ipv6("::", port: shared))
    }

    @Test("a Unix listener takes over a stale socket file, refuses a live one, and removes its path")
    func unixSocket() throws {
        let (path, cleanUp) = try temporarySocketPath("gpsd.sock")
        defer { cleanUp() }
        let first = try SocketListener(address: .unix(path))
        let client = try SocketConnection.connect(to: .unix(path))
        let server = try acceptWaiting(first)
        #expect(server.peer == "unix \(path)")
        try client.sendAll([1, 2, 3])
        #expect(try readExactly(3) { try server.receive(timeout: $0) } == [1, 2, 3])
        #expect(throws: SocketError.self) { try SocketListener(address: .unix(path)) }
        // Leave the file behind as a crashed server would: close the descriptor without unlinking.
        first.descriptor.close()
        var info = stat()
        #expect(stat(path, &info) == 0)
        let second = try SocketListener(address: .unix(path))
        second.close()
        #expect(stat(path, &info) == -1)
        #expect(throws: SocketError.self) { try SocketConnection.connect(to: .unix(path)) }
    }
}

@Suite("Poller, waker and threads")
struct PollerTests {
    @Test("an idle poller returns nothing; a waker makes it ready until drained")
    func waker() throws {
        let poller = try Poller()
        let waker = try Waker()
        try poller.add(waker.rawDescriptor, token: 7, interest: .readable)
        #expect(try poller.wait(timeout: .zero).isEmpty)
        waker.wake()
        waker.wake()
        #expect(try poller.wait(timeout: .zero) == [Poller.Event(token: 7, isReadable: true, isWritable: false,
                                                                 isHangUp: false)])
        waker.drain()
        #expect(try poller.wait(timeout: .zero).isEmpty)
        poller.remove(waker.rawDescriptor)
        waker.wake()
        #expect(try poller.wait(timeout: .zero).isEmpty)
    }

    @Test("a listener is readable with a waiting connection; a connection is writable, then readable")
    func readiness() throws {
        let poller = try Poller()
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        try poller.add(listener.rawDescriptor, token: 1, interest: .readable)
        let client = try SocketConnection.connect(to: listener.address)
        #expect(try poller.wait(timeout: .seconds(5)).map(\.token) == [1])
        let server = try #require(try listener.accept())
        #expect(try listener.accept() == nil)
        try poller.add(server.rawDescriptor, token: 2, interest: [.readable, .writable])
        #expect(try poller.wait(timeout: .seconds(5)).first { $0.token == 2 }?.isWritable == true)
        try poller.modify(server.rawDescriptor, token: 2, interest: .readable)
        #expect(try poller.wait(timeout: .zero).isEmpty)
        try client.sendAll([9])
        let event = try #require(try poller.wait(timeout: .seconds(5)).first)
        #expect(event.token == 2 && event.isReadable && !event.isHangUp)
        var byte: [UInt8] = [0]
        #expect(try byte.withUnsafeMutableBytes { try server.receive(into: $0) } == .received(1))
        client.close()
        let hangUp = try #require(try poller.wait(timeout: .seconds(5)).first)
        #expect(hangUp.isHangUp)
    }

    @Test("a thread from another thread's wake: the loop thread wakes, runs, and is joined")
    func loopThread() throws {
        let poller = try Poller()
        let waker = try Waker()
        try poller.add(waker.rawDescriptor, token: 1, interest: .readable)
        let woke = Atomic<Int>(0)
        let thread = try LoopThread(name: "test-loop") {
            while woke.load(ordering: .acquiring) == 0 {
                if let events = try? poller.wait(), !events.isEmpty {
                    waker.drain()
                    woke.store(1, ordering: .releasing)
                }
            }
        }
        waker.wake()
        thread.join()
        thread.join()
        #expect(woke.load(ordering: .acquiring) == 1)
    }
}

@Suite("Termination signals", .serialized)
struct SignalWatcherTests {
    @Test("SIGTERM and SIGINT become readable bytes on the watcher's pipe")
    func signals() throws {
        let watcher = try SignalWatcher()
        let poller = try Poller()
        try poller.add(watcher.rawDescriptor, token: 3, interest: .readable)
        SignalWatcher.raise(.terminate)
        SignalWatcher.raise(.interrupt)
        #expect(try poller.wait(timeout: .seconds(5)).map(\.token) == [3])
        var received: [SignalWatcher.Signal] = []
        for _ in 0..<50 where received.count < 2 {
            received += watcher.drain()
            if received.count < 2 { _ = try poller.wait(timeout: .milliseconds(20)) }
        }
        // Two pending signals may be delivered in either order (the kernel takes the lower number first).
        #expect(Set(received) == [.terminate, .interrupt] && received.count == 2)
        #expect(watcher.drain().isEmpty)
        watcher.close()
    }

    @Test("a failed sigaction leaves no handler installed and names the call")
    func failure() throws {
        let mock = SeamMock()
        mock.fail("sigaction", with: .invalidArgument)
        #expect {
            try SeamMock.$current.withValue(mock) { _ = try SignalWatcher() }
        } throws: { error in
            (error as? SystemError)?.failedCall?.call == "sigaction"
        }
    }
}

@Suite("The syscall seam: sockets and the poller")
struct SocketSeamTests {
    @Test("EINTR is retried in accept4, epoll_wait returns empty, socket calls are recorded")
    func interrupts() throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let client = try SocketConnection.connect(to: listener.address)
        let poller = try Poller()
        try poller.add(listener.rawDescriptor, token: 1, interest: .readable)
        _ = try poller.wait(timeout: .seconds(5))
        let mock = SeamMock()
        mock.fail("accept4", with: .interrupted, times: 3)
        mock.fail("epoll_wait", with: .interrupted)
        let accepted = try SeamMock.$current.withValue(mock) { () throws -> SocketConnection? in
            #expect(try poller.wait(timeout: .seconds(5)).isEmpty)
            return try listener.accept()
        }
        #expect(accepted != nil)
        #expect(mock.count("accept4") == 4)
        #expect(mock.pendingFailures == 0)
        _ = client
    }

    static let mappings: [(SystemCall, Errno, String)] = [
        ("socket", .tooManyOpenFiles, "outOfDescriptors"),
        ("setsockopt(SO_REUSEADDR)", .invalidArgument, "failed"),
        ("bind", .addressInUse, "addressInUse"),
        ("bind", .permissionDenied, "permissionDenied"),
        ("bind", .addressNotAvailable, "addressNotAvailable"),
        ("listen", .addressInUse, "addressInUse"),
        ("accept4", .tooManyOpenFiles, "outOfDescriptors"),
        ("accept4", .tooManyOpenFilesInSystem, "outOfDescriptors"),
        ("recv", .connectionReset, "peerGone"),
        ("send", .brokenPipe, "peerGone"),
    ]

    @Test("an injected error becomes the typed socket error, naming the call", arguments: mappings)
    func mapping(call: SystemCall, errno: Errno, expected: String) throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let client = try SocketConnection.connect(to: listener.address)
        let server = try acceptWaiting(listener)
        _ = client
        let mock = SeamMock()
        mock.fail(call, with: errno)
        #expect {
            try SeamMock.$current.withValue(mock) {
                switch call.rawValue {
                case "socket", "setsockopt(SO_REUSEADDR)", "bind", "listen":
                    _ = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
                case "accept4":
                    _ = try listener.accept()
                case "recv":
                    var buffer = [UInt8](repeating: 0, count: 4)
                    _ = try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
                default:
                    _ = try [UInt8](repeating: 1, count: 4).withUnsafeBytes { try server.send($0) }
                }
            }
        } throws: { error in
            guard let error = error as? SocketError else { return false }
            return kind(error) == expected && error.failedCall?.call == call.rawValue
                && error.failedCall?.errno == errno
        }
        #expect(mock.pendingFailures == 0)
    }

    static let pollerMappings: [(SystemCall, Errno, String)] = [
        ("epoll_create1", .tooManyOpenFiles, "outOfDescriptors"),
        ("epoll_ctl", .noMemory, "failed"),
        ("epoll_wait", .invalidArgument, "failed"),
        ("eventfd", .tooManyOpenFiles, "outOfDescriptors"),
        ("eventfd", .tooManyOpenFilesInSystem, "outOfDescriptors"),
        ("pipe", .tooManyOpenFiles, "outOfDescriptors"),
        ("fcntl(F_SETFL)", .invalidArgument, "failed"),
        ("pthread_create", .wouldBlock, "failed"),
    ]

    @Test("the poller, wakers, the signal pipe and threads fail with a SystemError naming the call",
          arguments: pollerMappings)
    func systemMapping(call: SystemCall, errno: Errno, expected: String) throws {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let mock = SeamMock()
        mock.fail(call, with: errno)
        #expect {
            try SeamMock.$current.withValue(mock) {
                switch call.rawValue {
                case "epoll_create1":
                    _ = try Poller()
                case "epoll_ctl":
                    try Poller().add(listener.rawDescriptor, token: 1, interest: .readable)
                case "epoll_wait":
                    _ = try Poller().wait(timeout: .zero)
                case "eventfd":
                    _ = try Waker()
                case "pipe", "fcntl(F_SETFL)":
                    _ = try SignalWatcher(signals: [])
                default:
                    _ = try LoopThread(name: "test-unstarted") {}
                }
            }
        } throws: { error in
            guard let error = error as? SystemError else { return false }
            return kind(error) == expected && error.failedCall?.call == call.rawValue
                && error.failedCall?.errno == errno
        }
        #expect(mock.pendingFailures == 0)
    }

    @Test("a closed poller says so as a SystemError")
    func closedPoller() throws {
        let poller = try Poller()
        poller.close()
        #expect(throws: SystemError.closed(device: "epoll")) { try poller.wait(timeout: .zero) }
        #expect(throws: SystemError.closed(device: "epoll")) { try poller.add(0, token: 1, interest: .readable) }
    }
}

/// A short name per error case, so tables can say which case they expect.
func kind(_ error: SocketError) -> String {
    switch error {
    case .addressInUse: "addressInUse"
    case .permissionDenied: "permissionDenied"
    case .addressNotAvailable: "addressNotAvailable"
    case .connectionRefused: "connectionRefused"
    case .peerGone: "peerGone"
    case .outOfDescriptors: "outOfDescriptors"
    case .invalidAddress: "invalidAddress"
    case .unresolvedName: "unresolvedName"
    case .closed: "closed"
    case .failed: "failed"
    }
}

/// A short name per error case, so tables can say which case they expect.
func kind(_ error: SystemError) -> String {
    switch error {
    case .outOfDescriptors: "outOfDescriptors"
    case .closed: "closed"
    case .failed: "failed"
    }
}

@Suite("Unix datagram sockets")
struct DatagramSocketTests {
    @Test("a datagram sent to a bound socket arrives whole; with nobody bound, the send is refused")
    func delivery() throws {
        let (path, cleanUp) = try temporarySocketPath("chrony.sock")
        defer { cleanUp() }
        #expect(throws: SocketError.self) { try DatagramSocket.connect(to: path) }
        let receiver = try DatagramSocket.bind(path)
        let sender = try DatagramSocket.connect(to: path)
        let datagram = (0..<40).map { UInt8($0 * 3) }
        #expect(try sender.send(datagram))
        #expect(try receiver.receive(timeout: .seconds(5)) == datagram)
        #expect(try receiver.receive(timeout: .zero) == nil)
        receiver.close()
        #expect(throws: SocketError.self) { try sender.send(datagram) }
    }
}
