// The syscall seam for sockets, epoll, eventfd, pipes, signals and threads: one internal function per
// C call, each recording itself and taking injected failures exactly as the calls in Seam.swift do.
internal import CGPIOD
internal import CI2C
internal import CLinuxShims
internal import Glibc

func system_socket(_ domain: CInt, _ type: CInt, _ proto: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("socket", device) { return failC(errno) }
    return Glibc.socket(domain, type, proto)
}

func system_setsockopt(
    _ fd: CInt, _ level: CInt, _ name: CInt, _ value: UnsafeRawPointer, _ length: socklen_t,
    _ call: SystemCall, _ device: String
) -> CInt {
    if let errno = seamEnter(call, device) { return failC(errno) }
    return Glibc.setsockopt(fd, level, name, value, length)
}

func system_bind(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, _ device: String) -> CInt {
    if let errno = seamEnter("bind", device) { return failC(errno) }
    return Glibc.bind(fd, address, length)
}

func system_listen(_ fd: CInt, _ backlog: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("listen", device) { return failC(errno) }
    return Glibc.listen(fd, backlog)
}

func system_accept4(
    _ fd: CInt, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?,
    _ flags: CInt, _ device: String
) -> CInt {
    if let errno = seamEnter("accept4", device) { return failC(errno) }
    return cshim_accept4(fd, address, length, flags)
}

func system_connect(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, _ device: String) -> CInt {
    if let errno = seamEnter("connect", device) { return failC(errno) }
    return Glibc.connect(fd, address, length)
}

func system_getsockname(
    _ fd: CInt, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>,
    _ device: String
) -> CInt {
    if let errno = seamEnter("getsockname", device) { return failC(errno) }
    return Glibc.getsockname(fd, address, length)
}

/// `send` with `MSG_NOSIGNAL`, so that a peer that went away gives `EPIPE` instead of `SIGPIPE`.
func system_send(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: CInt, _ device: String) -> Int {
    if let errno = seamEnter("send", device) { return fail(errno) }
    return Glibc.send(fd, buffer, count, flags | CInt(MSG_NOSIGNAL))
}

func system_recv(_ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ device: String) -> Int {
    if let errno = seamEnter("recv", device) { return fail(errno) }
    return Glibc.recv(fd, buffer, count, 0)
}

func system_shutdown(_ fd: CInt, _ how: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("shutdown", device) { return failC(errno) }
    return Glibc.shutdown(fd, how)
}

func system_unlink(_ path: String) -> CInt {
    if let errno = seamEnter("unlink", path) { return failC(errno) }
    return Glibc.unlink(path)
}

func system_inet_pton(_ family: CInt, _ text: String, _ destination: UnsafeMutableRawPointer) -> CInt {
    Glibc.inet_pton(family, text, destination)
}

func system_inet_ntop(
    _ family: CInt, _ source: UnsafeRawPointer, _ destination: UnsafeMutablePointer<CChar>, _ size: socklen_t
) -> UnsafePointer<CChar>? {
    Glibc.inet_ntop(family, source, destination, size)
}

func system_epoll_create1(_ flags: CInt) -> CInt {
    if let errno = seamEnter("epoll_create1", "epoll") { return failC(errno) }
    return epoll_create1(flags)
}

func system_epoll_ctl(
    _ epfd: CInt, _ operation: CInt, _ fd: CInt, _ event: UnsafeMutablePointer<epoll_event>?, _ device: String
) -> CInt {
    if let errno = seamEnter("epoll_ctl", device) { return failC(errno) }
    return epoll_ctl(epfd, operation, fd, event)
}

func system_epoll_wait(
    _ epfd: CInt, _ events: UnsafeMutablePointer<epoll_event>, _ count: CInt, _ timeoutMS: CInt
) -> CInt {
    if let errno = seamEnter("epoll_wait", "epoll") { return failC(errno) }
    return epoll_wait(epfd, events, count, timeoutMS)
}

func system_eventfd(_ initial: CUnsignedInt, _ flags: CInt) -> CInt {
    if let errno = seamEnter("eventfd", "eventfd") { return failC(errno) }
    return eventfd(initial, flags)
}

func system_pipe(_ fds: UnsafeMutablePointer<CInt>, _ device: String) -> CInt {
    if let errno = seamEnter("pipe", device) { return failC(errno) }
    return Glibc.pipe(fds)
}

func system_notify_signal(_ signal: CInt, _ fd: CInt) -> CInt {
    if let errno = seamEnter("sigaction", "signal \(signal)") { return failC(errno) }
    return cshim_notify_signal_on_fd(signal, fd)
}

func system_kill_self(_ signal: CInt) -> CInt {
    Glibc.kill(Glibc.getpid(), signal)
}

func system_pthread_create(
    _ thread: UnsafeMutablePointer<pthread_t>,
    _ body: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
    _ argument: UnsafeMutableRawPointer?
) -> CInt {
    if let errno = seamEnter("pthread_create", "thread") { return errno.rawValue }
    return Glibc.pthread_create(thread, nil, body, argument)
}

func system_pthread_join(_ thread: pthread_t) -> CInt {
    Glibc.pthread_join(thread, nil)
}

func system_pthread_detach(_ thread: pthread_t) -> CInt {
    Glibc.pthread_detach(thread)
}

func system_set_thread_name(_ name: String) {
    _ = cshim_set_thread_name(String(name.utf8.prefix(15)) ?? "")
}

/// Sets `errno` and returns -1 as the given integer type.
@inline(__always)
private func fail<T: BinaryInteger>(_ errno: Errno) -> T {
    Errno.current = errno
    return -1
}
