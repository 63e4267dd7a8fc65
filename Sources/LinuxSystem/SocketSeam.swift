// The syscall seam for sockets: one internal function per C call, each recording itself and taking
// injected failures exactly as the calls in Seam.swift do.
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

/// Sets `errno` and returns -1 as the given integer type.
@inline(__always)
private func fail<T: BinaryInteger>(_ errno: Errno) -> T {
    Errno.current = errno
    return -1
}
