import GNSSHat
import GNSSHatTesting
import GNSSProtocol
import PiHardware
import Signals
import Testing

@Suite("Receiver end to end through a pseudo-terminal", .timeLimit(.minutes(2)))
struct ReceiverEndToEndTests {
    @Test("subscribe → power on → configuration acknowledged → fixes")
    func subscribeToFixes() async throws {
        let rig = try Rig()
        #expect(rig.receiver.powerState == .off)
        #expect(!rig.powerIsOn)
        let fixes = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(fixes)
        #expect(rig.powerIsOn)
        #expect(rig.receiver.powerState == .on)
        #expect(rig.hat.receiver.commandsReceived.prefix(2) == ["MON-VER poll", "CFG-VALSET"])
        #expect(rig.hat.receiver.sendsNavPVT)
        #expect(rig.hat.receiver.starts == [.cold])
        let latitude = try #require(fix.latitude)
        #expect(abs(latitude - 51.4779) < 0.01)
        let statistics = rig.receiver.statistics
        #expect(statistics.powerOns == 1)
        #expect(statistics.protocolVersion == 27.31)
        let ttff = try #require(statistics.lastTimeToFirstFix)
        #expect(ttff >= .seconds(26) && ttff <= .seconds(29))
        fixes.cancel()
        await rig.shutdown()
    }
}
