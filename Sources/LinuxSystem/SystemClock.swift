// Whether the system clock can be trusted: the kernel's clock discipline as `adjtimex` reports it,
// the time since boot and the boot's id. A receiver is given the system time as aiding only when the
// kernel says the clock is synchronised; a Pi without RTC or NTP must never look synchronised.
internal import CLinuxShims
internal import Glibc

/// Whether the system clock is synchronised to a time source, as the kernel reports it.
public enum ClockSynchronisation: Hashable, Sendable, CustomStringConvertible {
    /// Why the clock does not count as synchronised.
    public enum Unsynchronised: Hashable, Sendable, CustomStringConvertible {
        /// `STA_UNSYNC` is set: no time daemon has disciplined the clock since it was set (the
        /// kernel sets it at boot and at every `settimeofday`, such as a fake-hwclock or an RTC's).
        case unsynchronisedFlag
        /// `STA_CLOCKERR` is set: the clock hardware reported a fault.
        case clockError
        /// `maxerror` has grown to the kernel's limit of 16 s (it grows by 500 µs each second once
        /// no daemon updates it): the daemon stopped disciplining the clock.
        case maximumErrorAtLimit
        /// `adjtimex` returned `TIME_ERROR` for another reason (a PPS discipline that lost its signal).
        case timeError

        public var description: String {
            switch self {
            case .timeError: "adjtimex returned TIME_ERROR"
            case .unsynchronisedFlag: "STA_UNSYNC is set (no time daemon is disciplining the clock)"
            case .clockError: "STA_CLOCKERR is set (clock hardware fault)"
            case .maximumErrorAtLimit: "the maximum error has reached the kernel's 16 s limit"
            }
        }
    }

    /// Synchronised: the true time is within `maximumError` of the clock (the kernel's `maxerror`);
    /// `estimatedError` is the daemon's estimate (`esterror`).
    case synchronised(maximumError: Duration, estimatedError: Duration)
    /// Not synchronised, and why.
    case notSynchronised(Unsynchronised)
    /// `adjtimex` failed: nothing is known, so the clock does not count as synchronised.
    case unknown(FailedCall)

    /// Whether the clock counts as synchronised.
    public var isSynchronised: Bool {
        if case .synchronised = self { true } else { false }
    }

    /// The bound on the clock's error, when synchronised.
    public var maximumError: Duration? {
        if case .synchronised(let bound, _) = self { bound } else { nil }
    }

    public var description: String {
        switch self {
        case .synchronised(let bound, let estimate):
            "synchronised (maximum error \(bound), estimated \(estimate))"
        case .notSynchronised(let reason): "not synchronised: \(reason)"
        case .unknown(let failure): "unknown: \(failure)"
        }
    }

    /// The kernel's limit on `maxerror`, µs (`NTP_PHASE_LIMIT`, 16 s): at it the kernel sets `STA_UNSYNC`.
    static let maximumErrorLimit = 16_000_000

    /// The verdict on one reading: synchronised only when neither `STA_UNSYNC` nor `STA_CLOCKERR` is
    /// set, `maxerror` is below its limit and the call did not return `TIME_ERROR`. (systemd ignores
    /// `STA_UNSYNC` because chrony leaves it set when told not to touch the RTC; aiding a receiver
    /// with a wrong time costs more than going without, so here it counts. Debian's chrony sets
    /// `rtcsync`, which clears it.)
    package init(_ reading: KernelClockReading) {
        if reading.status & STA_UNSYNC != 0 {
            self = .notSynchronised(.unsynchronisedFlag)
        } else if reading.status & STA_CLOCKERR != 0 {
            self = .notSynchronised(.clockError)
        } else if reading.maxError >= Self.maximumErrorLimit || reading.maxError < 0 {
            self = .notSynchronised(.maximumErrorAtLimit)
        } else if reading.state == TIME_ERROR {
            self = .notSynchronised(.timeError)
        } else {
            self = .synchronised(
                maximumError: .microseconds(reading.maxError),
                estimatedError: .microseconds(max(0, reading.estimatedError)))
        }
    }
}

/// The system clock's discipline and the boot it belongs to.
public enum SystemClock {
    /// Whether the clock is synchronised, and to within what (`adjtimex` with `modes` 0, read only).
    public static func synchronisation() -> ClockSynchronisation {
        var reading = KernelClockReading(state: 0, status: 0, maxError: 0, estimatedError: 0)
        switch retryingInterrupts("adjtimex", "system clock", { system_adjtimex(&reading) }) {
        case .success: return ClockSynchronisation(reading)
        case .failure(let failure): return .unknown(failure)
        }
    }

    /// Tells the kernel that its clock is synchronised to within `maximumError`, as a time daemon does
    /// once it disciplines the clock (`adjtimex` setting the status without `STA_UNSYNC`, the maximum
    /// and the estimated error; needs `CAP_SYS_TIME`). For a rig or a test machine whose clock is set
    /// by other means: the kernel lets the maximum error grow from there, and marks the clock
    /// unsynchronised again once it reaches 16 s.
    public static func markSynchronised(maximumError: Duration, estimatedError: Duration) throws(FailedCall) {
        func microseconds(_ duration: Duration) -> Int {
            Int(duration.components.seconds) * 1_000_000 + Int(duration.components.attoseconds / 1_000_000_000_000)
        }
        var request = timex()
        request.modes = UInt32(ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR)
        request.status = 0
        request.maxerror = microseconds(maximumError)
        request.esterror = microseconds(estimatedError)
        if case .failure(let failure) = retryingInterrupts("adjtimex", "system clock", { adjtimex(&request) }) {
            throw failure
        }
    }

    /// Time since boot, suspended time included (`clock_gettime(CLOCK_BOOTTIME)`): unlike the wall
    /// clock, nothing sets it, so two readings in one boot always measure the time between them.
    public static func sinceBoot() -> Duration {
        var time = timespec()
        _ = system_clock_gettime(CLOCK_BOOTTIME, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }

    /// Where the kernel publishes the id of the current boot.
    public static let bootIDPath = "/proc/sys/kernel/random/boot_id"

    /// The current boot's id (a UUID the kernel makes at every boot, read from ``bootIDPath``), or nil
    /// when it cannot be read.
    public static func bootID(path: String = bootIDPath) -> String? {
        guard let bytes = try? FileSystem.contents(of: path) else { return nil }
        let text = bytes.filter { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: " ") }
        return text.isEmpty ? nil : String(decoding: text, as: UTF8.self)
    }
}
