@testable import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import PiHardware
import Signals
import Testing

@Suite("The PPS loop of a hardware session", .timeLimit(.minutes(2)))
struct PPSLoopTests {
    @Test("pulses are waited for with no time-out, and power-off wakes the loop with no pulse coming")
    func wokenToStop() async throws {
        let rig = try Rig(options: ReceiverOptions(linger: .zero))
        let pulses = rig.receiver.pps.subscribe(buffering: .bounded(100))
        let pulse = try await rig.driver.run {
            for try await pulse in pulses { return pulse }
            throw CancellationError()
        }
        #expect(pulse.edge.kind == .rising)
        let source = rig.hat.receiver.ppsOutput
        #expect(source.wokenWaits == 0)
        // The clock stands still from here on, so no pulse comes: only the wake can end the wait
        // (without it, power-off would wait for ever and the time limit fail the test).
        pulses.cancel()
        await rig.receiver.waitForPower { $0 == .off }
        #expect(!rig.powerIsOn)
        // Woken once; or (2 to 5 runs in 25 here) an edge ended its last wait and it saw the stop
        // before the next: either way it never waited with a time-out.
        #expect(source.wokenWaits <= 1)
        #expect(source.timedWaits == 0)
        await rig.shutdown()
    }

    @Test("a power-off with no PPS loop running leaves its wake pending; the next loop waits again and gets pulses")
    func wakeLeftByAStopWithNoLoop() async throws {
        let rig = try Rig(connection: .inProcess, options: ReceiverOptions(linger: .zero))
        let source = rig.hat.receiver.ppsOutput
        // A receiver that never answers: the power-on fails before the PPS loop starts, and the
        // power-off that follows wakes the loop's waker all the same.
        rig.hat.receiver.inject(.silent)
        let first = rig.receiver.pps.subscribe(buffering: .bounded(100))
        let error = try await rig.driver.run { await firstError(first) }
        #expect((error as? ReceiverError).map { if case .noResponse = $0 { true } else { false } } == true)
        try await rig.runUntil { $0 == .failed }
        #expect(source.wokenWaits == 0, "no loop ran")

        rig.hat.receiver.clearFaults()
        let pulses = rig.receiver.pps.subscribe(buffering: .bounded(100))
        let pulse = try await rig.driver.run {
            for try await pulse in pulses { return pulse }
            throw CancellationError()
        }
        #expect(pulse.edge.kind == .rising)
        // The pending wake ended the first wait of the new loop, which looked, saw it should go
        // on, and waited again; it did not end the loop nor turn it into a polling one.
        #expect(source.wokenWaits == 1)
        #expect(source.timedWaits == 0)
        pulses.cancel()
        await rig.shutdown()
    }
}

@Suite("A pulse's system time")
struct PPSPulseTimeTests {
    @Test("a realtime stamp is the system time; a monotonic one is moved onto the wall clock")
    func systemTime() {
        let realtime = PPSPulse(edge: EdgeEvent(kind: .rising, timestamp: .seconds(1_700_000_000), clock: .realtime,
                                                sequence: 1))
        #expect(realtime.systemTime(wallNow: 5, monotonicNow: 7) == 1_700_000_000_000_000_000)
        // The edge was 250 ms before the monotonic clock was read, so 250 ms before the wall clock's now.
        let monotonic = PPSPulse(edge: EdgeEvent(kind: .rising, timestamp: .milliseconds(10_000), clock: .monotonic,
                                                 sequence: 2))
        #expect(monotonic.systemTime(wallNow: 1_700_000_000_000_000_000, monotonicNow: 10_250_000_000)
            == 1_699_999_999_750_000_000)
    }
}
