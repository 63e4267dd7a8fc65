// The seam's termios calls for serial ports: one internal function per C call, recording itself and
// taking injected failures through LinuxSystem's `SeamMock` like every other call. They are declared
// here rather than made `package` in LinuxSystem because a `package` signature cannot name `termios`
// or `speed_t`: which C module owns them (CLinuxShims or Glibc) varies between builds. LinuxSystem's
// pseudo-terminal keeps its own three (tcgetattr, tcsetattr, cfmakeraw) for the same reason.
internal import CGPIOD
internal import CI2C
internal import CLinuxShims
internal import Glibc
internal import LinuxSystem

func system_tcgetattr(_ fd: CInt, _ termios: UnsafeMutablePointer<termios>, _ device: String) -> CInt {
    if let errno = seamEnter("tcgetattr", device) { return failC(errno) }
    return Glibc.tcgetattr(fd, termios)
}

func system_tcsetattr(_ fd: CInt, _ action: CInt, _ termios: UnsafePointer<termios>, _ device: String) -> CInt {
    if let errno = seamEnter("tcsetattr", device) { return failC(errno) }
    return Glibc.tcsetattr(fd, action, termios)
}

func system_tcdrain(_ fd: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("tcdrain", device) { return failC(errno) }
    return Glibc.tcdrain(fd)
}

func system_tcflush(_ fd: CInt, _ queue: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("tcflush", device) { return failC(errno) }
    return Glibc.tcflush(fd, queue)
}

func system_cfsetispeed(_ termios: UnsafeMutablePointer<termios>, _ speed: speed_t, _ device: String) -> CInt {
    if let errno = seamEnter("cfsetispeed", device) { return failC(errno) }
    return Glibc.cfsetispeed(termios, speed)
}

func system_cfsetospeed(_ termios: UnsafeMutablePointer<termios>, _ speed: speed_t, _ device: String) -> CInt {
    if let errno = seamEnter("cfsetospeed", device) { return failC(errno) }
    return Glibc.cfsetospeed(termios, speed)
}

func system_cfgetospeed(_ termios: UnsafePointer<termios>) -> speed_t {
    Glibc.cfgetospeed(termios)
}

func system_cfmakeraw(_ termios: UnsafeMutablePointer<termios>) {
    cshim_cfmakeraw(termios)
}
