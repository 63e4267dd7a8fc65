// What a single-threaded server loop needs from the kernel: an epoll poller that sleeps until a
// descriptor is ready (indefinitely when nothing happens), an eventfd waker other threads use to
// hand it work, a self-pipe that turns SIGTERM and SIGINT into a readable descriptor, and a
// dedicated thread to run it on.
internal import CLinuxShims
internal import Glibc

/// Waits for descriptors to become ready (`epoll_create1`, `epoll_ctl`, `epoll_wait`), level-triggered.
/// Each registration carries a caller's token that comes back with its readiness.
public final class Poller: Sendable {
    /// What a registration waits for.
    public struct Interest: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// `EPOLLIN` (and `EPOLLRDHUP`): bytes, a connection to accept, or the peer's end of stream.
        public static let readable = Interest(rawValue: 1)
        /// `EPOLLOUT`: room to write.
        public static let writable = Interest(rawValue: 2)
    }

    /// One ready registration.
    public struct Event: Sendable, Hashable {
        public let token: UInt64
        public let isReadable: Bool
        public let isWritable: Bool
        /// `EPOLLHUP`, `EPOLLRDHUP` or `EPOLLERR`: the peer closed or the descriptor failed; reading
        /// tells which.
        public let isHangUp: Bool

        public init(token: UInt64, isReadable: Bool, isWritable: Bool, isHangUp: Bool) {
            self.token = token
            self.isReadable = isReadable
            self.isWritable = isWritable
            self.isHangUp = isHangUp
        }
    }

    private let descriptor: OwnedDescriptor
    private let capacity: Int
    /// One `epoll_event` array reused by every wait; only the polling thread touches it.
    private let buffer: Lock<[epoll_event]>

    /// Creates an epoll instance (close-on-exec) returning at most `capacity` events per wait.
    public init(capacity: Int = 256) throws(SystemError) {
        let fd = try SystemError.check(retryingInterrupts("epoll_create1", "epoll") {
            system_epoll_create1(CInt(EPOLL_CLOEXEC))
        })
        descriptor = OwnedDescriptor(fd, device: "epoll")
        self.capacity = max(capacity, 1)
        buffer = Lock([epoll_event](repeating: epoll_event(), count: max(capacity, 1)))
    }

    /// Watches `fd` for `interest`, reporting `token` (`epoll_ctl(EPOLL_CTL_ADD)`).
    public func add(_ fd: CInt, token: UInt64, interest: Interest) throws(SystemError) {
        try control(EPOLL_CTL_ADD, fd, token: token, interest: interest)
    }

    /// Changes what `fd` is watched for (`epoll_ctl(EPOLL_CTL_MOD)`).
    public func modify(_ fd: CInt, token: UInt64, interest: Interest) throws(SystemError) {
        try control(EPOLL_CTL_MOD, fd, token: token, interest: interest)
    }

    /// Stops watching `fd` (`epoll_ctl(EPOLL_CTL_DEL)`); call it before closing the descriptor.
    public func remove(_ fd: CInt) {
        guard let epfd = descriptor.fd, fd >= 0 else { return }
        _ = system_epoll_ctl(epfd, CInt(EPOLL_CTL_DEL), fd, nil, "fd \(fd)")
    }

    /// Waits until at least one registration is ready or `timeout` passes (`nil`: forever) and returns
    /// the ready ones (`epoll_wait`). A signal interrupting the wait returns no events.
    public func wait(timeout: Duration? = nil) throws(SystemError) -> [Event] {
        guard let epfd = descriptor.fd else { throw .closed(device: "epoll") }
        let milliseconds: CInt = timeout.map(\.pollMilliseconds) ?? -1
        return try buffer.withLock { (events: inout [epoll_event]) throws(SystemError) -> [Event] in
            let count = events.withUnsafeMutableBufferPointer { pointer -> CInt in
                guard let base = pointer.baseAddress else { return 0 }
                return system_epoll_wait(epfd, base, CInt(pointer.count), milliseconds)
            }
            if count < 0 {
                let errno = Errno.current
                if errno == .interrupted { return [] }
                throw SystemError(FailedCall(call: "epoll_wait", device: "epoll", errno: errno))
            }
            var ready: [Event] = []
            ready.reserveCapacity(Int(count))
            for index in 0..<Int(count) {
                let flags = events[index].events
                ready.append(Event(
                    token: events[index].data.u64,
                    isReadable: flags & EPOLLIN.rawValue != 0,
                    isWritable: flags & EPOLLOUT.rawValue != 0,
                    isHangUp: flags & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue | EPOLLERR.rawValue) != 0
                ))
            }
            return ready
        }
    }

    /// Closes the epoll instance.
    public func close() {
        descriptor.close()
    }

    private func control(_ operation: CInt, _ fd: CInt, token: UInt64, interest: Interest) throws(SystemError) {
        guard let epfd = descriptor.fd else { throw .closed(device: "epoll") }
        var flags: UInt32 = 0
        if interest.contains(.readable) { flags |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if interest.contains(.writable) { flags |= EPOLLOUT.rawValue }
        var event = epoll_event()
        event.events = flags
        event.data.u64 = token
        let device = "fd \(fd)"
        _ = try SystemError.check(retryingInterrupts("epoll_ctl", device) {
            system_epoll_ctl(epfd, operation, fd, &event, device)
        })
    }
}

/// A descriptor other threads make readable to wake a poller (`eventfd`, non-blocking).
public final class Waker: Sendable {
    private let descriptor: OwnedDescriptor

    public init() throws(SystemError) {
        let fd = try SystemError.check(retryingInterrupts("eventfd", "eventfd") {
            system_eventfd(0, CInt(EFD_NONBLOCK) | CInt(EFD_CLOEXEC))
        })
        descriptor = OwnedDescriptor(fd, device: "eventfd")
    }

    /// The descriptor to register with a ``Poller`` for ``Poller/Interest/readable``.
    public var rawDescriptor: CInt { descriptor.fd ?? -1 }

    /// Makes the descriptor readable (`write` of 1 to the eventfd); safe from any thread. Wakes that
    /// arrive before the poller drains coalesce into one.
    public func wake() {
        guard let fd = descriptor.fd else { return }
        var one: UInt64 = 1
        // EAGAIN means the counter is saturated: the descriptor is readable already.
        _ = retryingInterrupts("write", "eventfd") { system_write(fd, &one, 8, "eventfd") }
    }

    /// Consumes the pending wakes (`read`), so the descriptor is not readable until the next ``wake()``.
    public func drain() {
        guard let fd = descriptor.fd else { return }
        var count: UInt64 = 0
        _ = retryingInterrupts("read", "eventfd") { system_read(fd, &count, 8, "eventfd") }
    }

    public func close() {
        descriptor.close()
    }
}

/// Turns termination signals into a readable descriptor (the self-pipe trick, `pipe2` and
/// `sigaction`): a signal handler writes the signal's number into a pipe, a poller sees the pipe
/// readable, and ``drain()`` says which signals came. Works whichever thread the kernel picks to
/// deliver the signal to. Only one watcher should exist per process at a time; ``close()`` restores
/// the default actions.
public final class SignalWatcher: Sendable {
    /// A signal a service handles.
    public enum Signal: Sendable, Hashable, CaseIterable {
        /// `SIGTERM`: systemd's stop.
        case terminate
        /// `SIGINT`: Ctrl-C.
        case interrupt
        /// `SIGHUP`.
        case hangUp

        /// The C signal number.
        public var number: CInt {
            switch self {
            case .terminate: SIGTERM
            case .interrupt: SIGINT
            case .hangUp: SIGHUP
            }
        }

        init?(number: CInt) {
            guard let signal = Signal.allCases.first(where: { $0.number == number }) else { return nil }
            self = signal
        }
    }

    /// The signals watched.
    public let signals: [Signal]
    private let readEnd: OwnedDescriptor
    private let writeEnd: OwnedDescriptor

    /// Watches `signals` (by default SIGTERM and SIGINT).
    public init(signals: [Signal] = [.terminate, .interrupt]) throws(SystemError) {
        var fds: [CInt] = [-1, -1]
        _ = try SystemError.check(retryingInterrupts("pipe", "signal pipe") { system_pipe(&fds, "signal pipe") })
        readEnd = OwnedDescriptor(fds[0], device: "signal pipe")
        writeEnd = OwnedDescriptor(fds[1], device: "signal pipe")
        self.signals = signals
        for fd in fds {
            let flags = retryingInterrupts("fcntl(F_SETFL)", "signal pipe") {
                system_fcntl(fd, F_SETFL, O_NONBLOCK, "fcntl(F_SETFL)", "signal pipe")
            }
            _ = try SystemError.check(flags)
            _ = try SystemError.check(retryingInterrupts("fcntl(F_SETFD)", "signal pipe") {
                system_fcntl(fd, F_SETFD, FD_CLOEXEC, "fcntl(F_SETFD)", "signal pipe")
            })
        }
        for signal in signals {
            let result = retryingInterrupts("sigaction", "signal \(signal.number)") {
                system_notify_signal(signal.number, fds[1])
            }
            if case .failure(let failure) = result {
                for installed in signals { _ = system_notify_signal(installed.number, -1) }
                throw SystemError(failure)
            }
        }
    }

    deinit { close() }

    /// The descriptor to register with a ``Poller`` for ``Poller/Interest/readable``.
    public var rawDescriptor: CInt { readEnd.fd ?? -1 }

    /// The signals that arrived since the last call, in order (`read`).
    public func drain() -> [Signal] {
        guard let fd = readEnd.fd else { return [] }
        var received: [Signal] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let result = buffer.withUnsafeMutableBytes { raw in
                retryingInterrupts("read", "signal pipe") { system_read(fd, raw.baseAddress, raw.count, "signal pipe") }
            }
            guard case .success(let count) = result, count > 0 else { return received }
            received += buffer[0..<count].compactMap { Signal(number: CInt($0)) }
        }
    }

    /// Sends `signal` to this process (`kill`), for tests of the path a real SIGTERM takes.
    public static func raise(_ signal: Signal) {
        _ = system_kill_self(signal.number)
    }

    /// Restores the default actions of the watched signals and closes the pipe.
    public func close() {
        guard writeEnd.fd != nil else { return }
        for signal in signals { _ = system_notify_signal(signal.number, -1) }
        writeEnd.close()
        readEnd.close()
    }
}

/// A dedicated OS thread (`pthread_create`), for a loop that blocks in ``Poller/wait(timeout:)`` and
/// must not occupy a thread of Swift's cooperative pool.
public final class LoopThread: Sendable {
    private let handle: Lock<pthread_t?>

    private final class Start: @unchecked Sendable {
        // Handed to the new thread once and released there; never shared.
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let start = Unmanaged.passRetained(Start(name: name, body: body))
        var thread = pthread_t()
        let code = system_pthread_create(&thread, { argument in
            guard let argument else { return nil }
            let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
            system_set_thread_name(start.name)
            start.body()
            return nil
        }, start.toOpaque())
        guard code == 0 else {
            start.release()
            throw SystemError(FailedCall(call: "pthread_create", device: name, errno: Errno(rawValue: code)))
        }
        handle = Lock(thread)
    }

    /// Waits for the thread to finish (`pthread_join`); later calls return at once.
    public func join() {
        let thread = handle.withLock { handle -> pthread_t? in
            defer { handle = nil }
            return handle
        }
        if let thread { _ = system_pthread_join(thread) }
    }

    /// Lets the thread end on its own, its resources freed when it does (`pthread_detach`);
    /// ``join()`` then returns at once.
    public func detach() {
        let thread = handle.withLock { handle -> pthread_t? in
            defer { handle = nil }
            return handle
        }
        if let thread { _ = system_pthread_detach(thread) }
    }
}
