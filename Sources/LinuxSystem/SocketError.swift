// Typed errors of sockets (stream and datagram), and the errnos they meet.
internal import Glibc

extension Errno {
    /// `EADDRINUSE`: the address is already in use (another server listens on the port).
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    /// `EADDRNOTAVAIL`: the address is not one of this machine's.
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    /// `EAFNOSUPPORT`: the address family is not supported (IPv6 disabled in the kernel).
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
    /// `ECONNREFUSED`: nobody listens at the address.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ECONNRESET`: the peer reset the connection.
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    /// `ECONNABORTED`: a connection was aborted before `accept` took it.
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    /// `EMFILE`: this process has no descriptor left.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// `ENFILE`: the system has no descriptor left.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// `ENOBUFS`: no buffer space (the kernel is short of memory for sockets).
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    /// `ENOTCONN`: the socket is not connected.
    public static let notConnected = Errno(rawValue: ENOTCONN)
    /// `ENAMETOOLONG`: a Unix socket path longer than `sun_path`.
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
}

/// Why a socket call failed (the poller's, the wakers' and the threads' failures are ``SystemError``s).
public enum SocketError: HardwareFault, Equatable {
    /// `EADDRINUSE`: another program listens on the address (a system gpsd on port 2947?).
    case addressInUse(FailedCall)
    /// `EACCES`/`EPERM`: a privileged port or a Unix socket directory the user may not write.
    case permissionDenied(FailedCall)
    /// `EADDRNOTAVAIL`/`EAFNOSUPPORT`: the address does not belong to this machine, or its family
    /// (IPv6) is off.
    case addressNotAvailable(FailedCall)
    /// `ECONNREFUSED`/`ENOENT` on connect: nobody listens there.
    case connectionRefused(FailedCall)
    /// The peer went away: `ECONNRESET`, `EPIPE`, or end of stream where more was expected.
    case peerGone(FailedCall)
    /// `EMFILE`/`ENFILE`: no descriptor left for a new connection.
    case outOfDescriptors(FailedCall)
    /// An address the parser cannot read, with the reason.
    case invalidAddress(String, reason: String)
    /// A host name with no address (`getaddrinfo`), with the resolver's reason.
    case unresolvedName(String, reason: String)
    /// The socket was closed by `close()`.
    case closed(device: String)
    /// Any other failed call.
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on.
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.addressInUse?: self = .addressInUse(failure)
        case Errno.permissionDenied?, Errno.notPermitted?: self = .permissionDenied(failure)
        case Errno.addressNotAvailable?, Errno.addressFamilyNotSupported?: self = .addressNotAvailable(failure)
        case Errno.connectionRefused?: self = .connectionRefused(failure)
        case Errno.noSuchFileOrDirectory? where failure.call == "connect": self = .connectionRefused(failure)
        case Errno.connectionReset?, Errno.brokenPipe?, Errno.notConnected?: self = .peerGone(failure)
        case Errno.tooManyOpenFiles?, Errno.tooManyOpenFilesInSystem?: self = .outOfDescriptors(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .addressInUse(let f), .permissionDenied(let f), .addressNotAvailable(let f), .connectionRefused(let f),
            .peerGone(let f), .outOfDescriptors(let f), .failed(let f):
            f
        case .invalidAddress, .unresolvedName, .closed:
            nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .peerGone, .closed, .connectionRefused: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .addressInUse(let f): "address already in use (another gpsd?): \(f)"
        case .permissionDenied(let f): "permission denied: \(f)"
        case .addressNotAvailable(let f): "address not available on this machine: \(f)"
        case .connectionRefused(let f): "connection refused: \(f)"
        case .peerGone(let f): "peer went away: \(f)"
        case .outOfDescriptors(let f): "out of file descriptors: \(f)"
        case .invalidAddress(let text, let reason): "invalid address '\(text)': \(reason)"
        case .unresolvedName(let host, let reason): "cannot resolve '\(host)': \(reason)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "socket call failed: \(f)"
        }
    }
}
