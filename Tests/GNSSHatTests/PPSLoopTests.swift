@testable import GNSSHat
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
        #expect(source.wokenWaits == 1)
        #expect(source.timedWaits == 0)
        await rig.shutdown()
    }
}
