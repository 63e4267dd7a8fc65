// RTK corrections as a subscription: the CorrectionsMachine's rule, the DDC write stream's two-byte
// rule, and a Receiver on the simulator-rtk board taking a corrections signal only while a subscriber
// asks for centimetres, until the simulated F9 reports RTK fixed.
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Signals
import Testing

@Suite("RTK corrections", .timeLimit(.minutes(3)))
struct CorrectionsTests {
    @Test("the machine subscribes only while attached, powered, needed and with a 3D fix, in any order")
    func machine() {
        var machine = CorrectionsMachine(boardTakesRTCM: true)
        #expect(machine.handle(.source(attached: true)) == [])
        #expect(machine.handle(.power(on: true)) == [])
        #expect(machine.handle(.fixMode(.threeD)) == [])
        #expect(machine.reason == .demandNeedsNoRTK)
        #expect(machine.handle(.demand(needsRTK: true)) == [.subscribe(generation: 1)])
        #expect(machine.reason == nil)
        #expect(machine.handle(.fixMode(.lessThan3D)) == [.unsubscribe])
        #expect(machine.reason == .waitingForFix)
        #expect(machine.handle(.fixMode(.threeD)) == [.subscribe(generation: 2)])
        // The source ending by itself blocks a new subscription until a condition goes and comes back.
        #expect(machine.handle(.sourceEnded(generation: 1)) == [])
        #expect(machine.handle(.sourceEnded(generation: 2)) == [])
        #expect(machine.reason == .sourceFailed)
        #expect(machine.handle(.demand(needsRTK: false)) == [])
        #expect(machine.handle(.demand(needsRTK: true)) == [.subscribe(generation: 3)])
        #expect(machine.handle(.power(on: false)) == [.unsubscribe])
        #expect(machine.reason == .receiverOff)

        var noRTCM = CorrectionsMachine(boardTakesRTCM: false)
        for event: CorrectionsMachine.Event in [.source(attached: true), .power(on: true), .fixMode(.threeD),
                                                 .demand(needsRTK: true)] {
            #expect(noRTCM.handle(event) == [])
        }
        #expect(noRTCM.reason == .boardTakesNoRTCM)
    }

    @Test("the board's threshold: 0.5 m by default, RTK only on a board that takes RTCM 3")
    func threshold() throws {
        let rtk = try #require(try BoardCatalog.builtIn("simulator-rtk"))
        #expect(rtk.corrections.rtcm3 && rtk.corrections.rtkAccuracy == 0.5)
        #expect(rtk.corrections.needsRTK(accuracy: 0.02) && rtk.corrections.needsRTK(accuracy: 0.5))
        #expect(!rtk.corrections.needsRTK(accuracy: 0.51) && !rtk.corrections.needsRTK(accuracy: nil))
        let plain = try #require(try BoardCatalog.builtIn("simulator"))
        #expect(!plain.corrections.needsRTK(accuracy: 0.02))
        for name in ["sparkfun-gps-rtk2", "sparkfun-zed-f9r-phat"] {
            #expect(try #require(try BoardCatalog.builtIn(name)).corrections.rtcm3, "\(name)")
        }
    }

    @Test("a duty cycle for an RTK demand powers on earlier by the time to RTK fixed: typical, then learned")
    func timeToRTKFixed() throws {
        let board = try #require(try BoardCatalog.builtIn("simulator-rtk"))
        let plain = try #require(PowerPlanInputs(board: board))
        let rtk = try #require(PowerPlanInputs(board: board, needsRTK: true))
        #expect(plain.timeToRTKFixed == nil && rtk.timeToRTKFixed == .seconds(30))
        #expect(PowerPlanner.startDuration(.hot, inputs: rtk) - PowerPlanner.startDuration(.hot, inputs: plain)
            == .seconds(30))
        var history = StartTimeHistory()
        history.recordTimeToRTKFixed(.seconds(42))
        history.recordTimeToRTKFixed(.seconds(35))
        let learned = try #require(PowerPlanInputs(board: board, measured: history, needsRTK: true))
        #expect(learned.timeToRTKFixed == .seconds(42))
    }

    @Test("DDC writes: every transfer at least two bytes, a lone trailing byte waits for the next frame")
    func ddcStream() {
        var stream = DDCWriteStream()
        let first = stream.transfers(for: [1, 2, 3, 4, 5], maxChunk: 2)
        // Chunks of at most 3 (the minimum maxChunk) and at least 2: nothing held.
        #expect(first.allSatisfy { $0.count >= 2 } && first.flatMap { $0 } == [1, 2, 3, 4, 5])
        #expect(stream.held == nil)
        #expect(stream.transfers(for: [6], maxChunk: 32) == [])
        #expect(stream.held == 6)
        #expect(stream.transfers(for: [7, 8], maxChunk: 32) == [[6, 7, 8]])
        #expect(stream.held == nil)
        let frame = RTCM3StationARP(stationID: 2003, x: 3_978_000, y: -100, z: 4_968_000).frame
        let transfers = stream.transfers(for: frame, maxChunk: 8)
        #expect(transfers.allSatisfy { $0.count >= 2 && $0.count <= 8 } && transfers.flatMap { $0 } == frame)
    }

    @Test("simulator-rtk: corrections subscribed only while a centimetre demand is present, RTK fixed, linger")
    func receiverTakesCorrectionsOnDemand() async throws {
        let board = try #require(try BoardCatalog.builtIn("simulator-rtk"))
        let rig = try Rig(board: board)
        let source = FakeCorrections(clock: rig.clock, linger: .seconds(5))
        rig.receiver.useCorrections(source.signal)
        let receiver = rig.receiver

        // A subscriber of every fix, asking no accuracy: powered, fixes, no corrections.
        let (first, coarse) = try await rig.freshPosition()
        #expect(first.mode == .threeD && first.carrierSolution == .none)
        #expect(receiver.corrections.notWantedBecause == .demandNeedsNoRTK)
        #expect(source.starts == 0)

        // A 2 cm subscriber: corrections subscribed (powered, 3D fix), the source's producer starts.
        let fine = receiver.fixes(every: .seconds(1), accuracy: 0.02).subscribe(buffering: .bounded(4))
        try await rig.driver.run { await receiver.waitForCorrections { $0.subscribed } }
        #expect(source.starts == 1)
        #expect(rig.hat.receiver.rtcmIntake.inputEnabled && rig.hat.receiver.rtcmIntake.reportsMessages)

        // One station message and one GPS MSM4 per epoch, until the 2 cm subscriber gets its fix.
        let since = rig.clock.now
        let fixed = try await rig.driver.run(limit: .seconds(120)) { () async throws -> Fix in
            let feeder = Task {
                for try await fix in receiver.fixes.subscribe() where fix.hasPosition { source.sendEpoch(fix) }
            }
            defer { feeder.cancel() }
            for try await fix in fine where fix.hasPosition { return fix }
            throw CancellationError()
        }
        let toFixed = since.duration(to: rig.clock.now)
        #expect(fixed.status == .rtkFixed && fixed.carrierSolution == .fixed)
        #expect(try #require(fixed.eph) <= 0.02)
        #expect(fixed.correctionAge != nil && fixed.referenceStation == FakeCorrections.station)
        #expect(toFixed >= .seconds(30) && toFixed <= .seconds(40), "\(toFixed)")
        let status = receiver.corrections
        #expect(status.framesWritten > 0 && status.confirmedUsed > 0 && status.confirmedCRCFailed == 0, "\(status)")
        #expect(status.lastStationUsed == FakeCorrections.station)
        print("simulator-rtk: RTK fixed \(toFixed) after the corrections were subscribed; \(status)")

        // The 2 cm subscriber leaves while the other stays: unsubscribed at once (the receiver stays on),
        // and the source's producer stops after its own linger, not before.
        fine.cancel()
        try await rig.driver.run { await receiver.waitForCorrections { !$0.subscribed } }
        #expect(receiver.corrections.notWantedBecause == .demandNeedsNoRTK)
        #expect(receiver.powerState == .on, "\(receiver.powerState)")
        let written = receiver.corrections.framesWritten
        await rig.driver.advance(by: .milliseconds(4900))
        #expect(source.stops == 0)
        await rig.driver.advance(by: .milliseconds(100))
        // The linger's timer has fired; the stop hook runs on a task the driver does not track
        // (the fake is not one of its parts), so wait for the stop itself, with the clock held.
        let lingerEnd = rig.clock.now
        await source.waitForStop()
        #expect(rig.clock.now == lingerEnd)
        #expect(source.starts == 1 && source.stops == 1)
        #expect(receiver.corrections.framesWritten == written)
        coarse.cancel()
        await rig.shutdown()
    }
}
