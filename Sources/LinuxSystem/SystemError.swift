// The typed error of the calls that are neither a socket's nor a device's: threads, the epoll
// instance, eventfd wakers and the signal pipe. Named for what failed, so that a thread that could
// not start does not read as a socket error.

/// Why a thread, epoll, eventfd, pipe or signal-action call failed (`pthread_create`,
/// `epoll_create1`, `epoll_ctl`, `epoll_wait`, `eventfd`, `pipe`, `fcntl`, `sigaction`, or the
/// `poll` of a waker). Each case but ``closed(device:)`` names the call and its errno.
public enum SystemError: HardwareFault, Equatable {
    /// `EMFILE`/`ENFILE`: no descriptor left for an epoll instance, an eventfd or a pipe.
    case outOfDescriptors(FailedCall)
    /// The object (a poller) was closed by `close()`.
    case closed(device: String)
    /// Any other failed call, e.g. `pthread_create` with `EAGAIN` (no thread left).
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on.
    public init(_ failure: FailedCall) {
        switch failure.errno {
        case Errno.tooManyOpenFiles?, Errno.tooManyOpenFilesInSystem?: self = .outOfDescriptors(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .outOfDescriptors(let f), .failed(let f): f
        case .closed: nil
        }
    }

    public var deviceIsGone: Bool {
        if case .closed = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .outOfDescriptors(let f): "out of file descriptors: \(f)"
        case .closed(let device): "\(device) is closed"
        case .failed(let f): "system call failed: \(f)"
        }
    }

    /// The value of a call that went through the seam, or its failure as a `SystemError`.
    static func check<T>(_ result: Result<T, FailedCall>) throws(SystemError) -> T {
        switch result {
        case .success(let value): return value
        case .failure(let failure): throw SystemError(failure)
        }
    }
}
