// SystemClock.synchronisation through the seam: a fake adjtimex reports each clock state the kernel can,
// and only a disciplined clock counts as synchronised; a failing call is "unknown", never synchronised.
import LinuxSystem
import Testing

@Suite("System clock synchronisation (adjtimex)")
struct SystemClockTests {
    // The kernel's values (<sys/timex.h>): TIME_OK 0, TIME_ERROR 5, STA_PLL 0x1, STA_UNSYNC 0x40,
    // STA_CLOCKERR 0x1000.
    static let timeOK: CInt = 0
    static let timeError: CInt = 5

    static func reading(_ state: CInt, status: CInt, maxError: Int = 1_500, estimatedError: Int = 200) -> SeamMock {
        SeamMock(adjtimex: {
            KernelClockReading(state: state, status: status, maxError: maxError, estimatedError: estimatedError)
        })
    }

    @Test("a clock disciplined by a daemon is synchronised, with the kernel's error bounds")
    func synchronised() {
        let mock = Self.reading(Self.timeOK, status: 0x1)
        let verdict = SeamMock.$current.withValue(mock) { SystemClock.synchronisation() }
        #expect(verdict == .synchronised(maximumError: .microseconds(1_500), estimatedError: .microseconds(200)))
        #expect(verdict.isSynchronised && verdict.maximumError == .microseconds(1_500))
        #expect(mock.calls == ["adjtimex"])
    }

    @Test(
        "STA_UNSYNC, STA_CLOCKERR, maxerror at 16 s or TIME_ERROR: not synchronised, and why",
        arguments: [
            (timeError, CInt(0x41), 1_500, ClockSynchronisation.Unsynchronised.unsynchronisedFlag),
            (timeError, 0x1001, 1_500, .clockError),
            (timeOK, 0x1, 16_000_000, .maximumErrorAtLimit),
            (timeOK, 0x1, -1, .maximumErrorAtLimit),
            (timeError, 0x1, 1_500, .timeError),
        ])
    func notSynchronised(state: CInt, status: CInt, maxError: Int, reason: ClockSynchronisation.Unsynchronised) {
        let verdict = SeamMock.$current.withValue(Self.reading(state, status: status, maxError: maxError)) {
            SystemClock.synchronisation()
        }
        #expect(verdict == .notSynchronised(reason))
        #expect(!verdict.isSynchronised && verdict.maximumError == nil)
        #expect(verdict.description.hasPrefix("not synchronised: "))
    }

    static func failedCall(_ verdict: ClockSynchronisation) -> FailedCall? {
        if case .unknown(let failure) = verdict { failure } else { nil }
    }

    @Test("a failing adjtimex is unknown (not synchronised); EINTR is retried")
    func failure() throws {
        let mock = Self.reading(Self.timeOK, status: 0)
        mock.fail("adjtimex", with: .notPermitted)
        let verdict = SeamMock.$current.withValue(mock) { SystemClock.synchronisation() }
        let failure = try #require(Self.failedCall(verdict))
        #expect(failure.call == "adjtimex" && failure.errno == .notPermitted)
        #expect(!verdict.isSynchronised)

        let interrupted = Self.reading(Self.timeOK, status: 0)
        interrupted.fail("adjtimex", with: .interrupted, times: 2)
        #expect(SeamMock.$current.withValue(interrupted) { SystemClock.synchronisation() }.isSynchronised)
        #expect(interrupted.count("adjtimex") == 3)
    }

    @Test("the real call answers on this machine (whatever the verdict) and the boot clock runs forward")
    func realCall() throws {
        let verdict = SystemClock.synchronisation()
        #expect(Self.failedCall(verdict) == nil, "adjtimex with modes 0 needs no privilege")
        let first = SystemClock.sinceBoot()
        let second = SystemClock.sinceBoot()
        #expect(first > .zero && second >= first)
        let id = try #require(SystemClock.bootID())
        #expect(id.utf8.count == 36)
        #expect(SystemClock.bootID(path: "/nonexistent/boot_id") == nil)
    }
}
