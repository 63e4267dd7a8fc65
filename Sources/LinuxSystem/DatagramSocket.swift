// chrony's SOCK reference clock: chronyd binds a Unix datagram socket (`refclock SOCK PATH`) and reads
// one `struct sock_sample` per datagram (chrony refclock_sock.c). This side connects and sends.
internal import CLinuxShims
internal import Glibc
internal import Synchronization

/// One time sample for chrony: at system time `systemTime`, the true time was `offset` seconds later.
public struct ChronySample: Hashable, Sendable {
    /// System (`CLOCK_REALTIME`) time of the measurement, nanoseconds since the Unix epoch.
    public var systemTime: Int64
    /// True time minus system time at `systemTime`, seconds.
    public var offset: Double
    /// A pulse (PPS) sample, whose whole seconds chrony takes from another source.
    public var isPulse: Bool
    /// 0 no leap second, 1 insert one, 2 delete one (at the end of the UTC day).
    public var leap: Int32

    public init(systemTime: Int64, offset: Double, isPulse: Bool = false, leap: Int32 = 0) {
        self.systemTime = systemTime
        self.offset = offset
        self.isPulse = isPulse
        self.leap = leap
    }

    /// The datagram chrony reads: `struct sock_sample` in the platform's layout, magic included.
    public var datagram: [UInt8] {
        var sample = cshim_chrony_sample()
        let seconds = systemTime >= 0 ? systemTime / 1_000_000_000 : (systemTime - 999_999_999) / 1_000_000_000
        let nanoseconds = systemTime - seconds * 1_000_000_000
        sample.tv.tv_sec = time_t(truncatingIfNeeded: seconds)
        sample.tv.tv_usec = suseconds_t(truncatingIfNeeded: nanoseconds / 1000)
        sample.offset = offset
        sample.pulse = isPulse ? 1 : 0
        sample.leap = leap
        sample._pad = 0
        sample.magic = CInt(bitPattern: UInt32(CSHIM_CHRONY_SOCK_MAGIC))
        return withUnsafeBytes(of: &sample) { Array($0) }
    }

    /// Reads a datagram in `struct sock_sample` layout (what a test standing in for chronyd receives),
    /// or `nil` when the size or the magic is wrong.
    public init?(datagram: [UInt8]) {
        guard datagram.count == MemoryLayout<cshim_chrony_sample>.size else { return nil }
        var sample = cshim_chrony_sample()
        withUnsafeMutableBytes(of: &sample) { $0.copyBytes(from: datagram) }
        guard UInt32(bitPattern: sample.magic) == UInt32(CSHIM_CHRONY_SOCK_MAGIC) else { return nil }
        systemTime = Int64(sample.tv.tv_sec) * 1_000_000_000 + Int64(sample.tv.tv_usec) * 1000
        offset = sample.offset
        isPulse = sample.pulse != 0
        leap = sample.leap
    }
}

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
