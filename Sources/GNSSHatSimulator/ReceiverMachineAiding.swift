// The simulated receiver's navigation database and the aiding it takes after a cold boot: it dumps its
// database on an MGA-DBD poll (records, then the dump-end MGA-ACK whose msgPayloadStart is their count),
// tells its unique id (SEC-UNIQID), and takes time and position (MGA-INI-TIME_UTC, MGA-INI-POS_LLH; MTK
// `$PMTK740`, `$PMTK741`) and its own records back (MGA-DBD), each acknowledged by MGA-ACK while ack-aiding
// is on. Aiding that arrives before the fix brings the fix forward: time, position and an ephemeris record
// to `aidedStart` after the arrival, time and position alone to `timeAidedStart`.
//
// The records are synthetic: the real payload is firmware-specific and never interpreted by the host. Each
// carries a marker and this receiver's unique id, so a record from another receiver (or none at all) is
// refused, and a checksum, so a corrupted one is refused too.
import GNSSHat
import GNSSProtocol

/// What aiding arrived since the receiver booted.
struct AidingIntake: Sendable, Hashable {
    var time = false
    var position = false
    /// Accepted records holding an ephemeris.
    var ephemerisRecords = 0
}

extension SimulatedReceiver {
    /// The aiding a simulated receiver took, over its whole life.
    public struct AidingCounts: Sendable, Hashable {
        /// Time aiding used (MGA-INI-TIME_UTC within ``ReceiverDatabase/maximumTimeAccuracy``, `$PMTK740`,
        /// `$PMTK741`).
        public var time = 0
        /// Position aiding used (MGA-INI-POS_LLH or `$PMTK741` close enough to the truth).
        public var position = 0
        /// Database records accepted, and refused (foreign or corrupt).
        public var recordsAccepted = 0
        public var recordsRefused = 0
        /// Database dumps sent (MGA-DBD polls answered with records), and polls refused for want of data.
        public var dumps = 0
        public var dumpsRefused = 0

        public init() {}
    }
}

/// The synthetic database records of a simulated receiver and the limits its aiding must meet.
enum ReceiverDatabase {
    /// Marks a record as the simulator's.
    static let marker: [UInt8] = Array("SIMDB".utf8)
    /// The record kinds (byte 2).
    static let ephemerisKind: UInt8 = 0x01
    static let almanacKind: UInt8 = 0x02
    /// Records in a dump: ephemerides of the satellites tracked plus almanac, ionosphere and the like.
    static let ephemerisRecords = 20
    static let otherRecords = 12
    /// Time aiding coarser than this does not help the acquisition.
    static let maximumTimeAccuracy = Duration.seconds(10)
    /// Position aiding further from the truth, or claiming worse, than this does not help (u-blox; MTK asks
    /// for better than 30 km).
    static let maximumPositionError = 100_000.0
    static let maximumMTKPositionError = PMTKPositionAiding.requiredAccuracy
    /// MGA-ACK infoCode for a record that cannot be stored (u-blox: "could not be stored in the database").
    static let refusedInfo: UInt8 = 4
    /// An M10 refuses an MGA-DBD poll with an empty database this way (AidingSave's `refused`).
    static let emptyDatabaseInfo: UInt8 = 0xFF

    /// Record `index` of `kind` for the receiver with `uniqueID`: index (u16) and kind first (what the
    /// MGA-ACK echoes, so each record's echo differs), then the id, the marker, stable filler and a checksum.
    static func record(index: Int, kind: UInt8, uniqueID: [UInt8]) -> [UInt8] {
        var payload: [UInt8] = [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8), kind, 0xDB]
        payload += uniqueID
        payload += marker
        for offset in 0..<20 {
            payload.append(UInt8(truncatingIfNeeded: index &* 31 &+ offset &* 7 &+ Int(uniqueID.first ?? 0)))
        }
        payload.append(checksum(payload))
        return payload
    }

    static func checksum(_ bytes: some Collection<UInt8>) -> UInt8 {
        bytes.reduce(0) { $0 &+ $1 }
    }

    /// Whether `payload` is an intact record of the receiver with `uniqueID`, and its kind.
    static func kind(of payload: [UInt8], uniqueID: [UInt8]) -> UInt8? {
        let idEnd = 4 + uniqueID.count
        let markerEnd = idEnd + marker.count
        guard payload.count == markerEnd + 21, Array(payload[4..<idEnd]) == uniqueID,
            Array(payload[idEnd..<markerEnd]) == marker,
            checksum(payload.dropLast()) == payload[payload.count - 1]
        else { return nil }
        return payload[2]
    }
}

extension ReceiverMachine {
    // MARK: Database dump and identity

    /// Answers an MGA-DBD poll: every record, then the dump end; with nothing to dump, the refusal an M10
    /// with an empty database sends.
    mutating func dumpDatabase(now: Duration, output: inout ReceiverOutput) {
        let hasEphemeris = ephemerisUntil.map { now < $0 } ?? false
        guard hasEphemeris || almanac else {
            aidingCounts.dumpsRefused += 1
            let refusal = UBXMgaAck(
                type: 0, infoCode: ReceiverDatabase.emptyDatabaseInfo, msgId: UBX.MessageID.mgaDBD.id,
                msgPayloadStart: 0)
            send(refusal.frame, now: now, output: &output)
            return
        }
        var kinds = Array(repeating: ReceiverDatabase.almanacKind, count: ReceiverDatabase.otherRecords)
        if hasEphemeris {
            kinds = Array(repeating: ReceiverDatabase.ephemerisKind, count: ReceiverDatabase.ephemerisRecords) + kinds
        }
        let corrupted = corruptNextDump ? min(2, kinds.count - 1) : nil
        corruptNextDump = false
        for (index, kind) in kinds.enumerated() {
            var payload = ReceiverDatabase.record(index: index, kind: kind, uniqueID: settings.uniqueID)
            // Bad contents in a good frame: the record's own checksum no longer matches.
            if index == corrupted { payload[payload.count - 2] ^= 0xA5 }
            send(UBXMgaDBD(payload: payload).frame, now: now, output: &output)
        }
        aidingCounts.dumps += 1
        send(UBXMgaAck.dumpEnd(count: UInt32(kinds.count)).frame, now: now, output: &output)
    }

    /// Answers a SEC-UNIQID poll: version 1 with 5 bytes, version 2 with 6 (M10).
    mutating func sendUniqueID(now: Duration, output: inout ReceiverOutput) {
        let id = UBXSecUniqID(version: settings.uniqueID.count == 6 ? 2 : 1, uniqueID: settings.uniqueID)
        send(id.frame, now: now, output: &output)
    }

    // MARK: Aiding

    /// MGA-INI-TIME_UTC: used when it is a valid time with a useful accuracy. The time itself is not
    /// checked against the simulation's: the host's wall clock need not agree with the simulated start time.
    mutating func receiveTimeAiding(_ message: UBXMgaIniTimeUTC, now: Duration, output: inout ReceiverOutput) {
        if message.time != nil, message.accuracy <= ReceiverDatabase.maximumTimeAccuracy {
            aiding.time = true
            aidingCounts.time += 1
        }
        acknowledgeAiding(message.payload, accepted: message.time != nil, now: now, output: &output)
        applyAiding(now: now)
    }

    /// MGA-INI-POS_LLH: used when it and its accuracy are within 100 km of the truth.
    mutating func receivePositionAiding(_ message: UBXMgaIniPosLLH, now: Duration, output: inout ReceiverOutput) {
        let limit = ReceiverDatabase.maximumPositionError
        if message.accuracy <= limit, distance(message.latitude, message.longitude, now: now) <= limit {
            aiding.position = true
            aidingCounts.position += 1
        }
        acknowledgeAiding(message.payload, accepted: true, now: now, output: &output)
        applyAiding(now: now)
    }

    /// MGA-DBD record: accepted when it is one of this receiver's, intact.
    mutating func receiveRecord(_ record: UBXMgaDBD, now: Duration, output: inout ReceiverOutput) {
        guard let kind = ReceiverDatabase.kind(of: record.payload, uniqueID: settings.uniqueID) else {
            aidingCounts.recordsRefused += 1
            acknowledgeAiding(record.payload, id: .mgaDBD, accepted: false, now: now, output: &output)
            return
        }
        aidingCounts.recordsAccepted += 1
        almanac = true
        if kind == ReceiverDatabase.ephemerisKind { aiding.ephemerisRecords += 1 }
        acknowledgeAiding(record.payload, id: .mgaDBD, accepted: true, now: now, output: &output)
        applyAiding(now: now)
    }

    /// `$PMTK740` (time) and `$PMTK741` (position and time): acknowledged `$PMTK001,n,3`, or 0 when invalid.
    mutating func receiveMTKAiding(_ message: PMTKMessage, now: Duration, output: inout ReceiverOutput) {
        var valid = false
        if PMTKTimeAiding(message) != nil {
            valid = true
            aiding.time = true
            aidingCounts.time += 1
        } else if let position = PMTKPositionAiding(message) {
            valid = true
            aiding.time = true
            aidingCounts.time += 1
            if distance(position.latitude, position.longitude, now: now) <= ReceiverDatabase.maximumMTKPositionError {
                aiding.position = true
                aidingCounts.position += 1
            }
        }
        send(PMTKMessage.ack(command: message.number, flag: valid ? 3 : 0).sentence(), now: now, output: &output)
        applyAiding(now: now)
    }

    /// Brings the fix forward when aiding arrived before it: aided with time, position and an ephemeris
    /// record, time-aided with time and position. A start already faster (hot) or already fixed is kept.
    mutating func applyAiding(now: Duration) {
        guard mode == .acquiring, let fix = fixAt, now < fix, aiding.time, aiding.position else { return }
        let aided = aiding.ephemerisRecords > 0
        let candidate = now + (aided ? settings.aidedStart : settings.timeAidedStart)
        guard candidate < fix else { return }
        fixAt = candidate
        if !starts.isEmpty { starts[starts.count - 1] = aided ? .aided : .timeAided }
    }

    /// An MGA-ACK for an aiding message while ack-aiding is on: type 1 accepted, 0 refused.
    mutating func acknowledgeAiding(
        _ payload: [UInt8], id: UBX.MessageID = .mgaINI, accepted: Bool, now: Duration, output: inout ReceiverOutput
    ) {
        guard ackAiding else { return }
        let ack =
            accepted
            ? UBXMgaAck.accepting(id, payload: payload)
            : UBXMgaAck(
                type: 0, infoCode: ReceiverDatabase.refusedInfo, msgId: id.id,
                msgPayloadStart: UBXMgaAck.payloadStart(of: payload))
        send(ack.frame, now: now, output: &output)
    }

    /// Metres from the trajectory's position now (flat-earth, ample for "within 100 km").
    func distance(_ latitude: Double, _ longitude: Double, now: Duration) -> Double {
        let truth = position(at: now)
        let north = (latitude - truth.latitude) * 111_320
        let scale = max(SimulationMath.cosine(SimulationMath.radians(truth.latitude)), 0.01)
        let east = (longitude - truth.longitude) * 111_320 * scale
        return (north * north + east * east).squareRoot()
    }
}
