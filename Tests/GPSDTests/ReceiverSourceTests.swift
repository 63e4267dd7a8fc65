// The gpsd service's view of a Receiver: its DEVICE activity follows the hardware's power.
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GPSD
import LinuxSystem
import Signals
import Testing

@Suite struct ReceiverSourceTests {
    @Test("DEVICE activity is the hardware's: inactive between a duty cycle's fixes while a client is served")
    func activityFollowsTheHardware() async throws {
        let clock = ManualClock()
        let board = try #require(try BoardCatalog.builtIn("simulator"))
        let hat = try SimulatedHat(board: board, clock: clock, connection: .inProcess, timing: .driven)
        let receiver = Receiver(on: hat)
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let activity = GPSDSource.receiver(receiver).activity()
        let changes = receiver.hardwarePowerChanges()
        // A client that needs a fix every 600 s (as a WATCH with "interval":600): a duty cycle.
        let fixes = receiver.fixes(every: .seconds(600)).subscribe()
        let seen = Lock<[String]>([])
        _ = try await driver.run(limit: .seconds(1500)) {
            var sleeps = 0
            for await change in changes {
                seen.withLock { $0.append("\(change)") }
                if change.reason == .dutyCycleSleep && !change.power.isPowered { sleeps += 1 }
                if sleeps == 3 { return }
            }
        }
        #expect(receiver.powerState == .on, "the client is served all along")
        fixes.cancel()
        await receiver.shutdown()
        var active: [Bool] = []
        for await value in activity { active.append(value) }
        // Off at first, then on and off again for each of the three fixes.
        #expect(active == [false, true, false, true, false, true, false], "\(seen.withLock { $0 })")
    }
}
