// The save and restore sequences driven with no threads and no clock: a full dump and restore exchange,
// a corrupt record on the wire, a refused record, a missing final ack, an unsynchronised clock and the
// growth of a stale position's accuracy; the MTK variant.
import GNSSHat
import GNSSProtocol
import Testing

@Suite("Aiding save and restore sequences")
struct AidingSequenceTests {
    static let identity = AidingIdentity(
        softwareVersion: "ROM SPG 5.10", hardwareVersion: "000A0000", uniqueID: [1, 2, 3, 4, 5])
    static let records: [[UInt8]] = (0..<3).map { index in
        [UInt8(index + 1), 0, 0, 0] + [UInt8](repeating: UInt8(index), count: 20)
    }
    static let position = AidingState.Position(latitude: 51.4779, longitude: -0.0015, altitude: 45, accuracy: 4)
    static let clock = AidingClock(
        wallClock: GNSSTime(nanosecondsSinceEpoch: 1_796_000_000_000_000_000), wallClockSynchronised: true,
        sinceBoot: .seconds(1_000), bootID: "boot-a")

    static func decoded(_ frame: [UInt8]) throws -> UBXMessage { try UBXMessage(frame: ArraySlice(frame)) }

    static func sent(_ actions: [AidingRestoreMachine.Action]) throws -> [UBXMessage] {
        try actions.compactMap { if case .send(let frame) = $0 { try decoded(frame) } else { nil } }
    }

    static func timer(_ actions: [AidingRestoreMachine.Action]) -> UInt64? {
        actions.lazy.compactMap { if case .armTimer(let generation, _) = $0 { generation } else { nil } }.last
    }

    static func report(_ actions: [AidingRestoreMachine.Action]) -> AidingRestoreReport? {
        actions.lazy.compactMap { if case .finish(let report) = $0 { report } else { nil } }.first
    }

    static func saveReport(_ actions: [AidingSaveMachine.Action]) -> AidingSaveReport? {
        actions.lazy.compactMap { if case .finish(let report) = $0 { report } else { nil } }.first
    }

    static func written(_ actions: [AidingSaveMachine.Action]) -> AidingState? {
        actions.lazy.compactMap { if case .write(let state) = $0 { state } else { nil } }.first
    }

    // MARK: - Save

    @Test("save: poll, records, the dump-end ack with the count, identity polled, then the state written")
    func saveComplete() throws {
        var machine = AidingSaveMachine(identity: nil, position: Self.position, clock: Self.clock)
        let start = machine.start(now: .zero)
        #expect(start == [.send(UBXMgaDBD.poll), .armTimer(generation: 1, deadline: .milliseconds(3_100))])
        for (index, record) in Self.records.enumerated() {
            #expect(
                machine.received(.mgaDBD(UBXMgaDBD(payload: record)), now: .seconds(Int64(index)))
                    == [
                        .armTimer(
                            generation: UInt64(index + 2), deadline: .seconds(Int64(index)) + .milliseconds(3_100))
                    ])
        }
        let end = machine.received(.mgaAck(.dumpEnd(count: 3)), now: .seconds(3))
        #expect(
            end == [
                .send(UBX.poll(.secUNIQID)), .send(UBX.poll(.monVER)), .armTimer(generation: 5, deadline: .seconds(4)),
            ])
        #expect(
            machine.received(
                .monVER(UBXMonVER(softwareVersion: "ROM SPG 5.10", hardwareVersion: "000A0000")), now: .seconds(3)
            ).isEmpty)
        let done = machine.received(.secUniqID(UBXSecUniqID(version: 1, uniqueID: [1, 2, 3, 4, 5])), now: .seconds(3))
        let state = try #require(Self.written(done))
        #expect(
            state.identity == Self.identity && state.databaseRecords == Self.records && state.position == Self.position)
        #expect(state.savedAt.bootID == "boot-a" && state.savedAt.wallClockSynchronised)
        #expect(Self.saveReport(done) == AidingSaveReport(dump: .complete, records: 3, written: true))
        #expect(machine.isFinished)
        #expect(machine.timerFired(generation: 5, now: .seconds(4)).isEmpty, "a timer after the end does nothing")
    }

    @Test("save: a missing dump end keeps what arrived; a stale timer is ignored; a known identity is not polled")
    func saveMissingEnd() throws {
        var machine = AidingSaveMachine(identity: Self.identity, position: nil, clock: Self.clock)
        _ = machine.start(now: .zero)
        _ = machine.received(.mgaDBD(UBXMgaDBD(payload: Self.records[0])), now: .seconds(1))
        #expect(machine.timerFired(generation: 1, now: .seconds(3)).isEmpty, "replaced by the record's timer")
        let done = machine.timerFired(generation: 2, now: .milliseconds(4_100))
        #expect(Self.written(done)?.databaseRecords == [Self.records[0]])
        #expect(Self.saveReport(done) == AidingSaveReport(dump: .endMissing, records: 1, written: true))
    }

    @Test("save: a count that does not match, a refused poll, and no MON-VER (nothing written)")
    func saveOddEnds() throws {
        var mismatch = AidingSaveMachine(identity: Self.identity, position: nil, clock: Self.clock)
        _ = mismatch.start(now: .zero)
        _ = mismatch.received(.mgaDBD(UBXMgaDBD(payload: Self.records[0])), now: .zero)
        let end = mismatch.received(.mgaAck(.dumpEnd(count: 2)), now: .zero)
        #expect(Self.saveReport(end)?.dump == .countMismatch(announced: 2))

        var refused = AidingSaveMachine(identity: nil, position: Self.position, clock: Self.clock)
        _ = refused.start(now: .zero)
        let nak = refused.received(
            .mgaAck(UBXMgaAck(type: 0, infoCode: 0xFF, msgId: 0x80, msgPayloadStart: 0)), now: .zero)
        let generation = try #require(nak.compactMap { if case .armTimer(let g, _) = $0 { g } else { nil } }.first)
        let done = refused.timerFired(generation: generation, now: .seconds(1))
        #expect(Self.written(done) == nil, "no identity, nothing to tie the state to")
        #expect(Self.saveReport(done) == AidingSaveReport(dump: .refused(.other(0xFF)), records: 0, written: false))
    }

    // MARK: - Restore

    static func state(position: AidingState.Position? = position, savedSecondsAgo: Int64 = 600) -> AidingState {
        AidingState(
            identity: identity,
            savedAt: .init(
                wallClock: GNSSTime(
                    nanosecondsSinceEpoch: clock.wallClock.nanosecondsSinceEpoch - savedSecondsAgo * 1_000_000_000),
                wallClockSynchronised: true, sinceBoot: clock.sinceBoot - .seconds(savedSecondsAgo), bootID: "boot-a"),
            position: position, databaseRecords: records)
    }

    /// What the receiver says to each message: accept, or refuse with an info code.
    static func answer(_ message: UBXMessage, refuse: UInt8? = nil) -> Message {
        switch message {
        case .cfgNavX5, .cfgValSet: return .ubx(.ack(UBXAck(message.messageID)))
        default:
            let payload = message.payload
            let start = UBXMgaAck.payloadStart(of: payload)
            let id = message.messageID.id
            if let refuse {
                return .ubx(.mgaAck(UBXMgaAck(type: 0, infoCode: refuse, msgId: id, msgPayloadStart: start)))
            }
            return .ubx(.mgaAck(UBXMgaAck(type: 1, infoCode: 0, msgId: id, msgPayloadStart: start)))
        }
    }

    @Test("restore, u-blox 9: acks on, time, position grown by the time off, every record paced by its ack")
    func restoreComplete() throws {
        var machine = AidingRestoreMachine(
            state: Self.state(), family: .ubloxGen9, clock: Self.clock, clockError: .milliseconds(20))
        var actions = machine.start(now: .zero)
        var messages: [UBXMessage] = []
        while Self.report(actions) == nil {
            let sent = try Self.sent(actions)
            #expect(sent.count == 1, "one outstanding at a time")
            let message = try #require(sent.first)
            messages.append(message)
            actions = machine.received(Self.answer(message), now: .milliseconds(100 * Int64(messages.count)))
        }
        #expect(messages.count == 6)
        guard case .cfgValSet(let valset) = messages[0] else { throw DecodeError.truncated }
        #expect(valset.items == [UBXConfigItem(key: UBXConfigItem.navspgAckAiding, value: 1)])
        let time = try #require(
            messages.lazy.compactMap { if case .mgaIniTimeUTC(let m) = $0 { m } else { nil } }.first)
        // Sent 100 ms after the start: the wall clock moved with the monotonic one.
        #expect(time.time == GNSSTime(nanosecondsSinceEpoch: Self.clock.wallClock.nanosecondsSinceEpoch + 100_000_000))
        #expect(time.accuracy == .milliseconds(520))
        let position = try #require(
            messages.lazy.compactMap { if case .mgaIniPosLLH(let m) = $0 { m } else { nil } }.first)
        // 4 m saved + 30 m/s x 600 s off.
        #expect(position.posAcc == 1_800_400 && position.lat == 514_779_000)
        #expect(messages.suffix(3) == Self.records.map { .mgaDBD(UBXMgaDBD(payload: $0)) })
        let report = try #require(Self.report(actions))
        #expect(
            report
                == AidingRestoreReport(
                    outcome: .complete, timeSent: true, positionAccuracy: 18_004, recordsAccepted: 3, refused: [],
                    acknowledgementsEnabled: true))
        #expect(machine.isFinished)
    }

    @Test("restore: a refused record (and a corrupt one the receiver never acks) are reported; the rest go on")
    func restoreRefusedAndCorrupt() throws {
        var machine = AidingRestoreMachine(
            state: Self.state(position: nil), family: .ubloxGen8, clock: Self.clock, clockError: nil)
        var actions = machine.start(now: .zero)
        var message = try #require(try Self.sent(actions).first)
        guard case .cfgNavX5(let navx5) = message else { throw DecodeError.truncated }
        #expect(navx5.ackAiding == 1)
        actions = machine.received(Self.answer(message), now: .zero)
        // No time (clock not synchronised), no position: the first record is next; refuse it.
        message = try #require(try Self.sent(actions).first)
        #expect(message == .mgaDBD(UBXMgaDBD(payload: Self.records[0])))
        // An ack for another message is not this one's.
        #expect(
            machine.received(
                .ubx(.mgaAck(UBXMgaAck(type: 1, infoCode: 0, msgId: 0x40, msgPayloadStart: 1))), now: .zero
            ).isEmpty)
        actions = machine.received(Self.answer(message, refuse: 1), now: .zero)
        message = try #require(try Self.sent(actions).first)
        actions = machine.received(Self.answer(message), now: .zero)
        // The last record was corrupted on the way: the receiver drops the frame and never acks it.
        let generation = try #require(Self.timer(actions))
        let end = machine.timerFired(generation: generation, now: .seconds(1))
        let report = try #require(Self.report(end))
        #expect(report.outcome == .timedOut(waitingFor: "record 2"))
        #expect(!report.timeSent && report.positionAccuracy == nil && report.recordsAccepted == 1)
        #expect(report.refused == [.init(message: "record 0", reason: "the receiver does not know the time")])
    }

    @Test("restore: a missing ack ends the restore at once; a stale timer does nothing")
    func restoreTimeout() throws {
        var machine = AidingRestoreMachine(
            state: Self.state(), family: .ubloxM10, clock: Self.clock, clockError: .milliseconds(5))
        let start = machine.start(now: .zero)
        let ack = machine.received(Self.answer(try #require(try Self.sent(start).first)), now: .milliseconds(10))
        #expect(machine.timerFired(generation: try #require(Self.timer(start)), now: .seconds(1)).isEmpty)
        let end = machine.timerFired(generation: try #require(Self.timer(ack)), now: .seconds(2))
        #expect(Self.report(end)?.outcome == .timedOut(waitingFor: "time"))
        #expect(machine.isFinished)
        #expect(machine.received(Self.answer(.poll(.mgaDBD)), now: .seconds(3)).isEmpty)
    }

    @Test("restore: a receiver that refuses acks gets time and position unpaced, and no records")
    func restoreWithoutAcks() throws {
        var machine = AidingRestoreMachine(
            state: Self.state(), family: .ubloxGen9, clock: Self.clock, clockError: .zero)
        let start = machine.start(now: .zero)
        let actions = machine.received(.ubx(.nak(UBXAck(.cfgVALSET))), now: .zero)
        let sent = try Self.sent(actions)
        #expect(sent.count == 2)
        #expect(sent.map(\.messageID) == [.mgaINI, .mgaINI])
        let report = try #require(Self.report(actions))
        #expect(!report.acknowledgementsEnabled && report.timeSent && report.recordsAccepted == 0)
        #expect(Self.timer(start) == 1)
    }

    @Test(
        "position growth: the accuracy grows by the speed bound times the time off; unknown age or too far: none",
        arguments: [
            (Int64(0), 30.0, 4.0 as Double?), (60, 30, 1_804), (600, 2, 1_204), (3_400, 30, nil),
        ] as [(Int64, Double, Double?)])
    func positionGrowth(age: Int64, speed: Double, expected: Double?) {
        let machine = AidingRestoreMachine(
            state: Self.state(savedSecondsAgo: age), family: .ubloxGen9, clock: Self.clock, clockError: nil,
            settings: .init(speedBound: speed))
        #expect(machine.grownPositionAccuracy == expected)
    }

    @Test("position growth across boots needs synchronised clocks at both ends")
    func positionAcrossBoots() {
        var clock = Self.clock
        clock.bootID = "boot-b"
        clock.wallClockSynchronised = false
        let unknown = AidingRestoreMachine(state: Self.state(), family: .ubloxGen9, clock: clock, clockError: .zero)
        #expect(unknown.grownPositionAccuracy == nil)
        clock.wallClockSynchronised = true
        let known = AidingRestoreMachine(state: Self.state(), family: .ubloxGen9, clock: clock, clockError: .zero)
        #expect(known.grownPositionAccuracy == 18_004)
    }

    @Test("restore, MTK: PMTK740 and PMTK741 paced by PMTK001, no database; unsynchronised: nothing to send")
    func restoreMTK() throws {
        var machine = AidingRestoreMachine(
            state: Self.state(savedSecondsAgo: 60), family: .mtk, clock: Self.clock, clockError: .milliseconds(1))
        var actions = machine.start(now: .zero)
        let sentences = { (actions: [AidingRestoreMachine.Action]) in
            actions.compactMap { if case .send(let bytes) = $0 { String(decoding: bytes, as: UTF8.self) } else { nil } }
        }
        #expect(sentences(actions).count == 1 && sentences(actions)[0].hasPrefix("$PMTK740,2026,"))
        actions = machine.received(.nmea(.pmtk(.ack(command: 740, flag: 3))), now: .zero)
        #expect(
            sentences(actions).count == 1 && sentences(actions)[0].hasPrefix("$PMTK741,51.477900,-0.001500,45.0,2026,"))
        actions = machine.received(.nmea(.pmtk(.ack(command: 741, flag: 2))), now: .zero)
        let report = try #require(Self.report(actions))
        #expect(report.outcome == .complete && report.timeSent && report.positionAccuracy == 1_804)
        #expect(report.refused == [.init(message: "position", reason: "valid packet, action failed")])

        var unsynchronised = AidingRestoreMachine(state: Self.state(), family: .mtk, clock: Self.clock, clockError: nil)
        let none = unsynchronised.start(now: .zero)
        #expect(sentences(none).isEmpty)
        #expect(Self.report(none)?.outcome == .complete && unsynchronised.isFinished)
    }
}
