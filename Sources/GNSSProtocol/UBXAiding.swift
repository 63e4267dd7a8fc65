// UBX messages for aiding a receiver after a full power cut: its navigation database (MGA-DBD) dumped
// before the cut and sent back after it, time and position assistance (MGA-INI), their acknowledgement
// (MGA-ACK), and the chip's unique id (SEC-UNIQID) that ties a saved database to one receiver.
//
// Layouts from u-blox's interface descriptions (ZED-F9P UBX-18010854 R04, section 5.12 UBX-MGA and
// 5.16.2 SEC-UNIQID; the same messages in the u-blox M8 receiver description UBX-13003221), checked
// against pyubx2 1.4.0 and u-blox's own ubxlib (gnss/src/u_gnss_mga.c). The dump's end: "The receiver
// will indicate the finish of the transmission with a UBX-MGA-ACK. The msgPayloadStart field of the
// UBX-MGA-ACK message will contain a U4 representing the number of UBX-MGA-DBD-DATA* messages sent"
// (UBX-18010854 R04, 5.12.3.1); ubxlib checks that ack's msgId (0x80) and count the same way.

extension UBX.Class {
    /// Multiple GNSS assistance (MGA).
    public static let mga: UInt8 = 0x13
    /// Security features (SEC).
    public static let sec: UInt8 = 0x27
}

extension UBX.MessageID {
    public static let mgaINI = UBX.MessageID(0x13, 0x40)
    public static let mgaACK = UBX.MessageID(0x13, 0x60)
    public static let mgaDBD = UBX.MessageID(0x13, 0x80)
    public static let secUNIQID = UBX.MessageID(0x27, 0x03)
}

// MARK: - MGA-DBD

/// UBX-MGA-DBD (13 80): one entry of the receiver's navigation database.
///
/// The receiver dumps its database as a series of these when polled (``poll``); each is meant to be
/// sent back, unchanged, to the same receiver and firmware. The payload is firmware-specific
/// (12 reserved bytes, then data; at most 164 bytes by the interface description, though ubxlib has
/// seen 184 on an M10 and 248 on an M9), so it is kept byte for byte and never interpreted.
public struct UBXMgaDBD: Hashable, Sendable {
    public static let messageID = UBX.MessageID.mgaDBD

    /// The whole payload, as the receiver sent it.
    public var payload: [UInt8]

    /// A database entry. An empty payload would be a poll, not an entry; use ``poll`` for that.
    public init(payload: [UInt8]) {
        self.payload = payload
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard !p.isEmpty else { throw .ubxLength(messageClass: 0x13, id: 0x80, length: 0) }
        payload = Array(p)
    }

    /// The first four payload bytes: what the receiver's MGA-ACK for this entry echoes
    /// (``UBXMgaAck/msgPayloadStart``), zero-padded for a shorter payload.
    public var payloadStart: UInt32 { UBXMgaAck.payloadStart(of: payload) }

    public var frame: [UInt8] { UBX.frame(.mgaDBD, payload: payload) }

    /// Polls the whole database (`B5 62 13 80 00 00 93 CC`); the receiver answers with every entry and
    /// ends with an MGA-ACK whose ``UBXMgaAck/msgPayloadStart`` is the number of entries it sent.
    public static let poll = UBX.poll(.mgaDBD)
}

// MARK: - MGA-ACK

/// UBX-MGA-ACK-DATA0 (13 60, 8 bytes): the receiver accepted or refused an assistance message.
///
/// Sent for each MGA message while acknowledgements are enabled (CFG-NAVX5 `ackAiding` on u-blox 8,
/// CFG-NAVSPG-ACKAIDING on u-blox 9 and M10), and, whatever that setting, once at the end of a
/// database dump with `msgId` 0x80 and the number of entries sent in ``msgPayloadStart``.
public struct UBXMgaAck: Hashable, Sendable {
    public static let messageID = UBX.MessageID.mgaACK

    /// Why the receiver did what it did (`infoCode`).
    public enum Info: Hashable, Sendable, CustomStringConvertible {
        /// 0: the receiver accepted the data.
        case accepted
        /// 1: the receiver does not know the time, so cannot use the data (send MGA-INI-TIME first).
        case noTime
        /// 2: the message version is not supported.
        case versionNotSupported
        /// 3: the message size does not match its version.
        case sizeMismatch
        /// 4: the data could not be stored in the database.
        case storeFailed
        /// 5: the receiver is not ready to use the data.
        case notReady
        /// 6: the message type is unknown.
        case unknownType
        /// Any other code; an M10 refuses an MGA-DBD poll with 0xFF when its database is empty
        /// (seen by ubxlib, not documented).
        case other(UInt8)

        public init(code: UInt8) {
            switch code {
            case 0: self = .accepted
            case 1: self = .noTime
            case 2: self = .versionNotSupported
            case 3: self = .sizeMismatch
            case 4: self = .storeFailed
            case 5: self = .notReady
            case 6: self = .unknownType
            default: self = .other(code)
            }
        }

        public var description: String {
            switch self {
            case .accepted: "accepted"
            case .noTime: "the receiver does not know the time"
            case .versionNotSupported: "message version not supported"
            case .sizeMismatch: "message size does not match its version"
            case .storeFailed: "could not be stored in the database"
            case .notReady: "the receiver is not ready for it"
            case .unknownType: "unknown message type"
            case .other(let code): "info code \(code)"
            }
        }
    }

    /// 0: the message was not used (see ``infoCode``); 1: it was accepted.
    public var type: UInt8
    /// Message version (0).
    public var version: UInt8
    /// Why (see ``Info``).
    public var infoCode: UInt8
    /// The id (in class MGA) of the message acknowledged: 0x40 for MGA-INI, 0x80 for MGA-DBD.
    public var msgId: UInt8
    /// The first four bytes of the acknowledged message's payload, little-endian; for the end of a
    /// database dump, the number of MGA-DBD messages sent.
    public var msgPayloadStart: UInt32

    public init(type: UInt8, version: UInt8 = 0, infoCode: UInt8, msgId: UInt8, msgPayloadStart: UInt32) {
        self.type = type
        self.version = version
        self.infoCode = infoCode
        self.msgId = msgId
        self.msgPayloadStart = msgPayloadStart
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 8 else { throw .ubxLength(messageClass: 0x13, id: 0x60, length: p.count) }
        self.init(type: p.u8(0), version: p.u8(1), infoCode: p.u8(2), msgId: p.u8(3), msgPayloadStart: p.u32(4))
    }

    /// Whether the receiver accepted the message (`type` 1).
    public var accepted: Bool { type == 1 }
    public var info: Info { Info(code: infoCode) }

    /// The acknowledgement of an accepted message with `payload` (what a receiver sends; for simulators).
    public static func accepting(_ id: UBX.MessageID, payload: [UInt8]) -> UBXMgaAck {
        UBXMgaAck(type: 1, infoCode: 0, msgId: id.id, msgPayloadStart: payloadStart(of: payload))
    }

    /// The end of a database dump of `count` entries.
    public static func dumpEnd(count: UInt32) -> UBXMgaAck {
        UBXMgaAck(type: 1, infoCode: 0, msgId: UBX.MessageID.mgaDBD.id, msgPayloadStart: count)
    }

    /// The first four bytes of `payload` as ``msgPayloadStart`` holds them (little-endian, zero-padded).
    public static func payloadStart(of payload: [UInt8]) -> UInt32 {
        var value: UInt32 = 0
        for (index, byte) in payload.prefix(4).enumerated() { value |= UInt32(byte) << UInt32(8 * index) }
        return value
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 8)
        w.u8(type)
        w.u8(version)
        w.u8(infoCode)
        w.u8(msgId)
        w.u32(msgPayloadStart)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.mgaACK, payload: payload) }
}

// MARK: - MGA-INI

/// UBX-MGA-INI-TIME_UTC (13 40, type 0x10, 24 bytes): the current UTC time and its accuracy.
///
/// Time assistance "inaccurate by more than the specified time accuracy may lead to substantially
/// degraded receiver performance" (u-blox): give an accuracy that bounds the real error.
public struct UBXMgaIniTimeUTC: Hashable, Sendable {
    public static let messageID = UBX.MessageID.mgaINI
    /// The `type` byte that selects this MGA-INI form.
    public static let type: UInt8 = 0x10

    /// Which event the time refers to (`ref`): source in bits 0-3 (0 the message's receipt, 1 a pulse on
    /// EXTINT0, 2 on EXTINT1), `fall` bit 4 (falling edge), `last` bit 5 (the last pulse, not the next).
    public struct Reference: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The time is that of the message's receipt (no pulse).
        public static let onReceipt = Reference(rawValue: 0)

        public init(source: UInt8, fallingEdge: Bool = false, lastPulse: Bool = false) {
            rawValue = (source & 0x0F) | (fallingEdge ? 0x10 : 0) | (lastPulse ? 0x20 : 0)
        }

        public var source: UInt8 { rawValue & 0x0F }
        public var fallingEdge: Bool { rawValue & 0x10 != 0 }
        public var lastPulse: Bool { rawValue & 0x20 != 0 }
    }

    /// Leap seconds since 1980 when not known (`leapSecs` 0x80).
    public static let leapSecondsUnknown: Int8 = -128

    public var version: UInt8
    public var reference: Reference
    /// Leap seconds since 1980, or ``leapSecondsUnknown``.
    public var leapSeconds: Int8
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hour: UInt8
    public var minute: UInt8
    public var second: UInt8
    /// Nanoseconds of the second, 0...999,999,999.
    public var nanoseconds: UInt32
    /// The accuracy: whole seconds (`tAccS`) and nanoseconds (`tAccNs`).
    public var accuracySeconds: UInt16
    public var accuracyNanoseconds: UInt32

    public init(
        version: UInt8 = 0, reference: Reference = .onReceipt, leapSeconds: Int8 = leapSecondsUnknown, year: UInt16,
        month: UInt8, day: UInt8, hour: UInt8, minute: UInt8, second: UInt8, nanoseconds: UInt32,
        accuracySeconds: UInt16, accuracyNanoseconds: UInt32
    ) {
        self.version = version
        self.reference = reference
        self.leapSeconds = leapSeconds
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
        self.nanoseconds = nanoseconds
        self.accuracySeconds = accuracySeconds
        self.accuracyNanoseconds = accuracyNanoseconds
    }

    /// The time `time` (UTC) with `accuracy` (at most 65,535.999999999 s: larger is clamped).
    public init(
        time: GNSSTime, accuracy: Duration, leapSeconds: Int8 = leapSecondsUnknown, reference: Reference = .onReceipt
    ) {
        let whole = GNSSTime(nanosecondsSinceEpoch: floorDiv(time.nanosecondsSinceEpoch, 1_000_000_000) * 1_000_000_000)
        let date = whole.date
        let day = whole.timeOfDay
        let (accuracySeconds, accuracyNanoseconds) = Self.split(accuracy)
        self.init(
            reference: reference, leapSeconds: leapSeconds, year: UInt16(clamping: date.year),
            month: UInt8(clamping: date.month), day: UInt8(clamping: date.day), hour: UInt8(clamping: day.hour),
            minute: UInt8(clamping: day.minute), second: UInt8(clamping: day.second),
            nanoseconds: UInt32(clamping: time.nanosecondsSinceEpoch - whole.nanosecondsSinceEpoch),
            accuracySeconds: accuracySeconds, accuracyNanoseconds: accuracyNanoseconds)
    }

    /// `tAccS` and `tAccNs` for `accuracy`: negative is 0, beyond what `tAccS` holds is its maximum.
    static func split(_ accuracy: Duration) -> (UInt16, UInt32) {
        let (seconds, attoseconds) = accuracy.components
        if seconds < 0 { return (0, 0) }
        if seconds > Int64(UInt16.max) { return (UInt16.max, 999_999_999) }
        return (UInt16(seconds), UInt32(attoseconds / 1_000_000_000))
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 24 else { throw .ubxLength(messageClass: 0x13, id: 0x40, length: p.count) }
        guard p.u8(0) == Self.type else { throw .ubxField(messageClass: 0x13, id: 0x40, offset: 0) }
        self.init(
            version: p.u8(1), reference: Reference(rawValue: p.u8(2)), leapSeconds: p.i8(3), year: p.u16(4),
            month: p.u8(6), day: p.u8(7), hour: p.u8(8), minute: p.u8(9), second: p.u8(10), nanoseconds: p.u32(12),
            accuracySeconds: p.u16(16), accuracyNanoseconds: p.u32(20))
    }

    /// The instant, when the fields form a valid date and time.
    public var time: GNSSTime? {
        guard let date = GNSSDate(validYear: Int(year), month: Int(month), day: Int(day)),
            hour < 24, minute < 60, second <= 60, nanoseconds < 1_000_000_000
        else { return nil }
        let base = GNSSTime(date: date, time: TimeOfDay(hour: Int(hour), minute: Int(minute), second: Int(second)))
        return GNSSTime(nanosecondsSinceEpoch: base.nanosecondsSinceEpoch + Int64(nanoseconds))
    }

    /// The accuracy as a duration.
    public var accuracy: Duration {
        .seconds(Int64(accuracySeconds)) + .nanoseconds(Int64(accuracyNanoseconds))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 24)
        w.u8(Self.type)
        w.u8(version)
        w.u8(reference.rawValue)
        w.i8(leapSeconds)
        w.u16(year)
        w.u8(month)
        w.u8(day)
        w.u8(hour)
        w.u8(minute)
        w.u8(second)
        w.u8(0)
        w.u32(nanoseconds)
        w.u16(accuracySeconds)
        w.zeros(2)
        w.u32(accuracyNanoseconds)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.mgaINI, payload: payload) }
}

/// UBX-MGA-INI-POS_LLH (13 40, type 0x01, 20 bytes): an approximate position and its accuracy.
public struct UBXMgaIniPosLLH: Hashable, Sendable {
    public static let messageID = UBX.MessageID.mgaINI
    /// The `type` byte that selects this MGA-INI form.
    public static let type: UInt8 = 0x01

    public var version: UInt8
    /// WGS84 latitude and longitude, 1e-7 degree.
    public var lat: Int32
    public var lon: Int32
    /// WGS84 altitude (above the ellipsoid), cm.
    public var alt: Int32
    /// Position accuracy (standard deviation), cm.
    public var posAcc: UInt32

    public init(version: UInt8 = 0, lat: Int32, lon: Int32, alt: Int32, posAcc: UInt32) {
        self.version = version
        self.lat = lat
        self.lon = lon
        self.alt = alt
        self.posAcc = posAcc
    }

    /// A position in degrees and metres (height above the WGS84 ellipsoid), with its accuracy in
    /// metres; each is rounded to the wire's unit and clamped to its range.
    public init(latitude: Double, longitude: Double, altitude: Double, accuracy: Double) {
        func clamped32(_ value: Double) -> Int32 {
            value.isFinite ? Int32(clamping: Int64(max(-9e18, min(9e18, value.rounded())))) : 0
        }
        // An unknown (NaN) or huge accuracy is the largest the field holds: never claim better than known.
        let accuracyCm = (accuracy * 100).rounded()
        let posAcc: UInt32 =
            accuracyCm.isNaN || accuracyCm >= Double(UInt32.max) ? UInt32.max : UInt32(max(0, accuracyCm))
        self.init(
            lat: clamped32(latitude * 1e7), lon: clamped32(longitude * 1e7), alt: clamped32(altitude * 100),
            posAcc: posAcc)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 20 else { throw .ubxLength(messageClass: 0x13, id: 0x40, length: p.count) }
        guard p.u8(0) == Self.type else { throw .ubxField(messageClass: 0x13, id: 0x40, offset: 0) }
        self.init(version: p.u8(1), lat: p.i32(4), lon: p.i32(8), alt: p.i32(12), posAcc: p.u32(16))
    }

    public var latitude: Double { Double(lat) * 1e-7 }
    public var longitude: Double { Double(lon) * 1e-7 }
    /// Height above the WGS84 ellipsoid, metres.
    public var altitude: Double { Double(alt) * 0.01 }
    /// Accuracy, metres.
    public var accuracy: Double { Double(posAcc) * 0.01 }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 20)
        w.u8(Self.type)
        w.u8(version)
        w.zeros(2)
        w.i32(lat)
        w.i32(lon)
        w.i32(alt)
        w.u32(posAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.mgaINI, payload: payload) }
}

// MARK: - SEC-UNIQID

/// UBX-SEC-UNIQID (27 03): the chip's unique id, answered to a poll (`UBX.poll(.secUNIQID)`).
///
/// Five bytes of id on u-blox 8 and 9 (message version 1, 9 bytes: UBX-18010854 R04 5.16.2; a NEO-M8
/// in gpsd's capture `ublox8-uniqid-monhw.log` sends this form), six on M10 (version 2, 10 bytes:
/// SparkFun u-blox GNSS v3 `getUniqueChipId`, pyubx2's SEC-UNIQID-V2).
public struct UBXSecUniqID: Hashable, Sendable {
    public static let messageID = UBX.MessageID.secUNIQID

    public var version: UInt8
    /// The id: 5 bytes (version 1) or 6 (version 2).
    public var uniqueID: [UInt8]

    public init(version: UInt8, uniqueID: [UInt8]) {
        self.version = version
        self.uniqueID = uniqueID
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 9 || p.count == 10 else {
            throw .ubxLength(messageClass: 0x27, id: 0x03, length: p.count)
        }
        self.init(version: p.u8(0), uniqueID: Array(p[4...]))
    }

    /// The id in lower-case hexadecimal, e.g. `cffb03d259`.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        for byte in uniqueID {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 10)
        w.u8(version)
        w.zeros(3)
        for byte in uniqueID { w.u8(byte) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.secUNIQID, payload: payload) }
}

// MARK: - Decoding (called from UBXMessage.decode)

extension UBXMessage {
    /// MGA-INI comes in forms told apart by their first byte; the forms not decoded here stay whole.
    static func decodeMgaINI(_ p: UnsafeRawBufferPointer, _ slice: ArraySlice<UInt8>) throws(DecodeError) -> UBXMessage
    {
        switch p.u8(0) {
        case UBXMgaIniTimeUTC.type: return .mgaIniTimeUTC(try UBXMgaIniTimeUTC(payload: p))
        case UBXMgaIniPosLLH.type: return .mgaIniPosLLH(try UBXMgaIniPosLLH(payload: p))
        default: return .other(.mgaINI, payload: slice)
        }
    }
}
