import Glibc
@testable import LinuxSystem
import Testing

@Suite("Errno")
struct ErrnoTests {
    @Test("each static is its C constant, named in the description", arguments: [
        (Errno.interrupted, EINTR, "EINTR"), (.ioError, EIO, "EIO"), (.resourceBusy, EBUSY, "EBUSY"),
        (.remoteIO, EREMOTEIO, "EREMOTEIO"), (.timedOut, ETIMEDOUT, "ETIMEDOUT"),
        (.noSuchDeviceOrAddress, ENXIO, "ENXIO"), (.permissionDenied, EACCES, "EACCES"),
        (.noSuchFileOrDirectory, ENOENT, "ENOENT"), (.notATerminal, ENOTTY, "ENOTTY"),
        (.wouldBlock, EAGAIN, "EAGAIN"), (.notSupported, EOPNOTSUPP, "EOPNOTSUPP"),
        (.fileExists, EEXIST, "EEXIST"), (.noSpaceLeft, ENOSPC, "ENOSPC"),
    ])
    func constants(errno: Errno, raw: CInt, name: String) {
        #expect(errno.rawValue == raw)
        #expect(errno.name == name)
        #expect(errno.description == "\(String(cString: strerror(raw))) (\(name))")
    }

    @Test("an unlisted code keeps its number and still has the C library's message")
    func unlisted() {
        let errno = Errno(rawValue: EXDEV)
        #expect(errno.name == "errno \(EXDEV)")
        #expect(errno.message == String(cString: strerror(EXDEV)))
    }

    @Test("a failed call says the call, the device and the error")
    func failedCall() {
        let failure = FailedCall(call: "ioctl(I2C_RDWR)", device: "/dev/i2c-1", errno: .remoteIO)
        #expect(failure.description == "ioctl(I2C_RDWR) on /dev/i2c-1: Remote I/O error (EREMOTEIO)")
    }

    @Test("time-outs convert to poll milliseconds and nanoseconds without overflow", arguments: [
        (Duration.zero, CInt(0), Int64(0)), (.nanoseconds(1), 1, 1), (.milliseconds(1), 1, 1_000_000),
        (.microseconds(1500), 2, 1_500_000), (.seconds(-3), 0, 0), (.seconds(Int64.max), .max, .max),
    ])
    func durations(duration: Duration, millis: CInt, nanos: Int64) {
        #expect(duration.pollMilliseconds == millis)
        #expect(duration.clampedNanoseconds == nanos)
    }
}
