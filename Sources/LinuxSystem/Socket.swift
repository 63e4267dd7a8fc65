// Stream sockets: a non-blocking listener (TCP over IPv4 or IPv6, or a Unix socket) and the
// connections it accepts, plus a client-side connect. Each object owns its descriptor and closes it
// once; a server uses them from its event-loop thread only.
internal import CLinuxShims
internal import Glibc
internal import Synchronization

/// A descriptor owned by one object and closed exactly once.
final class OwnedDescriptor: Sendable {
    let device: String
    private let value: Atomic<CInt>

    init(_ fd: CInt, device: String) {
        self.device = device
        value = Atomic(fd)
    }

    deinit { close() }

    /// The descriptor, or `nil` once closed.
    var fd: CInt? {
        let fd = value.load(ordering: .acquiring)
        return fd >= 0 ? fd : nil
    }

    /// Closes the descriptor (`close`); later calls do nothing. Returns whether this call closed it.
    @discardableResult
    func close() -> Bool {
        let fd = value.exchange(-1, ordering: .acquiringAndReleasing)
        guard fd >= 0 else { return false }
        _ = system_close(fd, device)
        return true
    }
}

/// A listening stream socket (`socket`, `setsockopt(SO_REUSEADDR)`, `bind`, `listen`), non-blocking and
/// close-on-exec. IPv6 listeners are IPv6-only (`IPV6_V6ONLY`), so `0.0.0.0` and `::` can both listen
/// on one port. A Unix listener removes its path when closed.
public final class SocketListener: Sendable {
    /// The bound address; for TCP port 0, the port the kernel chose (`getsockname`).
    public let address: SocketAddress
    let descriptor: OwnedDescriptor

    /// Listens on `address` with room for `backlog` pending connections. A Unix socket path left
    /// behind by a previous run is removed first when nothing answers on it.
    public init(address: SocketAddress, backlog: Int = 128) throws(SocketError) {
        let device = "listener \(address)"
        let fd = try Self.check(retryingInterrupts("socket", device) {
            system_socket(address.family, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
                | CInt(SOCK_CLOEXEC.rawValue), 0, device)
        })
        let owned = OwnedDescriptor(fd, device: device)
        switch address {
        case .ipv4, .ipv6:
            try Self.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)", device)
            if case .ipv6 = address {
                try Self.setOption(fd, CInt(IPPROTO_IPV6), IPV6_V6ONLY, 1, "setsockopt(IPV6_V6ONLY)", device)
            }
        case .unix:
            break
        }
        do throws(SocketError) {
            try Self.bind(fd, address, device)
        } catch .addressInUse(let failure) {
            // A Unix socket file outlives its server; remove it only if nobody accepts on it.
            guard case .unix(let path) = address, !Self.somebodyListens(on: address) else {
                throw .addressInUse(failure)
            }
            _ = system_unlink(path)
            try Self.bind(fd, address, device)
        }
        _ = try Self.check(retryingInterrupts("listen", device) {
            system_listen(fd, CInt(clamping: backlog), device)
        })
        var bound = address
        if case .unix = address {} else {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let ok = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    system_getsockname(fd, $0, &length, device) == 0
                }
            }
            if ok, let actual = SocketAddress.from(&storage), let port = actual.port {
                bound = address.with(port: port)
            }
        }
        self.address = bound
        self.descriptor = owned
    }

    deinit { close() }

    /// The descriptor to register with a ``Poller`` (readable when a connection is waiting).
    public var rawDescriptor: CInt { descriptor.fd ?? -1 }

    /// Takes one waiting connection (`accept4` with `SOCK_NONBLOCK | SOCK_CLOEXEC`), or returns `nil`
    /// when none is waiting or it was aborted before it was taken. Throws
    /// ``SocketError/outOfDescriptors(_:)`` when the process has no descriptor left: the caller
    /// should stop accepting until a connection closes.
    public func accept() throws(SocketError) -> SocketConnection? {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                retryingInterrupts("accept4", descriptor.device) {
                    system_accept4(fd, address, &length,
                                   CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue), descriptor.device)
                }
            }
        }
        switch result {
        case .success(let connection):
            let peer: String
            if case .unix(let path) = address {
                peer = "unix \(path)"
            } else {
                peer = SocketAddress.from(&storage)?.description ?? "unknown peer"
            }
            return SocketConnection(OwnedDescriptor(connection, device: "client \(peer)"), peer: peer)
        case .failure(let failure):
            switch failure.errno {
            case Errno.wouldBlock?, Errno.connectionAborted?, Errno(rawValue: EPROTO)?, Errno(rawValue: EPERM)?:
                return nil
            default:
                throw SocketError(failure)
            }
        }
    }

    /// Stops listening (`close`) and removes a Unix socket's path (`unlink`).
    public func close() {
        guard descriptor.close() else { return }
        if case .unix(let path) = address { _ = system_unlink(path) }
    }

    static func bind(_ fd: CInt, _ address: SocketAddress, _ device: String) throws(SocketError) {
        let result = try address.withSockaddr { pointer, length in
            retryingInterrupts("bind", device) { system_bind(fd, pointer, length, device) }
        }
        _ = try check(result)
    }

    private static func somebodyListens(on address: SocketAddress) -> Bool {
        (try? SocketConnection.connect(to: address)) != nil
    }

    static func setOption(
        _ fd: CInt, _ level: CInt, _ name: CInt, _ value: CInt, _ call: SystemCall, _ device: String
    ) throws(SocketError) {
        var value = value
        _ = try check(retryingInterrupts(call, device) {
            system_setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<CInt>.size), call, device)
        })
    }

    static func check<T>(_ result: Result<T, FailedCall>) throws(SocketError) -> T {
        switch result {
        case .success(let value): return value
        case .failure(let failure): throw SocketError(failure)
        }
    }
}

/// What a non-blocking receive saw.
public enum ReceiveOutcome: Equatable, Sendable {
    /// This many bytes arrived.
    case received(Int)
    /// Nothing is waiting now (`EAGAIN`).
    case wouldBlock
    /// The peer closed its side: no more bytes will come.
    case endOfStream
}

/// A connected stream socket. Accepted connections are non-blocking; ``connect(to:)`` makes a
/// blocking client connection (for tests and tools) that ``receive(maxCount:timeout:)`` can wait on.
public final class SocketConnection: Sendable {
    /// The peer's address, e.g. `127.0.0.1:53012`, or `unix PATH`.
    public let peer: String
    let descriptor: OwnedDescriptor

    init(_ descriptor: OwnedDescriptor, peer: String) {
        self.descriptor = descriptor
        self.peer = peer
    }

    deinit { close() }

    /// The descriptor to register with a ``Poller``.
    public var rawDescriptor: CInt { descriptor.fd ?? -1 }

    /// Whether ``close()`` has run.
    public var isClosed: Bool { descriptor.fd == nil }

    /// Connects to `address` (`socket`, `connect`), blocking until connected.
    public static func connect(to address: SocketAddress) throws(SocketError) -> SocketConnection {
        let device = "connection to \(address)"
        let fd = try SocketListener.check(retryingInterrupts("socket", device) {
            system_socket(address.family, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, device)
        })
        let owned = OwnedDescriptor(fd, device: device)
        let result = try address.withSockaddr { pointer, length in
            // connect is not restartable after EINTR (it continues in the background): report it.
            system_connect(fd, pointer, length, device) == 0
                ? Result<CInt, FailedCall>.success(0)
                : .failure(FailedCall(call: "connect", device: device, errno: .current))
        }
        _ = try SocketListener.check(result)
        return SocketConnection(owned, peer: address.description)
    }

    /// Reads what is waiting, at most `buffer.count` bytes (`recv`), without blocking on a
    /// non-blocking socket.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> ReceiveOutcome {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        let result = retryingInterrupts("recv", descriptor.device) {
            system_recv(fd, buffer.baseAddress, buffer.count, descriptor.device)
        }
        switch result {
        case .success(0): return buffer.isEmpty ? .received(0) : .endOfStream
        case .success(let count): return .received(count)
        case .failure(let failure) where failure.errno == .wouldBlock: return .wouldBlock
        case .failure(let failure): throw SocketError(failure)
        }
    }

    /// Waits up to `timeout` for bytes (`poll`, `read`) and returns them; empty when none came in
    /// time. Throws ``SocketError/peerGone(_:)`` at the end of the stream.
    public func receive(maxCount: Int = 65536, timeout: Duration) throws(SocketError) -> [UInt8] {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        switch DescriptorIO.read(fd, device: descriptor.device, maxCount: maxCount, timeout: timeout) {
        case .bytes(let bytes): return bytes
        case .timedOut: return []
        case .hungUp(let failure): throw .peerGone(failure)
        case .failed(let failure): throw SocketError(failure)
        }
    }

    /// Writes as much of `bytes` as the socket takes now (`send` with `MSG_NOSIGNAL`) and returns
    /// the count, 0 when the socket buffer is full. A peer that went away gives
    /// ``SocketError/peerGone(_:)``, never `SIGPIPE`.
    public func send(_ bytes: UnsafeRawBufferPointer) throws(SocketError) -> Int {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        guard !bytes.isEmpty else { return 0 }
        let result = retryingInterrupts("send", descriptor.device) {
            system_send(fd, bytes.baseAddress, bytes.count, 0, descriptor.device)
        }
        switch result {
        case .success(let count): return count
        case .failure(let failure) where failure.errno == .wouldBlock: return 0
        case .failure(let failure): throw SocketError(failure)
        }
    }

    /// Writes all of `bytes`, waiting while the socket buffer is full (`send`, `poll`); for client
    /// connections made by ``connect(to:)``.
    public func sendAll(_ bytes: [UInt8]) throws(SocketError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result { () throws(SocketError) in try send(UnsafeRawBufferPointer(rebasing: buffer[offset...])) }
            }
            let sent = try result.get()
            if sent == 0 {
                guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = retryingInterrupts("poll", descriptor.device) { system_poll(&pfd, 1, 1000, descriptor.device) }
            }
            offset += sent
        }
    }

    /// Closes the sending direction (`shutdown(SHUT_WR)`): the peer reads the end of the stream.
    public func shutdownWrite() {
        guard let fd = descriptor.fd else { return }
        _ = system_shutdown(fd, CInt(SHUT_WR), descriptor.device)
    }

    /// Closes the connection (`close`); later calls do nothing.
    public func close() {
        descriptor.close()
    }
}
