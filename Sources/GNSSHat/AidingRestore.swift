// The restore sequence after a receiver's power-on, as a plain value: events in (messages from the
// receiver, timer expiries), ordered actions out (frames to send, a timer to arm, the end). No I/O and no
// clock: times are offsets on the caller's monotonic clock, and the wall clock at the start is an input.
//
// u-blox: turn on MGA acknowledgements (CFG-NAVX5 ackAiding on u-blox 8, CFG-NAVSPG-ACKAIDING by
// CFG-VALSET on 9 and M10), then MGA-INI-TIME_UTC only when the system clock is synchronised, then
// MGA-INI-POS_LLH with its accuracy grown by the time off, then the MGA-DBD records, one outstanding at a
// time, each paced by its MGA-ACK (matched by msgId and the echoed first four payload bytes). A refused
// message (MGA-ACK type 0) is counted, skipped and reported; a time-out ends the restore. A receiver that
// refuses acknowledgements still gets time and position (unpaced), but no records: without acks nothing
// says when the receiver is ready for the next one.
// MTK: `$PMTK740` time, then `$PMTK741` position (it carries the time too, so it also needs a synchronised
// clock, and GlobalTop asks for a position better than 30 km), each paced by `$PMTK001`; no database.
//
// Nothing here fails a power-on: every outcome is a report.
public import GNSSProtocol

/// How a restore went.
public struct AidingRestoreReport: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Every step ran.
        case complete
        /// No answer within the time-out; the steps after it were not run.
        case timedOut(waitingFor: String)
    }

    public var outcome: Outcome
    /// Whether time aiding was sent (only with a synchronised clock).
    public var timeSent: Bool
    /// The accuracy the position was sent with (metres), or nil when it was not sent.
    public var positionAccuracy: Double?
    /// Records the receiver accepted.
    public var recordsAccepted: Int
    /// Records (by index in the saved state) and aiding messages the receiver refused, with why.
    public var refused: [Refusal]
    /// Whether the receiver acknowledged the request for MGA acknowledgements (u-blox; true for MTK).
    public var acknowledgementsEnabled: Bool

    public struct Refusal: Hashable, Sendable {
        /// `time`, `position` or `record N`.
        public var message: String
        public var reason: String

        public init(message: String, reason: String) {
            self.message = message
            self.reason = reason
        }
    }

    public init(
        outcome: Outcome, timeSent: Bool, positionAccuracy: Double?, recordsAccepted: Int, refused: [Refusal],
        acknowledgementsEnabled: Bool
    ) {
        self.outcome = outcome
        self.timeSent = timeSent
        self.positionAccuracy = positionAccuracy
        self.recordsAccepted = recordsAccepted
        self.refused = refused
        self.acknowledgementsEnabled = acknowledgementsEnabled
    }
}

/// The restore sequence's state machine (see the file's header).
public struct AidingRestoreMachine: Sendable {
    public struct Settings: Hashable, Sendable {
        /// How long to wait for each acknowledgement.
        public var ackTimeout: Duration
        /// How fast the receiver may have moved while off, m/s: the saved accuracy grows by this times the
        /// time off. The default, 30 m/s (108 km/h), bounds a hat in a car on a motorway; a fixed install
        /// may pass 0 and a walker 2. Too small a bound misleads the receiver (u-blox: assistance worse than
        /// its stated accuracy degrades it), too large one only costs some of the benefit.
        public var speedBound: Double
        /// A position less accurate than this (metres) is not sent: it would narrow the search little.
        public var maximumPositionAccuracy: Double
        /// Added to the clock's maximum error for the time aiding's accuracy: the time between reading the
        /// clock and the receiver reading the message (UART queues, the DDC poll interval).
        public var transferMargin: Duration

        public init(
            ackTimeout: Duration = .seconds(1), speedBound: Double = 30, maximumPositionAccuracy: Double = 100_000,
            transferMargin: Duration = .milliseconds(500)
        ) {
            self.ackTimeout = ackTimeout
            self.speedBound = speedBound
            self.maximumPositionAccuracy = maximumPositionAccuracy
            self.transferMargin = transferMargin
        }
    }

    public enum Action: Hashable, Sendable {
        /// Write these bytes to the receiver.
        case send([UInt8])
        /// Call ``timerFired(generation:now:)`` at `deadline` (one timer; a new one replaces the old).
        case armTimer(generation: UInt64, deadline: Duration)
        /// The sequence is over.
        case finish(AidingRestoreReport)
    }

    /// One message to send and the reply it waits for.
    enum Step: Hashable, Sendable {
        case enableAcks(UBX.MessageID, [UInt8])
        case time
        case position(Double)
        case record(Int)
    }

    public let settings: Settings
    private let family: Board.ChipFamily
    private let state: AidingState
    private let clock: AidingClock
    private let clockError: Duration?
    private var startedAt: Duration = .zero
    private var steps: [Step] = []
    private var waiting: (step: Step, match: UInt32?)?
    private var generation: UInt64 = 0
    private var report = AidingRestoreReport(
        outcome: .complete, timeSent: false, positionAccuracy: nil, recordsAccepted: 0, refused: [],
        acknowledgementsEnabled: false)
    private(set) var finished = false
    private var started = false

    /// A restore of `state` to a receiver of `family`, at `clock` (read when the power-on finished);
    /// `clockError` is the system clock's maximum error when it is synchronised, nil when it is not.
    public init(
        state: AidingState, family: Board.ChipFamily, clock: AidingClock, clockError: Duration?,
        settings: Settings = Settings()
    ) {
        self.state = state
        self.family = family
        self.clock = clock
        self.clockError = clock.wallClockSynchronised ? clockError : nil
        self.settings = settings
    }

    /// Whether the sequence is over.
    public var isFinished: Bool { finished }

    /// The position's accuracy after the time off: the saved accuracy plus ``Settings/speedBound`` times the
    /// age; nil when there is no position, its age is unknown, or it grew past the maximum.
    public var grownPositionAccuracy: Double? {
        guard let position = state.position, let age = state.age(now: clock) else { return nil }
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) * 1e-18
        let grown = max(0, position.accuracy) + settings.speedBound * seconds
        let limit =
            family == .mtk
            ? min(settings.maximumPositionAccuracy, PMTKPositionAiding.requiredAccuracy)
            : settings.maximumPositionAccuracy
        return grown.isFinite && grown <= limit ? grown : nil
    }

    /// Starts: the first message goes out.
    public mutating func start(now: Duration) -> [Action] {
        guard !started else { return [] }
        started = true
        startedAt = now
        switch family {
        case .ubloxGen8:
            let frame = UBXCfgNavX5.ackAiding(true).frame
            steps = [.enableAcks(.cfgNAVX5, frame)]
        case .ubloxGen9, .ubloxM10:
            let valset = UBXCfgValSet(items: [UBXConfigItem(key: UBXConfigItem.navspgAckAiding, value: 1)])
            steps = [.enableAcks(.cfgVALSET, valset.frame)]
        case .mtk:
            report.acknowledgementsEnabled = true
        }
        if clockError != nil { steps.append(.time) }
        // PMTK741 carries the time: without a synchronised clock it would poison the receiver.
        if let accuracy = grownPositionAccuracy, family != .mtk || clockError != nil {
            steps.append(.position(accuracy))
        }
        if family.isUBlox { steps += state.databaseRecords.indices.map { .record($0) } }
        return next(now: now)
    }

    /// A message from the receiver.
    public mutating func received(_ message: Message, now: Duration) -> [Action] {
        guard let (step, match) = waiting else { return [] }
        switch (step, message) {
        case (.enableAcks(let id, _), .ubx(.ack(let ack))) where ack.acknowledged == id:
            report.acknowledgementsEnabled = true
            return next(now: now)
        case (.enableAcks(let id, _), .ubx(.nak(let nak))) where nak.acknowledged == id:
            // Without acks, time and position go unpaced and the records stay home (see the header).
            steps.removeAll { if case .record = $0 { true } else { false } }
            return next(now: now)
        case (_, .ubx(.mgaAck(let ack))) where ack.msgPayloadStart == match && ack.msgId == Self.ackedID(step):
            if !ack.accepted {
                refuse(step, ack.info.description)
            } else if case .record = step {
                report.recordsAccepted += 1
            }
            return next(now: now)
        case (_, .nmea(.pmtk(let pmtk))):
            guard let (command, flag) = pmtk.acknowledgement, command == Self.pmtkCommand(step) else { return [] }
            if flag != .succeeded { refuse(step, flag.description) }
            return next(now: now)
        default:
            return []
        }
    }

    /// The timer armed by an earlier action fired; a stale generation is ignored.
    public mutating func timerFired(generation fired: UInt64, now: Duration) -> [Action] {
        guard fired == generation, let (step, _) = waiting else { return [] }
        if case .enableAcks = step {
            // No answer to the configuration: as a refusal (see the header), not the end.
            steps.removeAll { if case .record = $0 { true } else { false } }
            return next(now: now)
        }
        report.outcome = .timedOut(waitingFor: Self.name(step))
        return finish()
    }

    private static func ackedID(_ step: Step) -> UInt8? {
        switch step {
        case .time, .position: UBX.MessageID.mgaINI.id
        case .record: UBX.MessageID.mgaDBD.id
        case .enableAcks: nil
        }
    }

    private static func pmtkCommand(_ step: Step) -> Int? {
        switch step {
        case .time: PMTKTimeAiding.number
        case .position: PMTKPositionAiding.number
        case .record, .enableAcks: nil
        }
    }

    private static func name(_ step: Step) -> String {
        switch step {
        case .enableAcks(let id, _): "\(id) acknowledgement"
        case .time: "time"
        case .position: "position"
        case .record(let index): "record \(index)"
        }
    }

    private mutating func refuse(_ step: Step, _ reason: String) {
        report.refused.append(.init(message: Self.name(step), reason: reason))
    }

    /// Sends the next step's message and waits for its reply (or, unpaced, goes straight on).
    private mutating func next(now: Duration) -> [Action] {
        waiting = nil
        var actions: [Action] = []
        while !steps.isEmpty {
            let step = steps.removeFirst()
            let (frame, match) = message(step, now: now)
            actions.append(.send(frame))
            if case .time = step { report.timeSent = true }
            if case .position(let accuracy) = step { report.positionAccuracy = accuracy }
            let paced: Bool
            if case .enableAcks = step { paced = true } else { paced = report.acknowledgementsEnabled }
            if paced {
                waiting = (step, match)
                generation += 1
                actions.append(.armTimer(generation: generation, deadline: now + settings.ackTimeout))
                return actions
            }
        }
        return actions + finish()
    }

    private mutating func finish() -> [Action] {
        finished = true
        waiting = nil
        generation += 1
        return [.finish(report)]
    }

    /// The frame of `step` and the `msgPayloadStart` its MGA-ACK echoes.
    private func message(_ step: Step, now: Duration) -> ([UInt8], UInt32?) {
        // The wall clock moves on with the monotonic one since the start.
        let wall = GNSSTime(
            nanosecondsSinceEpoch: clock.wallClock.nanosecondsSinceEpoch + Self.nanoseconds(now - startedAt))
        switch step {
        case .enableAcks(_, let frame):
            return (frame, nil)
        case .time:
            if family == .mtk { return (PMTKTimeAiding(time: wall).sentence, nil) }
            let message = UBXMgaIniTimeUTC(time: wall, accuracy: (clockError ?? .zero) + settings.transferMargin)
            return (message.frame, UBXMgaAck.payloadStart(of: message.payload))
        case .position(let accuracy):
            let position = state.position ?? .init(latitude: 0, longitude: 0, altitude: 0, accuracy: .nan)
            if family == .mtk {
                let message = PMTKPositionAiding(
                    latitude: position.latitude, longitude: position.longitude, altitude: position.altitude, time: wall)
                return (message.sentence, nil)
            }
            let message = UBXMgaIniPosLLH(
                latitude: position.latitude, longitude: position.longitude, altitude: position.altitude,
                accuracy: accuracy)
            return (message.frame, UBXMgaAck.payloadStart(of: message.payload))
        case .record(let index):
            let record = UBXMgaDBD(payload: state.databaseRecords[index])
            return (record.frame, record.payloadStart)
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
