// Unix datagram sockets, for one datagram per message to a local service: GPSD's chrony feed sends
// its samples to chronyd's SOCK refclock over one.
internal import CLinuxShims
internal import Glibc

/// A Unix datagram socket (`socket(AF_UNIX, SOCK_DGRAM)`): the sending side connects to a path
/// (chronyd's refclock socket), the receiving side binds one (a test standing in for chronyd).
public final class DatagramSocket: Sendable {
    /// The socket path.
    public let path: String
    private let descriptor: OwnedDescriptor
    private let bound: Bool

    private init(path: String, bind: Bool) throws(SocketError) {
        let address = SocketAddress.unix(path)
        let device = "datagram \(path)"
        let fd = try SocketListener.check(retryingInterrupts("socket", device) {
            system_socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
                | CInt(SOCK_CLOEXEC.rawValue), 0, device)
        })
        let owned = OwnedDescriptor(fd, device: device)
        if bind {
            try SocketListener.bind(fd, address, device)
        } else {
            let result = try address.withSockaddr { pointer, length in
                system_connect(fd, pointer, length, device) == 0
                    ? Result<CInt, FailedCall>.success(0)
                    : .failure(FailedCall(call: "connect", device: device, errno: .current))
            }
            _ = try SocketListener.check(result)
        }
        self.path = path
        self.bound = bind
        self.descriptor = owned
    }

    deinit { close() }

    /// Connects to the socket a server bound at `path` (`socket`, `connect`). Fails with
    /// ``SocketError/connectionRefused(_:)`` while nobody has bound it (chronyd not running).
    public static func connect(to path: String) throws(SocketError) -> DatagramSocket {
        try DatagramSocket(path: path, bind: false)
    }

    /// Binds `path` to receive datagrams (`socket`, `bind`); the path is removed on ``close()``.
    public static func bind(_ path: String) throws(SocketError) -> DatagramSocket {
        try DatagramSocket(path: path, bind: true)
    }

    /// The descriptor to register with a ``Poller``.
    public var rawDescriptor: CInt { descriptor.fd ?? -1 }

    /// Sends one datagram (`send` with `MSG_NOSIGNAL`, non-blocking). Returns `false` when the
    /// receiver's queue is full and the datagram was dropped; throws when the receiver went away.
    @discardableResult
    public func send(_ bytes: [UInt8]) throws(SocketError) -> Bool {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        let result = bytes.withUnsafeBytes { raw in
            retryingInterrupts("send", descriptor.device) {
                system_send(fd, raw.baseAddress, raw.count, 0, descriptor.device)
            }
        }
        switch result {
        case .success: return true
        case .failure(let failure) where failure.errno == .wouldBlock: return false
        case .failure(let failure):
            throw failure.errno == .connectionRefused || failure.errno == .noSuchFileOrDirectory
                ? .peerGone(failure) : SocketError(failure)
        }
    }

    /// Waits up to `timeout` for one datagram (`poll`, `recv`); `nil` when none came in time.
    public func receive(timeout: Duration) throws(SocketError) -> [UInt8]? {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = retryingInterrupts("poll", descriptor.device) {
            system_poll(&pfd, 1, timeout.pollMilliseconds, descriptor.device)
        }
        guard case .success(let count) = ready, count > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let received = buffer.withUnsafeMutableBytes { raw in
            retryingInterrupts("recv", descriptor.device) {
                system_recv(fd, raw.baseAddress, raw.count, descriptor.device)
            }
        }
        switch received {
        case .success(let n): return Array(buffer[0..<n])
        case .failure(let failure) where failure.errno == .wouldBlock: return nil
        case .failure(let failure): throw SocketError(failure)
        }
    }

    /// Closes the socket; a bound one also removes its path.
    public func close() {
        guard descriptor.close() else { return }
        if bound { _ = system_unlink(path) }
    }
}
