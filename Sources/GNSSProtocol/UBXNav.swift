// UBX navigation messages (class 01) of current receivers: NAV-PVT, NAV-SAT, NAV-STATUS, NAV-DOP and
// NAV-TIMEUTC. The older ones are in UBXLegacy.swift, NAV-POSECEF and NAV-VELECEF in UBXNavECEF.swift.

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
    /// `flags3` bits 1-4, the age of the most recent differential correction as a range code: 0 not
    /// available, 1 under 1 s, 2 1-2 s, 3 2-5 s, 4 5-10 s, 5 10-15 s, 6 15-20 s, 7 20-30 s, 8 30-45 s,
    /// 9 45-60 s, 10 60-90 s, 11 90-120 s, 12 120 s or more.
    public var lastCorrectionAgeCode: UInt8 { UInt8(flags3 >> 1 & 0x0F) }
    /// The age of the most recent differential correction, seconds, as the upper end of the range
    /// `lastCorrectionAgeCode` gives (120 for "120 s or more"); nil when not available.
    public var lastCorrectionAge: Double? {
        let upper: [Double] = [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 120]
        let code = Int(lastCorrectionAgeCode)
        return code >= 1 && code <= upper.count ? upper[code - 1] : nil
    }

    /// The `lastCorrectionAgeCode` of an age in seconds (for simulators).
    public static func correctionAgeCode(seconds age: Double) -> UInt8 {
        let upper: [Double] = [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120]
        return UInt8((upper.firstIndex { age < $0 } ?? upper.count) + 1)
    }
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
        differential: Bool = false, carrierSolution: UInt8 = 0, correctionAge: Double? = nil
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
        flags = (fixType >= 2 && fixType <= 4 ? 0x01 : 0) | (differential ? 0x02 : 0) | (carrierSolution & 0x03) << 6
        if let correctionAge { flags3 = UInt16(Self.correctionAgeCode(seconds: correctionAge)) << 1 }
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
