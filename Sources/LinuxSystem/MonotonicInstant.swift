// Instants of CLOCK_MONOTONIC, for the timer thread's deadlines.
internal import Glibc

/// A point on `CLOCK_MONOTONIC`, in nanoseconds.
struct MonotonicInstant: Comparable, Hashable, Sendable {
    let nanoseconds: Int64

    static func now() -> MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    func advanced(by duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.clampedNanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    var time: timespec {
        timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }

    static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}
