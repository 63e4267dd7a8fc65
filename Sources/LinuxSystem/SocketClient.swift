// A client connection that a thread of its own drives with non-blocking calls, and that another
// thread can abandon at any moment through a Waker: the connect, and every wait for the socket,
// end when the waker is woken. (A blocking `connect` cannot be interrupted; a caster that never
// answers would hold its thread for the kernel's two-minute time-out.)
internal import CLinuxShims
internal import Glibc

/// What a wait on a client socket saw.
public struct SocketReadiness: Sendable, Equatable {
    public var readable = false
    public var writable = false
    /// The waker was woken (and drained): the owner wants the thread back.
    public var woken = false
    /// `POLLHUP`/`POLLERR`: the next read or write says why.
    public var hungUp = false

    public init(readable: Bool = false, writable: Bool = false, woken: Bool = false, hungUp: Bool = false) {
        self.readable = readable
        self.writable = writable
        self.woken = woken
        self.hungUp = hungUp
    }
}

extension SocketConnection {
    /// Connects to `address` with a non-blocking socket (`socket`, `connect`, `poll` until it is
    /// writable or `wake` is woken, `getsockopt(SO_ERROR)`). Returns nil when `wake` was woken first:
    /// the attempt is abandoned and its socket closed. The connection stays non-blocking: read it with
    /// ``receive(into:)`` after ``wait(readable:writable:wake:)``.
    public static func connect(to address: SocketAddress, wake: Waker) throws(SocketError) -> SocketConnection? {
        let device = "connection to \(address)"
        let fd = try SocketListener.check(retryingInterrupts("socket", device) {
            system_socket(address.family, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
                | CInt(SOCK_CLOEXEC.rawValue), 0, device)
        })
        let connection = SocketConnection(OwnedDescriptor(fd, device: device), peer: address.description)
        let started = try address.withSockaddr { pointer, length in system_connect(fd, pointer, length, device) }
        if started != 0 {
            let errno = Errno.current
            guard errno == Errno(rawValue: EINPROGRESS) || errno == .interrupted else {
                throw SocketError(FailedCall(call: "connect", device: device, errno: errno))
            }
            while true {
                let readiness = try connection.wait(readable: false, writable: true, wake: wake)
                if readiness.woken { return nil }
                if readiness.writable || readiness.hungUp { break }
            }
            var code: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            _ = try SocketListener.check(retryingInterrupts("getsockopt(SO_ERROR)", device) {
                system_getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length, "getsockopt(SO_ERROR)", device)
            })
            if code != 0 {
                throw SocketError(FailedCall(call: "connect", device: device, errno: Errno(rawValue: code)))
            }
        }
        return connection
    }

    /// Waits with no time-out (`poll` on the socket and `wake`'s eventfd) until the socket is
    /// readable (when `readable`), writable (when `writable`), hung up, or `wake` is woken. A wake
    /// is drained and reported even when the socket is ready too.
    public func wait(readable: Bool, writable: Bool, wake: Waker) throws(SocketError) -> SocketReadiness {
        guard let fd = descriptor.fd else { throw .closed(device: descriptor.device) }
        let device = descriptor.device
        var events: Int16 = 0
        if readable { events |= Int16(POLLIN) }
        if writable { events |= Int16(POLLOUT) }
        let polled = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) {
            pfds -> Result<(CInt, CInt), FailedCall> in
            guard let base = pfds.baseAddress else {
                return .failure(FailedCall(call: "poll", device: device, errno: .noMemory))
            }
            pfds[0] = pollfd(fd: fd, events: events, revents: 0)
            pfds[1] = pollfd(fd: wake.rawDescriptor, events: Int16(POLLIN), revents: 0)
            return retryingInterrupts("poll", device) { system_poll(base, 2, -1, device) }
                .map { _ in (CInt(pfds[0].revents), CInt(pfds[1].revents)) }
        }
        let (socket, waker) = try SocketListener.check(polled)
        if socket & CInt(POLLNVAL) != 0 {
            throw SocketError(FailedCall(call: "poll", device: device, errno: .badFileDescriptor))
        }
        let readiness = SocketReadiness(
            readable: socket & CInt(POLLIN) != 0, writable: socket & CInt(POLLOUT) != 0,
            woken: waker & CInt(POLLIN) != 0, hungUp: socket & CInt(POLLHUP | POLLERR) != 0)
        if readiness.woken { wake.drain() }
        return readiness
    }
}

func system_getsockopt(
    _ fd: CInt, _ level: CInt, _ name: CInt, _ value: UnsafeMutableRawPointer,
    _ length: UnsafeMutablePointer<socklen_t>, _ call: SystemCall, _ device: String
) -> CInt {
    if let errno = seamEnter(call, device) { return failC(errno) }
    return Glibc.getsockopt(fd, level, name, value, length)
}
