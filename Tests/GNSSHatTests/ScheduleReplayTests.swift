import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

/// Interleavings that RandomScheduleTests hit now and then, forced step by step.
@Suite("Random schedules, replayed", .timeLimit(.minutes(1)))
struct ScheduleReplayTests {
    /// Seed 865 (a hang about once in 400 runs): a subscriber powers on; while the power-on
    /// waits on the clock after switching on, the hat disappears and the booting receiver sends
    /// noise. The read loop ends on the hang-up, but the link stays open until the stop, which
    /// comes only after the start's wait. The hat counted the noise as in flight to that link,
    /// so the driver waited for it to be read before moving the time the start waited for.
    @Test("seed 865: the hat disappears during the power-on's wait and the receiver talks: nothing is in flight")
    func disappearDuringPowerOnWait() async throws {
        let rig = try Rig(connection: .inProcess)
        let failure = Lock<SignalCompletion?>(nil)
        let hold = rig.receiver.events.hold { completion in failure.withLock { $0 = completion } }
        // The only sleeper: the wait after the enable line went on (the link is open and read).
        await rig.clock.waitForSleepers(1)
        #expect(rig.receiver.powerState == .poweringOn)
        #expect(rig.powerIsOn)

        rig.hat.disappear()
        // The read loop has met the hang-up and reported it, after ending the link's reading (the
        // start fails once its wait is over).
        await rig.receiver.waitForStatistics { $0.sessionFailures > 0 }
        rig.hat.receiver.inject(.garbage(800))
        try #require(rig.hat.traffic.isSettled, "noise sent to a link nobody reads: \(rig.hat.traffic.counts)")

        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        #expect(rig.hat.traffic.isSettled)
        // Not which error: the start may fail on the closed log or, when the reader thread is slow
        // to close it after counting the failure, on its own time-outs.
        #expect(failure.withLock { $0 } != nil, "the hold ends with the start's failure")
        hold.cancel()
        await rig.shutdown()
    }
}
