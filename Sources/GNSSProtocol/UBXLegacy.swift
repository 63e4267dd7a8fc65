// Older UBX navigation messages (u-blox 5 to 8 and timing receivers send these instead of, or beside,
// NAV-PVT and NAV-SAT): NAV-SOL, NAV-POSLLH, NAV-VELNED, NAV-TIMEGPS, NAV-SVINFO.

extension UBX.MessageID {
    public static let navPOSLLH = UBX.MessageID(0x01, 0x02)
    public static let navSOL = UBX.MessageID(0x01, 0x06)
    public static let navVELNED = UBX.MessageID(0x01, 0x12)
    public static let navTimeGPS = UBX.MessageID(0x01, 0x20)
    public static let navSVINFO = UBX.MessageID(0x01, 0x30)
}

/// Seconds from the POSIX epoch to the GPS epoch (1980-01-06T00:00:00Z).
let gpsEpochUnixSeconds: Int64 = 315_964_800

/// UBX-NAV-SOL (01 06): ECEF navigation solution with GPS week time.
public struct UBXNavSOL: Hashable, Sendable {
    public var iTOW: UInt32
    /// Fractional part of iTOW, ns (-500000...500000).
    public var fTOW: Int32
    public var week: Int16
    public var gpsFix: UInt8
    /// gpsfixOK b0, diffSoln b1, wknSet b2, towSet b3.
    public var flags: UInt8
    /// ECEF position, cm; position accuracy, cm.
    public var ecefX: Int32
    public var ecefY: Int32
    public var ecefZ: Int32
    public var pAcc: UInt32
    /// ECEF velocity, cm/s; speed accuracy, cm/s.
    public var ecefVX: Int32
    public var ecefVY: Int32
    public var ecefVZ: Int32
    public var sAcc: UInt32
    /// Position DOP, 0.01.
    public var pDOP: UInt16
    public var numSV: UInt8

    public init(
        iTOW: UInt32, fTOW: Int32, week: Int16, gpsFix: UInt8, flags: UInt8, ecefX: Int32, ecefY: Int32,
        ecefZ: Int32, pAcc: UInt32, ecefVX: Int32, ecefVY: Int32, ecefVZ: Int32, sAcc: UInt32, pDOP: UInt16,
        numSV: UInt8
    ) {
        self.iTOW = iTOW
        self.fTOW = fTOW
        self.week = week
        self.gpsFix = gpsFix
        self.flags = flags
        self.ecefX = ecefX
        self.ecefY = ecefY
        self.ecefZ = ecefZ
        self.pAcc = pAcc
        self.ecefVX = ecefVX
        self.ecefVY = ecefVY
        self.ecefVZ = ecefVZ
        self.sAcc = sAcc
        self.pDOP = pDOP
        self.numSV = numSV
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 52 else { throw .ubxLength(messageClass: 0x01, id: 0x06, length: p.count) }
        self.init(
            iTOW: p.u32(0), fTOW: p.i32(4), week: p.i16(8), gpsFix: p.u8(10), flags: p.u8(11), ecefX: p.i32(12),
            ecefY: p.i32(16), ecefZ: p.i32(20), pAcc: p.u32(24), ecefVX: p.i32(28), ecefVY: p.i32(32),
            ecefVZ: p.i32(36), sAcc: p.u32(40), pDOP: p.u16(44), numSV: p.u8(47))
    }

    public var gpsFixOK: Bool { flags & 0x01 != 0 }
    public var differentialSolution: Bool { flags & 0x02 != 0 }
    public var weekAndTimeValid: Bool { flags & 0x0C == 0x0C }

    /// GPS time (not UTC) as nanoseconds since the GPS epoch, when week and time of week are set
    /// and the week fits (see `gpsWeekNanoseconds`).
    public var gpsNanoseconds: Int64? {
        guard weekAndTimeValid else { return nil }
        return gpsWeekNanoseconds(week: week, iTOW: iTOW, fTOW: fTOW)
    }

    /// Geodetic position (WGS84) of the ECEF solution: latitude, longitude (degrees), height (m).
    public var geodetic: (latitude: Double, longitude: Double, height: Double) {
        WGS84.geodetic(x: Double(ecefX) / 100, y: Double(ecefY) / 100, z: Double(ecefZ) / 100)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 52)
        w.u32(iTOW); w.i32(fTOW); w.i16(week); w.u8(gpsFix); w.u8(flags); w.i32(ecefX); w.i32(ecefY); w.i32(ecefZ)
        w.u32(pAcc); w.i32(ecefVX); w.i32(ecefVY); w.i32(ecefVZ); w.u32(sAcc); w.u16(pDOP); w.u8(0); w.u8(numSV)
        w.zeros(4)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navSOL, payload: payload) }
}

/// UBX-NAV-POSLLH (01 02): geodetic position.
public struct UBXNavPOSLLH: Hashable, Sendable {
    public var iTOW: UInt32
    /// 1e-7 degree.
    public var lon: Int32
    public var lat: Int32
    /// mm.
    public var height: Int32
    public var hMSL: Int32
    public var hAcc: UInt32
    public var vAcc: UInt32

    public init(iTOW: UInt32, lon: Int32, lat: Int32, height: Int32, hMSL: Int32, hAcc: UInt32, vAcc: UInt32) {
        self.iTOW = iTOW
        self.lon = lon
        self.lat = lat
        self.height = height
        self.hMSL = hMSL
        self.hAcc = hAcc
        self.vAcc = vAcc
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 28 else { throw .ubxLength(messageClass: 0x01, id: 0x02, length: p.count) }
        self.init(
            iTOW: p.u32(0), lon: p.i32(4), lat: p.i32(8), height: p.i32(12), hMSL: p.i32(16), hAcc: p.u32(20),
            vAcc: p.u32(24))
    }

    public var latitude: Double { Double(lat) * 1e-7 }
    public var longitude: Double { Double(lon) * 1e-7 }
    public var altitudeHAE: Double { Double(height) * 1e-3 }
    public var altitudeMSL: Double { Double(hMSL) * 1e-3 }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 28)
        w.u32(iTOW); w.i32(lon); w.i32(lat); w.i32(height); w.i32(hMSL); w.u32(hAcc); w.u32(vAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navPOSLLH, payload: payload) }
}

/// UBX-NAV-VELNED (01 12): velocity in the NED frame.
public struct UBXNavVELNED: Hashable, Sendable {
    public var iTOW: UInt32
    /// cm/s.
    public var velN: Int32
    public var velE: Int32
    public var velD: Int32
    /// 3D speed and ground speed, cm/s.
    public var speed: UInt32
    public var gSpeed: UInt32
    /// Heading of motion, 1e-5 degree; speed accuracy cm/s; course accuracy 1e-5 degree.
    public var heading: Int32
    public var sAcc: UInt32
    public var cAcc: UInt32

    public init(
        iTOW: UInt32, velN: Int32, velE: Int32, velD: Int32, speed: UInt32, gSpeed: UInt32, heading: Int32,
        sAcc: UInt32, cAcc: UInt32
    ) {
        self.iTOW = iTOW
        self.velN = velN
        self.velE = velE
        self.velD = velD
        self.speed = speed
        self.gSpeed = gSpeed
        self.heading = heading
        self.sAcc = sAcc
        self.cAcc = cAcc
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 36 else { throw .ubxLength(messageClass: 0x01, id: 0x12, length: p.count) }
        self.init(
            iTOW: p.u32(0), velN: p.i32(4), velE: p.i32(8), velD: p.i32(12), speed: p.u32(16), gSpeed: p.u32(20),
            heading: p.i32(24), sAcc: p.u32(28), cAcc: p.u32(32))
    }

    /// Ground speed, m/s; heading, degrees.
    public var groundSpeed: Double { Double(gSpeed) * 0.01 }
    public var headingDegrees: Double { Double(heading) * 1e-5 }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 36)
        w.u32(iTOW); w.i32(velN); w.i32(velE); w.i32(velD); w.u32(speed); w.u32(gSpeed); w.i32(heading)
        w.u32(sAcc); w.u32(cAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navVELNED, payload: payload) }
}

/// UBX-NAV-TIMEGPS (01 20): GPS time and the leap seconds between GPS time and UTC.
public struct UBXNavTimeGPS: Hashable, Sendable {
    public var iTOW: UInt32
    public var fTOW: Int32
    public var week: Int16
    /// GPS - UTC, seconds.
    public var leapS: Int8
    /// towValid b0, weekValid b1, leapSValid b2.
    public var valid: UInt8
    public var tAcc: UInt32

    public init(iTOW: UInt32, fTOW: Int32, week: Int16, leapS: Int8, valid: UInt8, tAcc: UInt32) {
        self.iTOW = iTOW
        self.fTOW = fTOW
        self.week = week
        self.leapS = leapS
        self.valid = valid
        self.tAcc = tAcc
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 16 else { throw .ubxLength(messageClass: 0x01, id: 0x20, length: p.count) }
        self.init(iTOW: p.u32(0), fTOW: p.i32(4), week: p.i16(8), leapS: p.i8(10), valid: p.u8(11), tAcc: p.u32(12))
    }

    public var leapSecondsValid: Bool { valid & 0x04 != 0 }

    /// GPS time (not UTC) as nanoseconds since the GPS epoch, when time of week and week are valid
    /// and the week fits (see `gpsWeekNanoseconds`).
    public var gpsNanoseconds: Int64? {
        guard valid & 0x03 == 0x03 else { return nil }
        return gpsWeekNanoseconds(week: week, iTOW: iTOW, fTOW: fTOW)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 16)
        w.u32(iTOW); w.i32(fTOW); w.i16(week); w.i8(leapS); w.u8(valid); w.u32(tAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navTimeGPS, payload: payload) }
}

/// UBX-NAV-SVINFO (01 30): satellites in view, one block per receiver channel (u-blox 4 to 8; deprecated
/// from protocol 15 in favour of NAV-SAT, gone in u-blox 9). Satellites are named by u-blox's single
/// number (`SatelliteNumbering.fromUBX`), not by gnssId and svId as in NAV-SAT.
public struct UBXNavSVINFO: Hashable, Sendable {
    public struct Channel: Hashable, Sendable {
        /// Channel number (255: the satellite is not assigned to a channel).
        public var chn: UInt8
        /// u-blox's single satellite number: GPS 1-32, SBAS 120-158, GLONASS 65-96, ... (see `satellite`).
        public var svid: UInt8
        /// svUsed b0, diffCorr b1, orbitAvail b2, orbitEph b3, unhealthy b4, orbitAlm b5, orbitAop b6,
        /// smoothed b7.
        public var flags: UInt8
        /// qualityInd b0-3.
        public var quality: UInt8
        /// Carrier-to-noise density, dBHz.
        public var cno: UInt8
        /// Elevation, degrees (-90...90; out of range when unknown).
        public var elev: Int8
        /// Azimuth, degrees.
        public var azim: Int16
        /// Pseudorange residual, cm.
        public var prRes: Int32

        public init(
            chn: UInt8, svid: UInt8, flags: UInt8 = 0, quality: UInt8 = 0, cno: UInt8, elev: Int8, azim: Int16,
            prRes: Int32 = 0
        ) {
            self.chn = chn
            self.svid = svid
            self.flags = flags
            self.quality = quality
            self.cno = cno
            self.elev = elev
            self.azim = azim
            self.prRes = prRes
        }

        public var used: Bool { flags & 0x01 != 0 }
        public var differentialCorrection: Bool { flags & 0x02 != 0 }
        public var orbitAvailable: Bool { flags & 0x04 != 0 }
        public var orbitIsEphemeris: Bool { flags & 0x08 != 0 }
        public var unhealthy: Bool { flags & 0x10 != 0 }
        public var orbitIsAlmanac: Bool { flags & 0x20 != 0 }
        public var orbitIsAssistNowAutonomous: Bool { flags & 0x40 != 0 }
        public var smoothed: Bool { flags & 0x80 != 0 }
        /// 0 idle, 1 searching, 2 acquired, 3 unusable, 4 code locked, 5-7 code and carrier locked.
        public var qualityIndicator: UInt8 { quality & 0x0F }
        /// Pseudorange residual, metres.
        public var pseudorangeResidual: Double { Double(prRes) / 100 }
        /// The satellite's system, its number within the system and gpsd's PRN; `nil` for a number u-blox's
        /// scheme does not give (0, 255: GLONASS slot unknown).
        public var satellite: (system: GNSSSystem, svid: Int, prn: Int)? { SatelliteNumbering.fromUBX(Int(svid)) }
    }

    public var iTOW: UInt32
    /// chipGen b0-2: 0 Antaris 4, 1 u-blox 5, 2 u-blox 6, 3 u-blox 7, 4 u-blox 8.
    public var globalFlags: UInt8
    public var channels: [Channel]

    public init(iTOW: UInt32, globalFlags: UInt8 = 0, channels: [Channel]) {
        self.iTOW = iTOW
        self.globalFlags = globalFlags
        self.channels = channels
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 8, Int(p.u8(4)) * 12 + 8 == p.count else {
            throw .ubxLength(messageClass: 0x01, id: 0x30, length: p.count)
        }
        iTOW = p.u32(0)
        globalFlags = p.u8(5)
        let count = Int(p.u8(4))
        var channels: [Channel] = []
        channels.reserveCapacity(count)
        for index in 0..<count {
            let o = 8 + 12 * index
            channels.append(
                Channel(
                    chn: p.u8(o), svid: p.u8(o + 1), flags: p.u8(o + 2), quality: p.u8(o + 3), cno: p.u8(o + 4),
                    elev: p.i8(o + 5), azim: p.i16(o + 6), prRes: p.i32(o + 8)))
        }
        self.channels = channels
    }

    /// The receiver generation (chipGen): 0 Antaris 4, 1 u-blox 5, 2 u-blox 6, 3 u-blox 7, 4 u-blox 8.
    public var chipGeneration: UInt8 { globalFlags & 0x07 }

    public var payload: [UInt8] {
        let channels = channels.prefix(255)
        var w = LittleEndianWriter(capacity: 8 + 12 * channels.count)
        w.u32(iTOW); w.u8(UInt8(channels.count)); w.u8(globalFlags); w.zeros(2)
        for c in channels {
            w.u8(c.chn); w.u8(c.svid); w.u8(c.flags); w.u8(c.quality); w.u8(c.cno); w.i8(c.elev); w.i16(c.azim)
            w.i32(c.prRes)
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navSVINFO, payload: payload) }
}

extension UBX.MessageID {
    public static let navHPPOSLLH = UBX.MessageID(0x01, 0x14)
    public static let hnrPVT = UBX.MessageID(0x28, 0x00)
}

/// UBX-NAV-HPPOSLLH (01 14): high-precision geodetic position (0.1 mm, 1e-9 degree).
public struct UBXNavHPPOSLLH: Hashable, Sendable {
    public var version: UInt8
    /// invalidLlh b0.
    public var flags: UInt8
    public var iTOW: UInt32
    public var lon: Int32
    public var lat: Int32
    public var height: Int32
    public var hMSL: Int32
    /// High-precision parts: 1e-9 degree, 0.1 mm.
    public var lonHp: Int8
    public var latHp: Int8
    public var heightHp: Int8
    public var hMSLHp: Int8
    /// Accuracy, 0.1 mm.
    public var hAcc: UInt32
    public var vAcc: UInt32

    public init(
        version: UInt8 = 0, flags: UInt8 = 0, iTOW: UInt32, lon: Int32, lat: Int32, height: Int32, hMSL: Int32,
        lonHp: Int8, latHp: Int8, heightHp: Int8, hMSLHp: Int8, hAcc: UInt32, vAcc: UInt32
    ) {
        self.version = version
        self.flags = flags
        self.iTOW = iTOW
        self.lon = lon
        self.lat = lat
        self.height = height
        self.hMSL = hMSL
        self.lonHp = lonHp
        self.latHp = latHp
        self.heightHp = heightHp
        self.hMSLHp = hMSLHp
        self.hAcc = hAcc
        self.vAcc = vAcc
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 36 else { throw .ubxLength(messageClass: 0x01, id: 0x14, length: p.count) }
        self.init(
            version: p.u8(0), flags: p.u8(3), iTOW: p.u32(4), lon: p.i32(8), lat: p.i32(12), height: p.i32(16),
            hMSL: p.i32(20), lonHp: p.i8(24), latHp: p.i8(25), heightHp: p.i8(26), hMSLHp: p.i8(27),
            hAcc: p.u32(28), vAcc: p.u32(32))
    }

    public var invalid: Bool { flags & 0x01 != 0 }
    public var latitude: Double { Double(lat) * 1e-7 + Double(latHp) * 1e-9 }
    public var longitude: Double { Double(lon) * 1e-7 + Double(lonHp) * 1e-9 }
    public var altitudeHAE: Double { Double(height) * 1e-3 + Double(heightHp) * 1e-4 }
    public var altitudeMSL: Double { Double(hMSL) * 1e-3 + Double(hMSLHp) * 1e-4 }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 36)
        w.u8(version); w.zeros(2); w.u8(flags); w.u32(iTOW); w.i32(lon); w.i32(lat); w.i32(height); w.i32(hMSL)
        w.i8(lonHp); w.i8(latHp); w.i8(heightHp); w.i8(hMSLHp); w.u32(hAcc); w.u32(vAcc)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.navHPPOSLLH, payload: payload) }
}

/// UBX-HNR-PVT (28 00): high-rate navigation solution (dead-reckoning receivers), between the navigation
/// epochs; each one is a fix of its own.
public struct UBXHnrPVT: Hashable, Sendable {
    public var iTOW: UInt32
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hour: UInt8
    public var minute: UInt8
    public var second: UInt8
    /// validDate b0, validTime b1, fullyResolved b2.
    public var valid: UInt8
    public var nano: Int32
    public var gpsFix: UInt8
    /// GPSfixOK b0, DiffSoln b1, WKNSET b2, TOWSET b3, headVehValid b4.
    public var flags: UInt8
    public var lon: Int32
    public var lat: Int32
    public var height: Int32
    public var hMSL: Int32
    /// mm/s.
    public var gSpeed: Int32
    public var speed: Int32
    /// 1e-5 degree.
    public var headMot: Int32
    public var headVeh: Int32
    /// mm, mm, mm/s, 1e-5 degree.
    public var hAcc: UInt32
    public var vAcc: UInt32
    public var sAcc: UInt32
    public var headAcc: UInt32

    public init(
        iTOW: UInt32, year: UInt16, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8, second: UInt8,
        valid: UInt8, nano: Int32, gpsFix: UInt8, flags: UInt8, lon: Int32, lat: Int32, height: Int32, hMSL: Int32,
        gSpeed: Int32, speed: Int32, headMot: Int32, headVeh: Int32, hAcc: UInt32, vAcc: UInt32, sAcc: UInt32,
        headAcc: UInt32
    ) {
        self.iTOW = iTOW
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
        self.valid = valid
        self.nano = nano
        self.gpsFix = gpsFix
        self.flags = flags
        self.lon = lon
        self.lat = lat
        self.height = height
        self.hMSL = hMSL
        self.gSpeed = gSpeed
        self.speed = speed
        self.headMot = headMot
        self.headVeh = headVeh
        self.hAcc = hAcc
        self.vAcc = vAcc
        self.sAcc = sAcc
        self.headAcc = headAcc
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 72 else { throw .ubxLength(messageClass: 0x28, id: 0x00, length: p.count) }
        self.init(
            iTOW: p.u32(0), year: p.u16(4), month: p.u8(6), day: p.u8(7), hour: p.u8(8), minute: p.u8(9),
            second: p.u8(10), valid: p.u8(11), nano: p.i32(12), gpsFix: p.u8(16), flags: p.u8(17), lon: p.i32(20),
            lat: p.i32(24), height: p.i32(28), hMSL: p.i32(32), gSpeed: p.i32(36), speed: p.i32(40),
            headMot: p.i32(44), headVeh: p.i32(48), hAcc: p.u32(52), vAcc: p.u32(56), sAcc: p.u32(60),
            headAcc: p.u32(64))
    }

    public var time: GNSSTime? {
        guard valid & 0x03 == 0x03, let date = GNSSDate(validYear: Int(year), month: Int(month), day: Int(day)),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let base = GNSSTime(date: date, time: TimeOfDay(hour: Int(hour), minute: Int(minute), second: Int(second)))
        return GNSSTime(nanosecondsSinceEpoch: base.nanosecondsSinceEpoch + Int64(nano))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 72)
        w.u32(iTOW); w.u16(year); w.u8(month); w.u8(day); w.u8(hour); w.u8(minute); w.u8(second); w.u8(valid)
        w.i32(nano); w.u8(gpsFix); w.u8(flags); w.zeros(2); w.i32(lon); w.i32(lat); w.i32(height); w.i32(hMSL)
        w.i32(gSpeed); w.i32(speed); w.i32(headMot); w.i32(headVeh); w.u32(hAcc); w.u32(vAcc); w.u32(sAcc)
        w.u32(headAcc); w.zeros(4)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.hnrPVT, payload: payload) }
}

/// Nanoseconds since the GPS epoch of a GPS week, time of week (ms) and its fraction (ns), or nil
/// when they do not fit in an `Int64` (weeks past about 15,250, the year 2272): the week is a
/// signed 16-bit field, and a corrupted or hostile frame with a checksum that happens to match
/// must cost that frame's time, not trap.
func gpsWeekNanoseconds(week: Int16, iTOW: UInt32, fTOW: Int32) -> Int64? {
    let (weekMs, o1) = Int64(week).multipliedReportingOverflow(by: 604_800_000)
    let (ms, o2) = weekMs.addingReportingOverflow(Int64(iTOW))
    let (ns, o3) = ms.multipliedReportingOverflow(by: 1_000_000)
    let (total, o4) = ns.addingReportingOverflow(Int64(fTOW))
    return o1 || o2 || o3 || o4 ? nil : total
}
