// The syscall seam for the event loop and threads: epoll, eventfd, pipes, signal actions and
// pthreads, one internal function per C call, each recording itself and taking injected failures
// exactly as the calls in Seam.swift do.
internal import CLinuxShims
internal import Glibc

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

/// Names the calling thread (`pthread_setname_np`; the first 15 bytes): a thread made with
/// `pthread_create` elsewhere (a C library's, say) otherwise keeps its creator's name in `top -H`.
public func nameCurrentThread(_ name: String) {
    system_set_thread_name(name)
}

/// Blocks `SIGPIPE` for the calling thread only (`pthread_sigmask`): a write by a C library that does
/// not pass `MSG_NOSIGNAL` (OpenSSL's socket writes) to a peer that went away then fails with `EPIPE`
/// instead of ending the process. The signal stays pending on this thread and goes with it.
public func blockBrokenPipeOnCurrentThread() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGPIPE)
    _ = system_pthread_sigmask(SIG_BLOCK, &set)
}

func system_pthread_sigmask(_ how: CInt, _ set: UnsafePointer<sigset_t>) -> CInt {
    if let errno = seamEnter("pthread_sigmask", "SIGPIPE") { return errno.rawValue }
    return Glibc.pthread_sigmask(how, set, nil)
}
