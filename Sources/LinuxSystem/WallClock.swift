// The system's real-time clock, read through the seam: the service stamps DEVICE activation, POLL
// replies and chrony samples with it.
internal import CLinuxShims
internal import Glibc

/// The system's wall clock (`clock_gettime(CLOCK_REALTIME)`), in nanoseconds since the Unix epoch.
public enum WallClock {
    /// Now, nanoseconds since 1970-01-01T00:00:00Z.
    public static func now() -> Int64 {
        var time = timespec()
        _ = system_clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

func system_clock_gettime(_ clock: clockid_t, _ time: UnsafeMutablePointer<timespec>) -> CInt {
    Glibc.clock_gettime(clock, time)
}

extension WallClock {
    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: to move a monotonic kernel timestamp (a GPIO
    /// edge's) onto the wall clock.
    public static func monotonicNow() -> Int64 {
        var time = timespec()
        _ = system_clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
