@testable import GNSSHat  // Configurator.valsetItems: what the session configures, the receiver accepts
@testable import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Testing

/// The host's own save and restore machines (GNSSHat) run against the simulated receiver.
extension ReceiverBench {
    /// Runs a save to its end; timers fire by moving the clock.
    func save(identity: AidingIdentity? = nil, position: AidingState.Position?, clock: AidingClock)
        -> (report: AidingSaveReport?, state: AidingState?)
    {
        var machine = AidingSaveMachine(identity: identity, position: position, clock: clock)
        var report: AidingSaveReport?
        var state: AidingState?
        var deadline: (UInt64, Duration)?
        var actions = machine.start(now: now)
        for _ in 0..<1000 where report == nil {
            for action in actions {
                switch action {
                case .send(let bytes): send(bytes)
                case .armTimer(let generation, let at): deadline = (generation, at)
                case .write(let written): state = written
                case .finish(let finished): report = finished
                }
            }
            actions = []
            for case .ubx(let message) in take().messages { actions += machine.received(message, now: now) }
            if actions.isEmpty, report == nil, let (generation, at) = deadline {
                advance(by: max(at - now, .zero))
                actions = machine.timerFired(generation: generation, now: now)
            }
        }
        return (report, state)
    }

    /// Runs a restore to its end; timers fire by moving the clock.
    func restore(_ state: AidingState, family: Board.ChipFamily, clock: AidingClock) -> AidingRestoreReport? {
        var machine = AidingRestoreMachine(state: state, family: family, clock: clock, clockError: .milliseconds(50))
        var report: AidingRestoreReport?
        var deadline: (UInt64, Duration)?
        var actions = machine.start(now: now)
        for _ in 0..<1000 where report == nil {
            for action in actions {
                switch action {
                case .send(let bytes): send(bytes)
                case .armTimer(let generation, let at): deadline = (generation, at)
                case .finish(let finished): report = finished
                }
            }
            actions = []
            for message in take().messages { actions += machine.received(message, now: now) }
            if actions.isEmpty, report == nil, let (generation, at) = deadline {
                advance(by: max(at - now, .zero))
                actions = machine.timerFired(generation: generation, now: now)
            }
        }
        return report
    }

    /// Runs a power-save negotiation to its outcome.
    func negotiate(_ commands: [PowerSaveCommand]) -> PowerSaveNegotiation.Outcome? {
        var machine = PowerSaveNegotiation(commands: commands)
        var outcome: PowerSaveNegotiation.Outcome?
        var deadline: (UInt64, Duration)?
        var actions = machine.start(now: now)
        for _ in 0..<100 where outcome == nil {
            for action in actions {
                switch action {
                case .send(let bytes): send(bytes)
                case .armTimer(let generation, let at): deadline = (generation, at)
                case .finish(let finished): outcome = finished
                }
            }
            actions = []
            for message in take().messages { actions += machine.received(message, now: now) }
            if actions.isEmpty, outcome == nil, let (generation, at) = deadline {
                advance(by: max(at - now, .zero))
                actions = machine.timerFired(generation: generation, now: now)
            }
        }
        return outcome
    }

    /// The clock's time as an offset from its start.
    var now: Duration { ManualClock.Instant(offset: .zero).duration(to: clock.now) }

    /// The host's clocks at the bench's time: one boot, a synchronised wall clock.
    var aidingClock: AidingClock {
        AidingClock(
            wallClock: GNSSTime(nanosecondsSinceEpoch: SimulatedReceiver.defaultStartTime.nanosecondsSinceEpoch
                + now.clampedNanoseconds),
            wallClockSynchronised: true, sinceBoot: now, bootID: "bench")
    }

    /// The simulated position with a fix's accuracy, as the host saves it.
    func lastPosition() -> AidingState.Position {
        let settings = receiver.settings.simulation
        return AidingState.Position(
            latitude: settings.latitude, longitude: settings.longitude, altitude: settings.altitude, accuracy: 2)
    }

    /// Powers on and advances until the first fix; returns how long that took.
    func powerOnUntilFix(limit: Duration = .seconds(60), whileBooted: (ReceiverBench) -> Void = { _ in })
        -> Duration?
    {
        let start = now
        receiver.setMainPower(true)
        advance(by: receiver.settings.simulation.boot)
        whileBooted(self)
        let before = receiver.fixesSent
        while now - start < limit {
            if receiver.fixesSent > before { return now - start }
            advance(by: .milliseconds(100))
        }
        return nil
    }
}

@Suite("Simulated receiver: database dump, aiding and aided starts")
struct AidingSimulationTests {
    static let cutSupply = Board.Simulation(coldStart: .seconds(26), hotStart: .seconds(1), backupSupply: false)

    /// A receiver on a cut-supply board that has had its first fix and a while of tracking.
    static func navigating(_ dialect: SimulatedReceiver.Dialect = .ublox(protocolVersion: 27.31)) -> ReceiverBench {
        let bench = ReceiverBench(dialect, simulation: cutSupply)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(40))
        _ = bench.take()
        return bench
    }

    @Test("save before a supply cut, restore after it: an aided start of 3 s instead of a cold one of 26 s")
    func saveCutRestore() throws {
        let bench = Self.navigating()
        let saved = bench.save(position: bench.lastPosition(), clock: bench.aidingClock)
        #expect(saved.report == AidingSaveReport(dump: .complete, records: 32, written: true))
        let state = try #require(saved.state)
        #expect(state.identity.uniqueID == bench.receiver.settings.uniqueID)
        let id = bench.receiver.settings.uniqueID
        #expect(state.databaseRecords.allSatisfy { ReceiverDatabase.kind(of: $0, uniqueID: id) != nil })

        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(600))
        let ttff = bench.powerOnUntilFix { bench in
            let report = bench.restore(state, family: .ubloxGen9, clock: bench.aidingClock)
            #expect(report?.outcome == .complete)
            #expect(report?.recordsAccepted == 32)
            #expect(report?.refused == [])
            #expect(report?.timeSent == true && report?.positionAccuracy != nil)
        }
        let seconds = try #require(ttff)
        #expect(seconds <= .seconds(5), "aided: \(seconds)")
        #expect(bench.receiver.starts == [.cold, .aided])
        let counts = bench.receiver.aidingReceived
        #expect(counts.time == 1 && counts.position == 1 && counts.recordsAccepted == 32 && counts.dumps == 1)
    }

    @Test("after a supply cut without a restore the start is cold, and the database is gone")
    func cutWithoutRestore() throws {
        let bench = Self.navigating()
        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(60))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        let saved = bench.save(position: nil, clock: bench.aidingClock)
        #expect(saved.report?.dump == .refused(.other(0xFF)), "nothing to dump before the fix")
        #expect(bench.receiver.aidingReceived.dumpsRefused == 1)
        bench.advance(by: .seconds(30))
        #expect(bench.receiver.starts == [.cold, .cold])
    }

    @Test("the restored database is what makes the start aided: time and position alone leave a long start")
    func timeAndPositionOnly() throws {
        let bench = Self.navigating()
        let state = AidingState(
            identity: AidingIdentity(softwareVersion: "x", hardwareVersion: "y"), savedAt: bench.aidingClock,
            position: bench.lastPosition(), databaseRecords: [])
        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(60))
        let ttff = try #require(bench.powerOnUntilFix { bench in
            #expect(bench.restore(state, family: .ubloxGen9, clock: bench.aidingClock)?.outcome == .complete)
        })
        #expect(ttff > .seconds(20) && ttff < .seconds(26))
        #expect(bench.receiver.starts == [.cold, .timeAided])
    }

    @Test("aiding during acquisition brings the fix forward; aiding after the fix changes nothing")
    func aidingDuringAndAfterAcquisition() throws {
        let bench = Self.navigating()
        let saved = try #require(bench.save(position: bench.lastPosition(), clock: bench.aidingClock).state)
        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(60))
        // Ten seconds into a cold start, then the 3 s aided figure from the aiding's arrival.
        let ttff = try #require(bench.powerOnUntilFix { bench in
            bench.advance(by: .seconds(10))
            _ = bench.restore(saved, family: .ubloxGen9, clock: bench.aidingClock)
        })
        #expect(ttff > .seconds(13) && ttff <= .seconds(15), "\(ttff)")

        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(60))
        let late = try #require(bench.powerOnUntilFix(limit: .seconds(40)))
        #expect(late > .seconds(26))
        _ = bench.restore(saved, family: .ubloxGen9, clock: bench.aidingClock)
        #expect(bench.receiver.starts == [.cold, .aided, .cold])
    }

    @Test("MGA-ACK only once ack-aiding is on: CFG-NAVX5 on u-blox 8; the first four payload bytes echoed")
    func ackAidingGen8() throws {
        let bench = ReceiverBench(.ublox(protocolVersion: 18), simulation: Self.cutSupply)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        let position = UBXMgaIniPosLLH(latitude: 51.4779, longitude: -0.0015, altitude: 90, accuracy: 5_000)
        bench.send(position.frame)
        #expect(!bench.take().messages.contains { if case .ubx(.mgaAck) = $0 { true } else { false } })
        bench.send(UBXCfgNavX5.ackAiding(true).frame)
        #expect(bench.take().messages.contains {
            if case .ubx(.ack(let ack)) = $0 { ack.acknowledged == .cfgNAVX5 } else { false }
        })
        #expect(bench.receiver.acknowledgesAiding)
        bench.send(position.frame)
        let acks = bench.take().messages.compactMap { if case .ubx(.mgaAck(let ack)) = $0 { ack } else { nil } }
        #expect(acks == [UBXMgaAck.accepting(.mgaINI, payload: position.payload)])
        #expect(acks.first?.msgId == 0x40)
        #expect(acks.first?.msgPayloadStart == UBXMgaAck.payloadStart(of: position.payload))
        // Configuration lives in RAM: a reboot turns acknowledgements off again.
        bench.receiver.setMainPower(false)
        bench.receiver.setMainPower(true)
        #expect(!bench.receiver.acknowledgesAiding)
    }

    @Test("a record from another receiver, or one corrupted in the dump, is refused (MGA-ACK type 0)")
    func foreignAndCorruptRecords() throws {
        let other = Self.navigating()
        let foreign = try #require(other.save(position: nil, clock: other.aidingClock).state)
        let twin = ReceiverBench(.ublox(protocolVersion: 27.31), simulation: Self.cutSupply)
        #expect(twin.receiver.settings.uniqueID == other.receiver.settings.uniqueID, "same seed, same id")

        let another = SimulatedReceiver.Settings(
            dialect: .ublox(protocolVersion: 27.31), simulation: Self.cutSupply, seed: 2)
        #expect(another.uniqueID != other.receiver.settings.uniqueID)
        #expect(ReceiverDatabase.kind(of: foreign.databaseRecords[0], uniqueID: another.uniqueID) == nil)

        // Corrupt: the next dump holds one bad record, in a frame that passes its checksum.
        other.receiver.inject(.corruptDatabaseRecord)
        let saved = other.save(position: other.lastPosition(), clock: other.aidingClock)
        #expect(saved.report?.dump == .complete)
        let state = try #require(saved.state)
        other.receiver.setMainPower(false)
        other.advance(by: .seconds(60))
        var report: AidingRestoreReport?
        let ttff = try #require(other.powerOnUntilFix { bench in
            report = bench.restore(state, family: .ubloxGen9, clock: bench.aidingClock)
        })
        #expect(report?.recordsAccepted == 31)
        #expect(report?.refused.map(\.message) == ["record 2"])
        #expect(other.receiver.aidingReceived.recordsRefused == 1)
        #expect(ttff <= .seconds(5), "the other records still aid")
        // The next dump is whole again.
        other.advance(by: .seconds(5))
        let again = try #require(other.save(position: nil, clock: other.aidingClock).state)
        let id = other.receiver.settings.uniqueID
        #expect(again.databaseRecords.allSatisfy { ReceiverDatabase.kind(of: $0, uniqueID: id) != nil })
    }

    @Test("a record from a receiver with another id is refused on restore")
    func foreignRecordRefused() throws {
        let bench = Self.navigating()
        bench.send(UBXCfgValSet(items: [UBXConfigItem(key: UBXConfigItem.navspgAckAiding, value: 1)]).frame)
        _ = bench.take()
        let foreign = ReceiverDatabase.record(
            index: 0, kind: ReceiverDatabase.ephemerisKind, uniqueID: [1, 2, 3, 4, 5])
        bench.send(UBXMgaDBD(payload: foreign).frame)
        let acks = bench.take().messages.compactMap { if case .ubx(.mgaAck(let ack)) = $0 { ack } else { nil } }
        #expect(acks.count == 1)
        #expect(acks.first?.accepted == false && acks.first?.msgId == 0x80)
        #expect(acks.first?.msgPayloadStart == UBXMgaAck.payloadStart(of: foreign))
    }

    @Test("SEC-UNIQID: 5 stable bytes (version 1), 6 on an M10 (version 2)", arguments: [27.31, 34.10])
    func uniqueID(_ version: Double) throws {
        let bench = ReceiverBench(.ublox(protocolVersion: version))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        bench.send(UBX.poll(.secUNIQID))
        let ids = bench.take().messages.compactMap { if case .ubx(.secUniqID(let id)) = $0 { id } else { nil } }
        let id = try #require(ids.first)
        #expect(id.uniqueID == bench.receiver.settings.uniqueID)
        #expect(id.uniqueID.count == (version >= 34 ? 6 : 5) && id.version == (version >= 34 ? 2 : 1))
        #expect(id.uniqueID == ReceiverBench(.ublox(protocolVersion: version)).receiver.settings.uniqueID)
    }

    @Test("MTK: PMTK740 and PMTK741 acknowledged and counted; a time-aided start after a cut")
    func mtkAiding() throws {
        let bench = ReceiverBench(.mtk, simulation: Self.cutSupply)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(40))
        let position = bench.lastPosition()
        let state = AidingState(
            identity: AidingIdentity(softwareVersion: "x", hardwareVersion: "y"), savedAt: bench.aidingClock,
            position: position, databaseRecords: [])
        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(60))
        let ttff = try #require(bench.powerOnUntilFix { bench in
            let report = bench.restore(state, family: .mtk, clock: bench.aidingClock)
            #expect(report?.outcome == .complete && report?.refused == [])
            #expect(report?.timeSent == true && report?.positionAccuracy != nil)
        })
        #expect(ttff < .seconds(26))
        #expect(bench.receiver.starts == [.cold, .timeAided])
        #expect(bench.receiver.aidingReceived.time == 2 && bench.receiver.aidingReceived.position == 1)
    }

    @Test("the first fix after a start is within a few metres and improves to 1.5 m (NAV-PVT hAcc, gpsd eph)")
    func firstFixAccuracy() throws {
        let bench = ReceiverBench(.ublox(protocolVersion: 27.31), simulation: Self.cutSupply)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        bench.send(UBXCfgValSet(items: Configurator.valsetItems(period: .seconds(1), i2c: false)).frame)
        bench.advance(by: .seconds(40))
        let cold = bench.fixes().filter(\.hasPosition).compactMap(\.eph)
        #expect(cold.first == 6)
        #expect(cold.allSatisfy { $0 <= 10 })
        #expect(cold.last == 1.5)
        // A hot start (backup RAM kept by a GNSS stop and start).
        bench.send(UBXCfgRst.gnssStop.frame)
        bench.send(UBXCfgRst.gnssStart.frame)
        bench.advance(by: .seconds(3))
        #expect(bench.fixes().filter(\.hasPosition).compactMap(\.eph).first == 4)
    }
}
