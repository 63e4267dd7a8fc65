// The gpsd service's view of a Receiver: its DEVICE activity follows the hardware's power; a watcher's
// interval and accuracy reach the receiver's demand, and its TPVs are the accurate fixes.
import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
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

    @Test("a WATCH with \"interval\" and an RTK \"accuracy\" gets the accurate fix: RTK fixed on simulator-rtk",
          .timeLimit(.minutes(2)))
    func scheduledWatchWithAccuracyGetsRTK() async throws {
        let clock = ManualClock()
        let board = try #require(try BoardCatalog.builtIn("simulator-rtk"))
        let hat = try SimulatedHat(board: board, clock: clock, connection: .pseudoTerminal, timing: .driven)
        let receiver = Receiver(on: hat)
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let corrections = FakeCorrections(clock: clock, linger: .seconds(5))
        receiver.useCorrections(corrections.signal)
        let scheduled = try #require(GPSDSource.receiver(receiver).scheduled)

        // As a ?WATCH with "interval":600,"accuracy":0.02: the view's demand carries the accuracy, the
        // corrections are subscribed, and the TPV waits for a 2 cm fix (a 3D fix comes first and is not it).
        let watcher = scheduled(.seconds(600), 0.02).subscribe(buffering: .bounded(4))
        // The service's view is derived from the receiver's, which it subscribes from a start of its own: once
        // the receiver's view (the same signal for the same demand) has left idle, the driver sees its start.
        let receiverView = receiver.fixes(for: .every(.seconds(600), accuracy: 0.02))
        for await state in receiverView.stateChanges() where state != .idle { break }
        let line = try await driver.run(limit: .seconds(180)) { () async throws -> [UInt8] in
            let feeder = Task {
                for try await fix in receiver.fixes.subscribe() where fix.hasPosition { corrections.sendEpoch(fix) }
            }
            defer { feeder.cancel() }
            for try await event in watcher { if case .tpv(let line) = event { return line } }
            throw CancellationError()
        }
        let tpv = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(tpv["status"] as? Int == 3, "RTK fixed, as gpsd numbers it: \(String(decoding: line, as: UTF8.self))")
        #expect(try #require(tpv["eph"] as? Double) <= 0.02)
        #expect(tpv["dgpsSta"] as? Int == FakeCorrections.station)
        #expect(corrections.starts == 1)
        watcher.cancel()
        await receiver.shutdown()
        await hat.shutdown()
    }
}
