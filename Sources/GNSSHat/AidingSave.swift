// The save sequence before a u-blox receiver's supply is cut, as a plain value: events in (messages from
// the receiver, timer expiries), ordered actions out (frames to send, a timer to arm, the state to write,
// the end). No I/O and no clock: times are offsets on the caller's monotonic clock.
//
// SAVE = poll MGA-DBD; collect the records until the dump's end, which u-blox marks with an MGA-ACK whose
// msgId is 0x80 and whose msgPayloadStart is the number of records sent (SparkFun's
// readNavigationDatabase waits for the same ack, with a 3.1 s time-out "in case the final UBX-MGA-ACK was
// missed"), or until no record came for `dumpTimeout`; then poll SEC-UNIQID and MON-VER when the identity
// is not known; then write. A missing dump end still saves what arrived (each record stands alone).
public import GNSSProtocol

/// How a save went.
public struct AidingSaveReport: Hashable, Sendable {
    public enum Dump: Hashable, Sendable {
        /// The dump ended with its MGA-ACK and the count matched.
        case complete
        /// The dump-end ack announced `announced` records but a different number arrived.
        case countMismatch(announced: UInt32)
        /// No dump end within the time-out: what arrived was kept.
        case endMissing
        /// The receiver refused the poll (an MGA-ACK with type 0, e.g. an M10 with an empty database).
        case refused(UBXMgaAck.Info)
    }

    public var dump: Dump
    /// How many records were collected (and written, when ``written``).
    public var records: Int
    /// Whether the state was handed to the caller to write; false when the receiver's identity stayed
    /// unknown (no MON-VER), since a state that cannot be tied to a receiver must not be restored.
    public var written: Bool

    public init(dump: Dump, records: Int, written: Bool) {
        self.dump = dump
        self.records = records
        self.written = written
    }
}

/// The save sequence's state machine (see the file's header).
public struct AidingSaveMachine: Sendable {
    public struct Settings: Hashable, Sendable {
        /// How long to wait for the next record (or the dump's end) before giving up on the rest.
        public var dumpTimeout: Duration
        /// How long to wait for MON-VER and SEC-UNIQID.
        public var identityTimeout: Duration

        public init(dumpTimeout: Duration = .milliseconds(3_100), identityTimeout: Duration = .seconds(1)) {
            self.dumpTimeout = dumpTimeout
            self.identityTimeout = identityTimeout
        }
    }

    public enum Action: Hashable, Sendable {
        /// Write these bytes to the receiver.
        case send([UInt8])
        /// Call ``timerFired(generation:now:)`` at `deadline` (one timer; a new one replaces the old).
        case armTimer(generation: UInt64, deadline: Duration)
        /// Save this state (``AidingState/save(in:)``); a failure there is the caller's to report.
        case write(AidingState)
        /// The sequence is over; the supply may be cut.
        case finish(AidingSaveReport)
    }

    enum Phase: Hashable, Sendable {
        case idle
        case dumping
        case identifying
        case done
    }

    public let settings: Settings
    private(set) var phase = Phase.idle
    private var generation: UInt64 = 0
    private var records: [[UInt8]] = []
    private var dump = AidingSaveReport.Dump.endMissing
    private var versions: UBXMonVER?
    private var uniqueID: [UInt8]?
    private var identity: AidingIdentity?
    private let position: AidingState.Position?
    private let clock: AidingClock

    /// A save for a receiver whose identity is `identity` (nil: poll it), last at `position`, at `clock`.
    public init(
        identity: AidingIdentity?, position: AidingState.Position?, clock: AidingClock,
        settings: Settings = Settings()
    ) {
        self.identity = identity
        self.position = position
        self.clock = clock
        self.settings = settings
    }

    /// Whether the sequence is over.
    public var isFinished: Bool { phase == .done }

    /// Starts: polls the database.
    public mutating func start(now: Duration) -> [Action] {
        guard phase == .idle else { return [] }
        phase = .dumping
        return [.send(UBXMgaDBD.poll), arm(now + settings.dumpTimeout)]
    }

    /// A message from the receiver.
    public mutating func received(_ message: UBXMessage, now: Duration) -> [Action] {
        switch (phase, message) {
        case (.dumping, .mgaDBD(let record)):
            records.append(record.payload)
            return [arm(now + settings.dumpTimeout)]
        case (.dumping, .mgaAck(let ack)) where ack.msgId == UBX.MessageID.mgaDBD.id:
            if !ack.accepted {
                dump = .refused(ack.info)
            } else {
                dump =
                    ack.msgPayloadStart == UInt32(records.count)
                    ? .complete : .countMismatch(announced: ack.msgPayloadStart)
            }
            return identify(now: now)
        case (.identifying, .monVER(let version)):
            versions = version
            return identityComplete ? finish() : []
        case (.identifying, .secUniqID(let id)):
            uniqueID = id.uniqueID
            return identityComplete ? finish() : []
        default:
            return []
        }
    }

    /// The timer armed by an earlier action fired; a stale generation is ignored.
    public mutating func timerFired(generation fired: UInt64, now: Duration) -> [Action] {
        guard fired == generation else { return [] }
        switch phase {
        case .dumping:
            dump = .endMissing
            return identify(now: now)
        case .identifying:
            return finish()
        case .idle, .done:
            return []
        }
    }

    private var identityComplete: Bool { versions != nil && uniqueID != nil }

    private mutating func identify(now: Duration) -> [Action] {
        if identity != nil { return finish() }
        phase = .identifying
        return [.send(UBX.poll(.secUNIQID)), .send(UBX.poll(.monVER)), arm(now + settings.identityTimeout)]
    }

    private mutating func finish() -> [Action] {
        phase = .done
        generation += 1
        if identity == nil, let versions {
            identity = AidingIdentity(
                softwareVersion: versions.softwareVersion, hardwareVersion: versions.hardwareVersion, uniqueID: uniqueID
            )
        }
        guard let identity else {
            return [.finish(AidingSaveReport(dump: dump, records: records.count, written: false))]
        }
        let state = AidingState(
            identity: identity,
            savedAt: clock, position: position, databaseRecords: records)
        return [.write(state), .finish(AidingSaveReport(dump: dump, records: records.count, written: true))]
    }

    private mutating func arm(_ deadline: Duration) -> Action {
        generation += 1
        return .armTimer(generation: generation, deadline: deadline)
    }
}
