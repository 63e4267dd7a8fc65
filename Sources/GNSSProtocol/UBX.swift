// UBX: u-blox's binary protocol. Message types keep the wire's integers (so encoding is lossless)
// and expose values in SI units and degrees through computed properties.

/// Constants and frame helpers for UBX (`B5 62 | class | id | length u16 LE | payload | CK_A CK_B`).
public enum UBX {
    public static let sync: (UInt8, UInt8) = (0xB5, 0x62)

    /// Message classes.
    public enum Class {
        public static let nav: UInt8 = 0x01
        public static let rxm: UInt8 = 0x02
        public static let inf: UInt8 = 0x04
        public static let ack: UInt8 = 0x05
        public static let cfg: UInt8 = 0x06
        public static let mon: UInt8 = 0x0A
        public static let tim: UInt8 = 0x0D
    }

    /// A class and id pair, e.g. `UBX.MessageID.navPVT`.
    public struct MessageID: Hashable, Sendable, CustomStringConvertible {
        public var messageClass: UInt8
        public var id: UInt8

        public init(_ messageClass: UInt8, _ id: UInt8) {
            self.messageClass = messageClass
            self.id = id
        }

        public static let navStatus = MessageID(0x01, 0x03)
        public static let navDOP = MessageID(0x01, 0x04)
        public static let navPVT = MessageID(0x01, 0x07)
        public static let navTimeUTC = MessageID(0x01, 0x21)
        public static let navSAT = MessageID(0x01, 0x35)
        public static let navEOE = MessageID(0x01, 0x61)
        public static let rxmPMREQ = MessageID(0x02, 0x41)
        public static let infError = MessageID(0x04, 0x00)
        public static let infWarning = MessageID(0x04, 0x01)
        public static let infNotice = MessageID(0x04, 0x02)
        public static let infTest = MessageID(0x04, 0x03)
        public static let infDebug = MessageID(0x04, 0x04)
        public static let ackNak = MessageID(0x05, 0x00)
        public static let ackAck = MessageID(0x05, 0x01)
        public static let cfgPRT = MessageID(0x06, 0x00)
        public static let cfgMSG = MessageID(0x06, 0x01)
        public static let cfgRST = MessageID(0x06, 0x04)
        public static let cfgRATE = MessageID(0x06, 0x08)
        public static let cfgVALSET = MessageID(0x06, 0x8A)
        public static let cfgVALGET = MessageID(0x06, 0x8B)
        public static let monVER = MessageID(0x0A, 0x04)

        public var description: String { UBX.name(messageClass: messageClass, id: id) }
    }

    /// The u-blox name of a message (`NAV-PVT`), or its numbers (`0x01-0x07`).
    public static func name(messageClass: UInt8, id: UInt8) -> String {
        switch (messageClass, id) {
        case (0x01, 0x03): return "NAV-STATUS"
        case (0x01, 0x04): return "NAV-DOP"
        case (0x01, 0x07): return "NAV-PVT"
        case (0x01, 0x21): return "NAV-TIMEUTC"
        case (0x01, 0x02): return "NAV-POSLLH"
        case (0x01, 0x06): return "NAV-SOL"
        case (0x01, 0x12): return "NAV-VELNED"
        case (0x01, 0x20): return "NAV-TIMEGPS"
        case (0x01, 0x30): return "NAV-SVINFO"
        case (0x01, 0x14): return "NAV-HPPOSLLH"
        case (0x28, 0x00): return "HNR-PVT"
        case (0x01, 0x35): return "NAV-SAT"
        case (0x01, 0x61): return "NAV-EOE"
        case (0x02, 0x41): return "RXM-PMREQ"
        case (0x04, 0x00): return "INF-ERROR"
        case (0x04, 0x01): return "INF-WARNING"
        case (0x04, 0x02): return "INF-NOTICE"
        case (0x04, 0x03): return "INF-TEST"
        case (0x04, 0x04): return "INF-DEBUG"
        case (0x05, 0x00): return "ACK-NAK"
        case (0x05, 0x01): return "ACK-ACK"
        case (0x06, 0x00): return "CFG-PRT"
        case (0x06, 0x01): return "CFG-MSG"
        case (0x06, 0x04): return "CFG-RST"
        case (0x06, 0x08): return "CFG-RATE"
        case (0x06, 0x8A): return "CFG-VALSET"
        case (0x06, 0x8B): return "CFG-VALGET"
        case (0x0A, 0x04): return "MON-VER"
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x40): return "MGA-INI"
        case (0x13, 0x60): return "MGA-ACK"
        case (0x13, 0x80): return "MGA-DBD"
        case (0x27, 0x03): return "SEC-UNIQID"
        case (0x06, 0x11): return "CFG-RXM"
        case (0x06, 0x23): return "CFG-NAVX5"
        case (0x06, 0x3B): return "CFG-PM2"
        case (0x06, 0x86): return "CFG-PMS"
        default:
            var bytes = Array("0x".utf8)
            ASCII.appendHexByte(messageClass, to: &bytes)
            bytes.append(contentsOf: "-0x".utf8)
            ASCII.appendHexByte(id, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Whether a length can belong to a class and id; the framer drops a header that fails this at once
    /// instead of waiting for a payload that will never come. Length 0 (a poll) is always plausible.
    @inlinable
    public static func isPlausible(messageClass: UInt8, id: UInt8, length: Int) -> Bool {
        if length == 0 { return true }
        switch (messageClass, id) {
        case (0x01, 0x03): return length == 16
        case (0x01, 0x04): return length == 18
        case (0x01, 0x07): return length == 92 || length == 84
        case (0x01, 0x21): return length == 20
        case (0x01, 0x02): return length == 28
        case (0x01, 0x06): return length == 52
        case (0x01, 0x12): return length == 36
        case (0x01, 0x20): return length == 16
        case (0x01, 0x14): return length == 36
        case (0x28, 0x00): return length == 72
        case (0x01, 0x35), (0x01, 0x30): return length >= 8 && (length - 8) % 12 == 0
        case (0x05, 0x00), (0x05, 0x01): return length == 2
        case (0x0A, 0x04): return length >= 40 && (length - 40) % 30 == 0
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x60): return length == 8
        case (0x27, 0x03): return length == 9 || length == 10
        case (0x06, 0x11): return length == 2
        case (0x06, 0x23): return length == 40 || length == 44
        case (0x06, 0x3B): return length == 44 || length == 48
        case (0x06, 0x86): return length == 8
        default: return true
        }
    }

    /// A complete frame around `payload`: sync, class, id, length, payload, checksum.
    public static func frame(_ message: MessageID, payload: some Collection<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = []
        appendFrame(message, payload: payload, to: &bytes)
        return bytes
    }

    /// Appends a complete frame around `payload` to `bytes`.
    public static func appendFrame(_ message: MessageID, payload: some Collection<UInt8>, to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.reserveCapacity(start + payload.count + 8)
        bytes.append(0xB5)
        bytes.append(0x62)
        bytes.append(message.messageClass)
        bytes.append(message.id)
        bytes.append(UInt8(truncatingIfNeeded: payload.count))
        bytes.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        bytes.append(contentsOf: payload)
        let sum = bytes.withUnsafeBytes { ubxChecksum(UnsafeRawBufferPointer(rebasing: $0[(start + 2)...])) }
        bytes.append(sum.a)
        bytes.append(sum.b)
    }

    /// A poll: the message id with an empty payload (`B5 62 0A 04 00 00 0E 34` polls MON-VER).
    public static func poll(_ message: MessageID) -> [UInt8] {
        frame(message, payload: EmptyCollection())
    }
}

// MARK: - NAV

/// UBX-NAV-PVT (01 07): navigation position, velocity and time solution (92 bytes; 84 on u-blox 6/7).
public struct UBXNavPVT: Hashable, Sendable {
    /// GPS time of week of the navigation epoch, ms.
    public var iTOW: UInt32 = 0
    public var year: UInt16 = 0
    public var month: UInt8 = 0
    public var day: UInt8 = 0
    public var hour: UInt8 = 0
    public var minute: UInt8 = 0
    public var second: UInt8 = 0
    /// Validity flags: validDate b0, validTime b1, fullyResolved b2, validMag b3.
    public var valid: UInt8 = 0
    /// Time accuracy estimate, ns.
    public var tAcc: UInt32 = 0
    /// Fraction of second, ns (may be negative).
    public var nano: Int32 = 0
    /// 0 no fix, 1 dead reckoning only, 2 2D, 3 3D, 4 GNSS + dead reckoning, 5 time only.
    public var fixType: UInt8 = 0
    /// gnssFixOK b0, diffSoln b1, psmState b2-4, headVehValid b5, carrSoln b6-7.
    public var flags: UInt8 = 0
    /// confirmedAvai b5, confirmedDate b6, confirmedTime b7.
    public var flags2: UInt8 = 0
    public var numSV: UInt8 = 0
    /// Longitude and latitude, 1e-7 degree.
    public var lon: Int32 = 0
    public var lat: Int32 = 0
    /// Height above ellipsoid and above mean sea level, mm.
    public var height: Int32 = 0
    public var hMSL: Int32 = 0
    /// Horizontal and vertical accuracy estimates, mm.
    public var hAcc: UInt32 = 0
    public var vAcc: UInt32 = 0
    /// NED velocity, mm/s.
    public var velN: Int32 = 0
    public var velE: Int32 = 0
    public var velD: Int32 = 0
    /// Ground speed (2D), mm/s.
    public var gSpeed: Int32 = 0
    /// Heading of motion (2D), 1e-5 degree.
    public var headMot: Int32 = 0
    /// Speed accuracy, mm/s; heading accuracy, 1e-5 degree.
    public var sAcc: UInt32 = 0
    public var headAcc: UInt32 = 0
    /// Position DOP, 0.01.
    public var pDOP: UInt16 = 0
    /// invalidLlh b0, lastCorrectionAge b1-4.
    public var flags3: UInt16 = 0
    public var reserved0: UInt32 = 0
    /// Heading of vehicle, 1e-5 degree; magnetic declination and its accuracy, 0.01 degree.
    public var headVeh: Int32 = 0
    public var magDec: Int16 = 0
    public var magAcc: UInt16 = 0

    public init() {}

    public var latitude: Double { Double(lat) * 1e-7 }
    public var longitude: Double { Double(lon) * 1e-7 }
    /// Height above the WGS84 ellipsoid, metres.
    public var altitudeHAE: Double { Double(height) * 1e-3 }
    /// Height above mean sea level, metres.
    public var altitudeMSL: Double { Double(hMSL) * 1e-3 }
    /// Ground speed, m/s.
    public var groundSpeed: Double { Double(gSpeed) * 1e-3 }
    /// Heading of motion, degrees.
    public var headingOfMotion: Double { Double(headMot) * 1e-5 }
    public var velocityNorth: Double { Double(velN) * 1e-3 }
    public var velocityEast: Double { Double(velE) * 1e-3 }
    public var velocityDown: Double { Double(velD) * 1e-3 }
    /// Accuracy estimates in metres, m/s and seconds.
    public var horizontalAccuracy: Double { Double(hAcc) * 1e-3 }
    public var verticalAccuracy: Double { Double(vAcc) * 1e-3 }
    public var speedAccuracy: Double { Double(sAcc) * 1e-3 }
    public var timeAccuracy: Double { Double(tAcc) * 1e-9 }
    public var positionDOP: Double { Double(pDOP) * 0.01 }
    public var gnssFixOK: Bool { flags & 0x01 != 0 }
    public var differentialSolution: Bool { flags & 0x02 != 0 }
    /// 0 none, 1 RTK float, 2 RTK fixed.
    public var carrierSolution: UInt8 { flags >> 6 }
    public var validDate: Bool { valid & 0x01 != 0 }
    public var validTime: Bool { valid & 0x02 != 0 }

    /// UTC date and time when the receiver marks both valid.
    public var time: GNSSTime? {
        guard validDate, validTime,
            let date = GNSSDate(validYear: Int(year), month: Int(month), day: Int(day)),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let base = GNSSTime(
            date: date, time: TimeOfDay(hour: Int(hour), minute: Int(minute), second: Int(second)))
        return GNSSTime(nanosecondsSinceEpoch: base.nanosecondsSinceEpoch + Int64(nano))
    }

    /// Builds a solution from values in degrees, metres and m/s (for simulators); time is marked valid.
    public init(
        iTOW: UInt32, time: GNSSTime, fixType: UInt8, numSV: UInt8, latitude: Double, longitude: Double,
        altitudeHAE: Double, altitudeMSL: Double, groundSpeed: Double = 0, headingOfMotion: Double = 0,
        velocityDown: Double = 0, horizontalAccuracy: Double = 1, verticalAccuracy: Double = 2,
        speedAccuracy: Double = 0.1, timeAccuracy: Double = 20e-9, positionDOP: Double = 1.5,
        differential: Bool = false
    ) {
        self.init()
        self.iTOW = iTOW
        let whole = GNSSTime(nanosecondsSinceEpoch: floorDiv(time.nanosecondsSinceEpoch, 1_000_000_000) * 1_000_000_000)
        let date = whole.date
        let day = whole.timeOfDay
        year = UInt16(clamping: date.year)
        month = UInt8(clamping: date.month)
        self.day = UInt8(clamping: date.day)
        hour = UInt8(clamping: day.hour)
        minute = UInt8(clamping: day.minute)
        second = UInt8(clamping: day.second)
        nano = Int32(clamping: time.nanosecondsSinceEpoch - whole.nanosecondsSinceEpoch)
        valid = 0x07
        tAcc = UInt32(clamping: Int64((timeAccuracy * 1e9).rounded()))
        self.fixType = fixType
        flags = (fixType >= 2 && fixType <= 4 ? 0x01 : 0) | (differential ? 0x02 : 0)
        self.numSV = numSV
        lat = Int32(clamping: Int64((latitude * 1e7).rounded()))
        lon = Int32(clamping: Int64((longitude * 1e7).rounded()))
        height = Int32(clamping: Int64((altitudeHAE * 1e3).rounded()))
        hMSL = Int32(clamping: Int64((altitudeMSL * 1e3).rounded()))
        hAcc = UInt32(clamping: Int64((horizontalAccuracy * 1e3).rounded()))
        vAcc = UInt32(clamping: Int64((verticalAccuracy * 1e3).rounded()))
        let radians = headingOfMotion * .pi / 180
        velN = Int32(clamping: Int64((groundSpeed * cosine(radians) * 1e3).rounded()))
        velE = Int32(clamping: Int64((groundSpeed * sine(radians) * 1e3).rounded()))
        velD = Int32(clamping: Int64((velocityDown * 1e3).rounded()))
        gSpeed = Int32(clamping: Int64((groundSpeed * 1e3).rounded()))
        headMot = Int32(clamping: Int64((headingOfMotion * 1e5).rounded()))
        sAcc = UInt32(clamping: Int64((speedAccuracy * 1e3).rounded()))
        headAcc = 1_000_000
        pDOP = UInt16(clamping: Int64((positionDOP * 100).rounded()))
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 92 || p.count == 84 else {
            throw .ubxLength(messageClass: 0x01, id: 0x07, length: p.count)
        }
        iTOW = p.u32(0)
        year = p.u16(4)
        month = p.u8(6)
        day = p.u8(7)
        hour = p.u8(8)
        minute = p.u8(9)
        second = p.u8(10)
        valid = p.u8(11)
        tAcc = p.u32(12)
        nano = p.i32(16)
        fixType = p.u8(20)
        flags = p.u8(21)
        flags2 = p.u8(22)
        numSV = p.u8(23)
        lon = p.i32(24)
        lat = p.i32(28)
        height = p.i32(32)
        hMSL = p.i32(36)
        hAcc = p.u32(40)
        vAcc = p.u32(44)
        velN = p.i32(48)
        velE = p.i32(52)
        velD = p.i32(56)
        gSpeed = p.i32(60)
        headMot = p.i32(64)
        sAcc = p.u32(68)
        headAcc = p.u32(72)
        pDOP = p.u16(76)
        flags3 = p.u16(78)
        reserved0 = p.u32(80)
        if p.count == 92 {
            headVeh = p.i32(84)
            magDec = p.i16(88)
            magAcc = p.u16(90)
        }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 92)
        w.u32(iTOW); w.u16(year); w.u8(month); w.u8(day); w.u8(hour); w.u8(minute); w.u8(second); w.u8(valid)
        w.u32(tAcc); w.i32(nano); w.u8(fixType); w.u8(flags); w.u8(flags2); w.u8(numSV)
        w.i32(lon); w.i32(lat); w.i32(height); w.i32(hMSL); w.u32(hAcc); w.u32(vAcc)
        w.i32(velN); w.i32(velE); w.i32(velD); w.i32(gSpeed); w.i32(headMot); w.u32(sAcc); w.u32(headAcc)
        w.u16(pDOP); w.u16(flags3); w.u32(reserved0); w.i32(headVeh); w.i16(magDec); w.u16(magAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navPVT, payload: payload) }
}

/// UBX-NAV-SAT (01 35): satellites in view.
public struct UBXNavSAT: Hashable, Sendable {
    public struct Satellite: Hashable, Sendable {
        /// u-blox GNSS id: 0 GPS, 1 SBAS, 2 Galileo, 3 BeiDou, 4 IMES, 5 QZSS, 6 GLONASS, 7 NavIC.
        public var gnssId: UInt8
        public var svId: UInt8
        /// Carrier-to-noise density, dBHz.
        public var cno: UInt8
        /// Elevation, degrees (-90...90; out of range when unknown).
        public var elev: Int8
        /// Azimuth, degrees (0...360).
        public var azim: Int16
        /// Pseudorange residual, 0.1 m.
        public var prRes: Int16
        /// qualityInd b0-2, svUsed b3, health b4-5, diffCorr b6, ... orbitSource b8-10.
        public var flags: UInt32

        public init(
            gnssId: UInt8, svId: UInt8, cno: UInt8, elev: Int8, azim: Int16, prRes: Int16 = 0, flags: UInt32 = 0
        ) {
            self.gnssId = gnssId
            self.svId = svId
            self.cno = cno
            self.elev = elev
            self.azim = azim
            self.prRes = prRes
            self.flags = flags
        }

        public var system: GNSSSystem? { GNSSSystem(rawValue: gnssId) }
        public var qualityIndicator: UInt8 { UInt8(flags & 0x7) }
        public var used: Bool { flags & 0x08 != 0 }
        /// 0 unknown, 1 healthy, 2 unhealthy.
        public var health: UInt8 { UInt8((flags >> 4) & 0x3) }
        /// Pseudorange residual, metres.
        public var pseudorangeResidual: Double { Double(prRes) * 0.1 }
    }

    public var iTOW: UInt32
    public var version: UInt8
    public var satellites: [Satellite]

    public init(iTOW: UInt32, version: UInt8 = 1, satellites: [Satellite]) {
        self.iTOW = iTOW
        self.version = version
        self.satellites = satellites
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 8, (p.count - 8) % 12 == 0, Int(p.u8(5)) == (p.count - 8) / 12 else {
            throw .ubxLength(messageClass: 0x01, id: 0x35, length: p.count)
        }
        iTOW = p.u32(0)
        version = p.u8(4)
        let count = Int(p.u8(5))
        var satellites: [Satellite] = []
        satellites.reserveCapacity(count)
        for index in 0..<count {
            let o = 8 + 12 * index
            satellites.append(
                Satellite(
                    gnssId: p.u8(o), svId: p.u8(o + 1), cno: p.u8(o + 2), elev: p.i8(o + 3), azim: p.i16(o + 4),
                    prRes: p.i16(o + 6), flags: p.u32(o + 8)))
        }
        self.satellites = satellites
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 8 + 12 * satellites.count)
        w.u32(iTOW); w.u8(version); w.u8(UInt8(clamping: satellites.count)); w.zeros(2)
        for s in satellites.prefix(255) {
            w.u8(s.gnssId); w.u8(s.svId); w.u8(s.cno); w.i8(s.elev); w.i16(s.azim); w.i16(s.prRes); w.u32(s.flags)
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navSAT, payload: payload) }
}

/// UBX-NAV-STATUS (01 03): receiver navigation status.
public struct UBXNavStatus: Hashable, Sendable {
    public var iTOW: UInt32
    /// 0 no fix, 1 dead reckoning, 2 2D, 3 3D, 4 GNSS + DR, 5 time only.
    public var gpsFix: UInt8
    /// gpsFixOk b0, diffSoln b1, wknSet b2, towSet b3.
    public var flags: UInt8
    /// diffCorr b0, carrSolnValid b1, mapMatching b6-7.
    public var fixStat: UInt8
    /// psmState b0-1, spoofDetState b3-4, carrSoln b6-7.
    public var flags2: UInt8
    /// Time to first fix and time since startup, ms.
    public var ttff: UInt32
    public var msss: UInt32

    public init(
        iTOW: UInt32, gpsFix: UInt8, flags: UInt8, fixStat: UInt8 = 0, flags2: UInt8 = 0, ttff: UInt32, msss: UInt32
    ) {
        self.iTOW = iTOW
        self.gpsFix = gpsFix
        self.flags = flags
        self.fixStat = fixStat
        self.flags2 = flags2
        self.ttff = ttff
        self.msss = msss
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 16 else { throw .ubxLength(messageClass: 0x01, id: 0x03, length: p.count) }
        self.init(
            iTOW: p.u32(0), gpsFix: p.u8(4), flags: p.u8(5), fixStat: p.u8(6), flags2: p.u8(7), ttff: p.u32(8),
            msss: p.u32(12))
    }

    public var gpsFixOK: Bool { flags & 0x01 != 0 }
    public var differentialSolution: Bool { flags & 0x02 != 0 }
    /// Time to first fix and time since startup, seconds.
    public var timeToFirstFix: Double { Double(ttff) * 1e-3 }
    public var timeSinceStartup: Double { Double(msss) * 1e-3 }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 16)
        w.u32(iTOW); w.u8(gpsFix); w.u8(flags); w.u8(fixStat); w.u8(flags2); w.u32(ttff); w.u32(msss)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navStatus, payload: payload) }
}

/// UBX-NAV-DOP (01 04): dilutions of precision, each in units of 0.01.
public struct UBXNavDOP: Hashable, Sendable {
    public var iTOW: UInt32
    public var gDOP: UInt16
    public var pDOP: UInt16
    public var tDOP: UInt16
    public var vDOP: UInt16
    public var hDOP: UInt16
    public var nDOP: UInt16
    public var eDOP: UInt16

    public init(
        iTOW: UInt32, gDOP: UInt16, pDOP: UInt16, tDOP: UInt16, vDOP: UInt16, hDOP: UInt16, nDOP: UInt16, eDOP: UInt16
    ) {
        self.iTOW = iTOW
        self.gDOP = gDOP
        self.pDOP = pDOP
        self.tDOP = tDOP
        self.vDOP = vDOP
        self.hDOP = hDOP
        self.nDOP = nDOP
        self.eDOP = eDOP
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 18 else { throw .ubxLength(messageClass: 0x01, id: 0x04, length: p.count) }
        self.init(
            iTOW: p.u32(0), gDOP: p.u16(4), pDOP: p.u16(6), tDOP: p.u16(8), vDOP: p.u16(10), hDOP: p.u16(12),
            nDOP: p.u16(14), eDOP: p.u16(16))
    }

    /// The DOPs as plain numbers (gpsd's xdop is the east DOP, ydop the north DOP).
    public var dops: DilutionOfPrecision {
        DilutionOfPrecision(
            x: Double(eDOP) * 0.01, y: Double(nDOP) * 0.01, vertical: Double(vDOP) * 0.01,
            time: Double(tDOP) * 0.01, horizontal: Double(hDOP) * 0.01, geometric: Double(gDOP) * 0.01,
            position: Double(pDOP) * 0.01)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 18)
        w.u32(iTOW); w.u16(gDOP); w.u16(pDOP); w.u16(tDOP); w.u16(vDOP); w.u16(hDOP); w.u16(nDOP); w.u16(eDOP)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navDOP, payload: payload) }
}

/// UBX-NAV-TIMEUTC (01 21): UTC time solution.
public struct UBXNavTimeUTC: Hashable, Sendable {
    public var iTOW: UInt32
    /// Time accuracy, ns; fraction of second, ns (may be negative).
    public var tAcc: UInt32
    public var nano: Int32
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hour: UInt8
    public var minute: UInt8
    public var second: UInt8
    /// validTOW b0, validWKN b1, validUTC b2, authStatus b3, utcStandard b4-7.
    public var valid: UInt8

    public init(
        iTOW: UInt32, tAcc: UInt32, nano: Int32, year: UInt16, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8,
        second: UInt8, valid: UInt8
    ) {
        self.iTOW = iTOW
        self.tAcc = tAcc
        self.nano = nano
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
        self.valid = valid
    }

    /// Builds a valid UTC time message from an instant (for simulators).
    public init(iTOW: UInt32, time: GNSSTime, accuracy: Double = 20e-9) {
        let whole = GNSSTime(nanosecondsSinceEpoch: floorDiv(time.nanosecondsSinceEpoch, 1_000_000_000) * 1_000_000_000)
        let date = whole.date
        let day = whole.timeOfDay
        self.init(
            iTOW: iTOW, tAcc: UInt32(clamping: Int64((accuracy * 1e9).rounded())),
            nano: Int32(clamping: time.nanosecondsSinceEpoch - whole.nanosecondsSinceEpoch),
            year: UInt16(clamping: date.year), month: UInt8(clamping: date.month), day: UInt8(clamping: date.day),
            hour: UInt8(clamping: day.hour), minute: UInt8(clamping: day.minute), second: UInt8(clamping: day.second),
            valid: 0x07)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 20 else { throw .ubxLength(messageClass: 0x01, id: 0x21, length: p.count) }
        self.init(
            iTOW: p.u32(0), tAcc: p.u32(4), nano: p.i32(8), year: p.u16(12), month: p.u8(14), day: p.u8(15),
            hour: p.u8(16), minute: p.u8(17), second: p.u8(18), valid: p.u8(19))
    }

    public var validUTC: Bool { valid & 0x04 != 0 }

    /// The UTC instant when the receiver marks UTC valid.
    public var time: GNSSTime? {
        guard validUTC, let date = GNSSDate(validYear: Int(year), month: Int(month), day: Int(day)),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let base = GNSSTime(date: date, time: TimeOfDay(hour: Int(hour), minute: Int(minute), second: Int(second)))
        return GNSSTime(nanosecondsSinceEpoch: base.nanosecondsSinceEpoch + Int64(nano))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 20)
        w.u32(iTOW); w.u32(tAcc); w.i32(nano); w.u16(year); w.u8(month); w.u8(day); w.u8(hour); w.u8(minute)
        w.u8(second); w.u8(valid)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navTimeUTC, payload: payload) }
}

// MARK: - MON, ACK, INF

/// UBX-MON-VER (0A 04): software and hardware versions and extension strings.
public struct UBXMonVER: Hashable, Sendable {
    public var softwareVersion: String
    public var hardwareVersion: String
    /// Extension strings such as `FWVER=SPG 3.01`, `PROTVER=18.00`, `MOD=NEO-M8N`.
    public var extensions: [String]

    public init(softwareVersion: String, hardwareVersion: String, extensions: [String] = []) {
        self.softwareVersion = softwareVersion
        self.hardwareVersion = hardwareVersion
        self.extensions = extensions
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 40, (p.count - 40) % 30 == 0 else {
            throw .ubxLength(messageClass: 0x0A, id: 0x04, length: p.count)
        }
        softwareVersion = p.fixedString(0, 30)
        hardwareVersion = p.fixedString(30, 10)
        extensions = stride(from: 40, to: p.count, by: 30).map { p.fixedString($0, 30) }
    }

    /// The value of an extension `KEY=value` (e.g. `PROTVER`), if present.
    public func extensionValue(_ key: String) -> String? {
        for item in extensions {
            let utf8 = Array(item.utf8)
            if let equals = utf8.firstIndex(of: UInt8(ascii: "=")),
                String(decoding: utf8[..<equals], as: UTF8.self) == key
            {
                return String(decoding: utf8[(equals + 1)...], as: UTF8.self)
            }
        }
        return nil
    }

    /// The protocol version (`PROTVER=18.00` gives 18.0), if the receiver reports it.
    public var protocolVersion: Double? {
        guard let text = extensionValue("PROTVER") else { return nil }
        let trimmed = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
        return trimmed.withUnsafeBytes { ASCII.parseDouble($0) }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 40 + 30 * extensions.count)
        w.fixedString(softwareVersion, width: 30)
        w.fixedString(hardwareVersion, width: 10)
        for item in extensions { w.fixedString(item, width: 30) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.monVER, payload: payload) }
}

/// UBX-ACK-ACK (05 01) or UBX-ACK-NAK (05 00): the class and id of the acknowledged message.
public struct UBXAck: Hashable, Sendable {
    public var acknowledged: UBX.MessageID

    public init(_ acknowledged: UBX.MessageID) {
        self.acknowledged = acknowledged
    }

    public init(payload p: UnsafeRawBufferPointer, id: UInt8) throws(DecodeError) {
        guard p.count == 2 else { throw .ubxLength(messageClass: 0x05, id: id, length: p.count) }
        acknowledged = UBX.MessageID(p.u8(0), p.u8(1))
    }

    public var payload: [UInt8] { [acknowledged.messageClass, acknowledged.id] }
    public var ackFrame: [UInt8] { UBX.frame(.ackAck, payload: payload) }
    public var nakFrame: [UInt8] { UBX.frame(.ackNak, payload: payload) }
}

/// UBX-INF-* (04 00...04): a text message from the receiver.
public struct UBXInf: Hashable, Sendable {
    public enum Level: UInt8, Hashable, Sendable {
        case error = 0
        case warning = 1
        case notice = 2
        case test = 3
        case debug = 4
    }

    public var level: Level
    public var text: String

    public init(level: Level, text: String) {
        self.level = level
        self.text = text
    }

    public var payload: [UInt8] { Array(text.utf8) }
    public var frame: [UInt8] { UBX.frame(UBX.MessageID(0x04, level.rawValue), payload: payload) }
}

// MARK: - CFG and RXM

/// One configuration item of the gen 9 / M10 configuration database: a key id and its value.
/// Bits 28-30 of the key give the value's size (1 bit, 1, 2, 4 or 8 bytes).
public struct UBXConfigItem: Hashable, Sendable {
    public var key: UInt32
    /// The value's bits, zero-extended (signed and float values are their bit patterns).
    public var value: UInt64

    public init(key: UInt32, value: UInt64) {
        self.key = key
        self.value = value
    }

    /// Bytes the value takes on the wire, or `nil` for a size code u-blox does not define.
    public static func valueSize(key: UInt32) -> Int? {
        switch (key >> 28) & 0x7 {
        case 1, 2: return 1
        case 3: return 2
        case 4: return 4
        case 5: return 8
        default: return nil
        }
    }

    /// Well-known keys (gen 9 / M10).
    public static let rateMeas: UInt32 = 0x3021_0001
    public static let msgoutNavPVTI2C: UInt32 = 0x2091_0006
    public static let msgoutNavPVTUART1: UInt32 = 0x2091_0007
    public static let msgoutNavSATI2C: UInt32 = 0x2091_0015
    public static let uart1Baudrate: UInt32 = 0x4052_0001
    public static let pmOperateMode: UInt32 = 0x20D0_0001
    public static let hwAntCfgPwrdown: UInt32 = 0x10A3_0033

    static func decodeList(
        _ p: UnsafeRawBufferPointer, from start: Int, messageID: UBX.MessageID
    ) throws(DecodeError)
        -> [UBXConfigItem]
    {
        var items: [UBXConfigItem] = []
        var offset = start
        while offset < p.count {
            guard offset + 4 <= p.count else {
                throw .ubxLength(messageClass: messageID.messageClass, id: messageID.id, length: p.count)
            }
            let key = p.u32(offset)
            guard let size = valueSize(key: key) else {
                throw .ubxField(messageClass: messageID.messageClass, id: messageID.id, offset: offset)
            }
            guard offset + 4 + size <= p.count else {
                throw .ubxLength(messageClass: messageID.messageClass, id: messageID.id, length: p.count)
            }
            var value: UInt64 = 0
            for index in 0..<size { value |= UInt64(p.u8(offset + 4 + index)) << UInt64(8 * index) }
            items.append(UBXConfigItem(key: key, value: value))
            offset += 4 + size
        }
        return items
    }

    func append(to w: inout LittleEndianWriter) {
        w.u32(key)
        let size = UBXConfigItem.valueSize(key: key) ?? 1
        for index in 0..<size { w.u8(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }
}

/// Configuration layers of CFG-VALSET (a mask) and CFG-VALGET (one value).
public struct UBXConfigLayers: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let ram = UBXConfigLayers(rawValue: 0x01)
    public static let bbr = UBXConfigLayers(rawValue: 0x02)
    public static let flash = UBXConfigLayers(rawValue: 0x04)
}

/// UBX-CFG-VALSET (06 8A): set configuration items (protocol 27+; at most 64 items).
public struct UBXCfgValSet: Hashable, Sendable {
    public var version: UInt8
    public var layers: UBXConfigLayers
    /// Transaction action (version 1 only): 0 none, 1 begin, 2 continue, 3 apply.
    public var transaction: UInt8
    public var items: [UBXConfigItem]

    public init(layers: UBXConfigLayers = .ram, items: [UBXConfigItem], version: UInt8 = 0, transaction: UInt8 = 0) {
        self.version = version
        self.layers = layers
        self.transaction = transaction
        self.items = items
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 4 else { throw .ubxLength(messageClass: 0x06, id: 0x8A, length: p.count) }
        version = p.u8(0)
        layers = UBXConfigLayers(rawValue: p.u8(1))
        transaction = p.u8(2)
        items = try UBXConfigItem.decodeList(p, from: 4, messageID: .cfgVALSET)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 4 + 12 * items.count)
        w.u8(version); w.u8(layers.rawValue); w.u8(transaction); w.u8(0)
        for item in items { item.append(to: &w) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgVALSET, payload: payload) }
}

/// UBX-CFG-VALGET (06 8B): a request (version 0, keys) or the receiver's response (version 1, items).
public enum UBXCfgValGet: Hashable, Sendable {
    /// Layer: 0 RAM, 1 BBR, 2 flash, 7 default.
    case request(layer: UInt8, position: UInt16, keys: [UInt32])
    case response(layer: UInt8, position: UInt16, items: [UBXConfigItem])

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 4 else { throw .ubxLength(messageClass: 0x06, id: 0x8B, length: p.count) }
        let layer = p.u8(1)
        let position = p.u16(2)
        switch p.u8(0) {
        case 0:
            guard (p.count - 4) % 4 == 0 else { throw .ubxLength(messageClass: 0x06, id: 0x8B, length: p.count) }
            self = .request(
                layer: layer, position: position, keys: stride(from: 4, to: p.count, by: 4).map { p.u32($0) })
        case 1:
            self = .response(
                layer: layer, position: position, items: try UBXConfigItem.decodeList(p, from: 4, messageID: .cfgVALGET)
            )
        default:
            throw .ubxField(messageClass: 0x06, id: 0x8B, offset: 0)
        }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter()
        switch self {
        case .request(let layer, let position, let keys):
            w.u8(0); w.u8(layer); w.u16(position)
            for key in keys { w.u32(key) }
        case .response(let layer, let position, let items):
            w.u8(1); w.u8(layer); w.u16(position)
            for item in items { item.append(to: &w) }
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgVALGET, payload: payload) }
}

/// UBX-CFG-MSG (06 01): output rate of one message, per port (8 bytes) or on the current port (3 bytes).
public struct UBXCfgMsg: Hashable, Sendable {
    public var message: UBX.MessageID
    /// Rates for I2C (DDC), UART1, UART2, USB, SPI and a reserved port; one entry in the short form.
    public var rates: [UInt8]

    public init(message: UBX.MessageID, rates: [UInt8]) {
        self.message = message
        self.rates = rates
    }

    /// The 8-byte form with one rate on every port.
    public init(message: UBX.MessageID, rateOnAllPorts rate: UInt8) {
        self.init(message: message, rates: [rate, rate, rate, rate, rate, 0])
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 8 || p.count == 3 || p.count == 2 else {
            throw .ubxLength(messageClass: 0x06, id: 0x01, length: p.count)
        }
        message = UBX.MessageID(p.u8(0), p.u8(1))
        rates = (2..<p.count).map { p.u8($0) }
    }

    public var payload: [UInt8] { [message.messageClass, message.id] + rates }
    public var frame: [UInt8] { UBX.frame(.cfgMSG, payload: payload) }
}

/// UBX-CFG-PRT (06 00): port configuration (20 bytes), or a poll for one port (1 byte).
public struct UBXCfgPrt: Hashable, Sendable {
    /// 0 I2C (DDC), 1 UART1, 2 UART2, 3 USB, 4 SPI.
    public var portID: UInt8
    public var txReady: UInt16
    /// UART mode bits (`0x08D0` is 8N1).
    public var mode: UInt32
    public var baudRate: UInt32
    /// Protocol masks: UBX b0, NMEA b1, RTCM2 b2, RTCM3 b5.
    public var inProtocols: UInt16
    public var outProtocols: UInt16
    public var flags: UInt16

    public static let protocolUBX: UInt16 = 0x01
    public static let protocolNMEA: UInt16 = 0x02
    public static let protocolRTCM3: UInt16 = 0x20

    public init(
        portID: UInt8, baudRate: UInt32 = 0, inProtocols: UInt16, outProtocols: UInt16, mode: UInt32 = 0,
        txReady: UInt16 = 0, flags: UInt16 = 0
    ) {
        self.portID = portID
        self.txReady = txReady
        self.mode = mode
        self.baudRate = baudRate
        self.inProtocols = inProtocols
        self.outProtocols = outProtocols
        self.flags = flags
    }

    /// A UART port at `baudRate`, 8N1.
    public static func uart(
        _ portID: UInt8 = 1, baudRate: UInt32, inProtocols: UInt16, outProtocols: UInt16
    )
        -> UBXCfgPrt
    {
        UBXCfgPrt(
            portID: portID, baudRate: baudRate, inProtocols: inProtocols, outProtocols: outProtocols, mode: 0x08D0)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 20 else { throw .ubxLength(messageClass: 0x06, id: 0x00, length: p.count) }
        self.init(
            portID: p.u8(0), baudRate: p.u32(8), inProtocols: p.u16(12), outProtocols: p.u16(14), mode: p.u32(4),
            txReady: p.u16(2), flags: p.u16(16))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 20)
        w.u8(portID); w.u8(0); w.u16(txReady); w.u32(mode); w.u32(baudRate); w.u16(inProtocols); w.u16(outProtocols)
        w.u16(flags); w.zeros(2)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgPRT, payload: payload) }
}

/// UBX-CFG-RATE (06 08): measurement and navigation rate.
public struct UBXCfgRate: Hashable, Sendable {
    /// Measurement period, ms; navigation solutions per measurement; time reference (0 UTC, 1 GPS, ...).
    public var measRate: UInt16
    public var navRate: UInt16
    public var timeRef: UInt16

    public init(measRate: UInt16, navRate: UInt16 = 1, timeRef: UInt16 = 1) {
        self.measRate = measRate
        self.navRate = navRate
        self.timeRef = timeRef
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 6 else { throw .ubxLength(messageClass: 0x06, id: 0x08, length: p.count) }
        self.init(measRate: p.u16(0), navRate: p.u16(2), timeRef: p.u16(4))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 6)
        w.u16(measRate); w.u16(navRate); w.u16(timeRef)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgRATE, payload: payload) }
}

/// UBX-CFG-RST (06 04): reset or GNSS stop/start. The receiver does not acknowledge it.
public struct UBXCfgRst: Hashable, Sendable {
    /// 0x0000 hot start, 0x0001 warm, 0xFFFF cold.
    public var navBbrMask: UInt16
    /// 0x00 hardware reset, 0x01 software reset, 0x02 GNSS only, 0x04 hardware after shutdown,
    /// 0x08 GNSS stop, 0x09 GNSS start.
    public var resetMode: UInt8

    public init(navBbrMask: UInt16, resetMode: UInt8) {
        self.navBbrMask = navBbrMask
        self.resetMode = resetMode
    }

    /// Stops GNSS, keeping the receiver powered (`B5 62 06 04 04 00 00 00 08 00 16 74`).
    public static let gnssStop = UBXCfgRst(navBbrMask: 0, resetMode: 0x08)
    /// Starts GNSS again (`B5 62 06 04 04 00 00 00 09 00 17 76`).
    public static let gnssStart = UBXCfgRst(navBbrMask: 0, resetMode: 0x09)

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 4 else { throw .ubxLength(messageClass: 0x06, id: 0x04, length: p.count) }
        self.init(navBbrMask: p.u16(0), resetMode: p.u8(2))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 4)
        w.u16(navBbrMask); w.u8(resetMode); w.u8(0)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgRST, payload: payload) }
}

/// UBX-RXM-PMREQ (02 41): power management request, in the 8-byte or the 16-byte (wake sources) form.
/// The receiver does not acknowledge it; any traffic on a wake source wakes it.
public struct UBXRxmPmReq: Hashable, Sendable {
    public struct WakeSources: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let uartRX = WakeSources(rawValue: 0x08)
        public static let extint0 = WakeSources(rawValue: 0x20)
        public static let extint1 = WakeSources(rawValue: 0x40)
        public static let spiCS = WakeSources(rawValue: 0x80)
    }

    /// Duration of the request, ms (0 = until woken).
    public var duration: UInt32
    /// backup b1, force b2.
    public var flags: UInt32
    /// Wake sources; `nil` selects the 8-byte form.
    public var wakeupSources: WakeSources?

    public static let flagBackup: UInt32 = 0x02
    public static let flagForce: UInt32 = 0x04

    public init(duration: UInt32, flags: UInt32, wakeupSources: WakeSources?) {
        self.duration = duration
        self.flags = flags
        self.wakeupSources = wakeupSources
    }

    /// Backup until woken, 8-byte form (`B5 62 02 41 08 00 00 00 00 00 02 00 00 00 4D 3B`).
    public static let backupUntilWoken = UBXRxmPmReq(duration: 0, flags: flagBackup, wakeupSources: nil)

    /// Backup until woken by the given sources (16-byte form, protocol 18+).
    public static func backup(wakeupSources: WakeSources, duration: UInt32 = 0, force: Bool = true) -> UBXRxmPmReq {
        UBXRxmPmReq(duration: duration, flags: flagBackup | (force ? flagForce : 0), wakeupSources: wakeupSources)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        switch p.count {
        case 8:
            self.init(duration: p.u32(0), flags: p.u32(4), wakeupSources: nil)
        case 16:
            guard p.u8(0) == 0 else { throw .ubxField(messageClass: 0x02, id: 0x41, offset: 0) }
            self.init(duration: p.u32(4), flags: p.u32(8), wakeupSources: WakeSources(rawValue: p.u32(12)))
        default:
            throw .ubxLength(messageClass: 0x02, id: 0x41, length: p.count)
        }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 16)
        if let wakeupSources {
            w.u8(0); w.zeros(3); w.u32(duration); w.u32(flags); w.u32(wakeupSources.rawValue)
        } else {
            w.u32(duration); w.u32(flags)
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.rxmPMREQ, payload: payload) }
}

// MARK: - the message enum

/// A decoded UBX message.
public enum UBXMessage: Hashable, Sendable {
    case navPVT(UBXNavPVT)
    case navSAT(UBXNavSAT)
    case navSVINFO(UBXNavSVINFO)
    case navStatus(UBXNavStatus)
    case navDOP(UBXNavDOP)
    case navTimeUTC(UBXNavTimeUTC)
    case navSOL(UBXNavSOL)
    case navPOSLLH(UBXNavPOSLLH)
    case navVELNED(UBXNavVELNED)
    case navTimeGPS(UBXNavTimeGPS)
    case navHPPOSLLH(UBXNavHPPOSLLH)
    case hnrPVT(UBXHnrPVT)
    case monVER(UBXMonVER)
    case ack(UBXAck)
    case nak(UBXAck)
    case inf(UBXInf)
    case cfgValGet(UBXCfgValGet)
    case cfgValSet(UBXCfgValSet)
    case cfgMsg(UBXCfgMsg)
    case cfgPrt(UBXCfgPrt)
    case cfgRate(UBXCfgRate)
    case cfgRst(UBXCfgRst)
    case rxmPMREQ(UBXRxmPmReq)
    // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
    case mgaDBD(UBXMgaDBD)
    case mgaAck(UBXMgaAck)
    case mgaIniTimeUTC(UBXMgaIniTimeUTC)
    case mgaIniPosLLH(UBXMgaIniPosLLH)
    case secUniqID(UBXSecUniqID)
    case cfgRXM(UBXCfgRXM)
    case cfgPM2(UBXCfgPM2)
    case cfgPMS(UBXCfgPMS)
    case cfgNavX5(UBXCfgNavX5)
    /// A message with an empty payload: a poll from the host (or NAV-EOE-like markers are not empty).
    case poll(UBX.MessageID)
    /// Anything else, kept whole: class, id and payload.
    case other(UBX.MessageID, payload: ArraySlice<UInt8>)

    /// The class and id of this message.
    public var messageID: UBX.MessageID {
        switch self {
        case .navPVT: return .navPVT
        case .navSAT: return .navSAT
        case .navSVINFO: return .navSVINFO
        case .navStatus: return .navStatus
        case .navDOP: return .navDOP
        case .navTimeUTC: return .navTimeUTC
        case .navSOL: return .navSOL
        case .navPOSLLH: return .navPOSLLH
        case .navVELNED: return .navVELNED
        case .navTimeGPS: return .navTimeGPS
        case .navHPPOSLLH: return .navHPPOSLLH
        case .hnrPVT: return .hnrPVT
        case .monVER: return .monVER
        case .ack: return .ackAck
        case .nak: return .ackNak
        case .inf(let inf): return UBX.MessageID(0x04, inf.level.rawValue)
        case .cfgValGet: return .cfgVALGET
        case .cfgValSet: return .cfgVALSET
        case .cfgMsg: return .cfgMSG
        case .cfgPrt: return .cfgPRT
        case .cfgRate: return .cfgRATE
        case .cfgRst: return .cfgRST
        case .rxmPMREQ: return .rxmPMREQ
        case .mgaDBD: return .mgaDBD
        case .mgaAck: return .mgaACK
        case .mgaIniTimeUTC, .mgaIniPosLLH: return .mgaINI
        case .secUniqID: return .secUNIQID
        case .cfgRXM: return .cfgRXM
        case .cfgPM2: return .cfgPM2
        case .cfgPMS: return .cfgPMS
        case .cfgNavX5: return .cfgNAVX5
        case .poll(let id): return id
        case .other(let id, _): return id
        }
    }

    /// Decodes a whole frame (sync to checksum; the framer has verified the checksum).
    public init(frame: ArraySlice<UInt8>) throws(DecodeError) {
        guard frame.count >= 8 else { throw .truncated }
        let start = frame.startIndex
        let id = UBX.MessageID(frame[start + 2], frame[start + 3])
        let payload = frame[(start + 6)..<(frame.endIndex - 2)]
        do {
            self = try payload.withUnsafeBytes { p in try UBXMessage.decode(id, p, payload) }
        } catch let error as DecodeError {
            throw error
        } catch {
            // withUnsafeBytes rethrows untyped; decode throws nothing else.
            throw .truncated
        }
    }

    static func decode(
        _ id: UBX.MessageID, _ p: UnsafeRawBufferPointer, _ slice: ArraySlice<UInt8>
    )
        throws(DecodeError) -> UBXMessage
    {
        if p.isEmpty { return .poll(id) }
        switch (id.messageClass, id.id) {
        case (0x01, 0x07): return .navPVT(try UBXNavPVT(payload: p))
        case (0x01, 0x35): return .navSAT(try UBXNavSAT(payload: p))
        case (0x01, 0x30): return .navSVINFO(try UBXNavSVINFO(payload: p))
        case (0x01, 0x03): return .navStatus(try UBXNavStatus(payload: p))
        case (0x01, 0x04): return .navDOP(try UBXNavDOP(payload: p))
        case (0x01, 0x21): return .navTimeUTC(try UBXNavTimeUTC(payload: p))
        case (0x01, 0x06): return .navSOL(try UBXNavSOL(payload: p))
        case (0x01, 0x02): return .navPOSLLH(try UBXNavPOSLLH(payload: p))
        case (0x01, 0x12): return .navVELNED(try UBXNavVELNED(payload: p))
        case (0x01, 0x20): return .navTimeGPS(try UBXNavTimeGPS(payload: p))
        case (0x01, 0x14): return .navHPPOSLLH(try UBXNavHPPOSLLH(payload: p))
        case (0x28, 0x00): return .hnrPVT(try UBXHnrPVT(payload: p))
        case (0x0A, 0x04): return .monVER(try UBXMonVER(payload: p))
        case (0x05, 0x01): return .ack(try UBXAck(payload: p, id: 0x01))
        case (0x05, 0x00): return .nak(try UBXAck(payload: p, id: 0x00))
        case (0x04, 0x00...0x04):
            // The text is ASCII; drop trailing NULs some firmware adds.
            var end = p.count
            while end > 0 && p[end - 1] == 0 { end -= 1 }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: p[0..<end]), as: UTF8.self)
            return .inf(UBXInf(level: UBXInf.Level(rawValue: id.id) ?? .notice, text: text))
        case (0x06, 0x8B): return .cfgValGet(try UBXCfgValGet(payload: p))
        case (0x06, 0x8A): return .cfgValSet(try UBXCfgValSet(payload: p))
        case (0x06, 0x01) where p.count != 2: return .cfgMsg(try UBXCfgMsg(payload: p))
        case (0x06, 0x00) where p.count != 1: return .cfgPrt(try UBXCfgPrt(payload: p))
        case (0x06, 0x08): return .cfgRate(try UBXCfgRate(payload: p))
        case (0x06, 0x04): return .cfgRst(try UBXCfgRst(payload: p))
        case (0x02, 0x41): return .rxmPMREQ(try UBXRxmPmReq(payload: p))
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x80): return .mgaDBD(try UBXMgaDBD(payload: p))
        case (0x13, 0x60): return .mgaAck(try UBXMgaAck(payload: p))
        case (0x13, 0x40): return try decodeMgaINI(p, slice)
        case (0x27, 0x03): return .secUniqID(try UBXSecUniqID(payload: p))
        case (0x06, 0x11): return .cfgRXM(try UBXCfgRXM(payload: p))
        case (0x06, 0x3B): return .cfgPM2(try UBXCfgPM2(payload: p))
        case (0x06, 0x86): return .cfgPMS(try UBXCfgPMS(payload: p))
        // CFG-NAVX5 version 3 (44 bytes) adds fields this package does not know: kept whole.
        case (0x06, 0x23) where p.count == 40: return .cfgNavX5(try UBXCfgNavX5(payload: p))
        default: return .other(id, payload: slice)
        }
    }

    /// The payload bytes of this message.
    public var payload: [UInt8] {
        switch self {
        case .navPVT(let m): return m.payload
        case .navSAT(let m): return m.payload
        case .navSVINFO(let m): return m.payload
        case .navStatus(let m): return m.payload
        case .navDOP(let m): return m.payload
        case .navTimeUTC(let m): return m.payload
        case .navSOL(let m): return m.payload
        case .navPOSLLH(let m): return m.payload
        case .navVELNED(let m): return m.payload
        case .navTimeGPS(let m): return m.payload
        case .navHPPOSLLH(let m): return m.payload
        case .hnrPVT(let m): return m.payload
        case .monVER(let m): return m.payload
        case .ack(let m), .nak(let m): return m.payload
        case .inf(let m): return m.payload
        case .cfgValGet(let m): return m.payload
        case .cfgValSet(let m): return m.payload
        case .cfgMsg(let m): return m.payload
        case .cfgPrt(let m): return m.payload
        case .cfgRate(let m): return m.payload
        case .cfgRst(let m): return m.payload
        case .rxmPMREQ(let m): return m.payload
        case .mgaDBD(let m): return m.payload
        case .mgaAck(let m): return m.payload
        case .mgaIniTimeUTC(let m): return m.payload
        case .mgaIniPosLLH(let m): return m.payload
        case .secUniqID(let m): return m.payload
        case .cfgRXM(let m): return m.payload
        case .cfgPM2(let m): return m.payload
        case .cfgPMS(let m): return m.payload
        case .cfgNavX5(let m): return m.payload
        case .poll: return []
        case .other(_, let payload): return Array(payload)
        }
    }

    /// The complete frame of this message.
    public var frame: [UInt8] { UBX.frame(messageID, payload: payload) }
}
