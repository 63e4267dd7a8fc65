// The assembled results: a position fix and a view of the sky, with gpsd's TPV / SKY meaning.

/// A satellite system, numbered as u-blox's `gnssId` and gpsd's `gnssid`.
public enum GNSSSystem: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case gps = 0
    case sbas = 1
    case galileo = 2
    case beidou = 3
    case imes = 4
    case qzss = 5
    case glonass = 6
    case navic = 7

    /// The system of an NMEA 4.10 system id (1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC).
    public init?(nmeaSystemID: Int) {
        switch nmeaSystemID {
        case 1: self = .gps
        case 2: self = .glonass
        case 3: self = .galileo
        case 4: self = .beidou
        case 5: self = .qzss
        case 6: self = .navic
        default: return nil
        }
    }

    /// The NMEA 4.10 system id, where NMEA defines one.
    public var nmeaSystemID: Int? {
        switch self {
        case .gps, .sbas: return 1
        case .glonass: return 2
        case .galileo: return 3
        case .beidou: return 4
        case .qzss: return 5
        case .navic: return 6
        case .imes: return nil
        }
    }

    public var description: String {
        switch self {
        case .gps: return "GPS"
        case .sbas: return "SBAS"
        case .galileo: return "Galileo"
        case .beidou: return "BeiDou"
        case .imes: return "IMES"
        case .qzss: return "QZSS"
        case .glonass: return "GLONASS"
        case .navic: return "NavIC"
        }
    }
}

/// gpsd's TPV `mode`.
public enum FixMode: Int, Hashable, Sendable, Comparable {
    case unknown = 0
    case noFix = 1
    case twoD = 2
    case threeD = 3

    public static func < (lhs: FixMode, rhs: FixMode) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// gpsd's TPV `status` (gpsd 3.22+ numbering).
public enum FixStatus: Int, Hashable, Sendable {
    case unknown = 0
    case gps = 1
    case dgps = 2
    case rtkFixed = 3
    case rtkFloat = 4
    case deadReckoning = 5
    case gnssDeadReckoning = 6
    case timeOnly = 7
    case simulated = 8
    case ppsFix = 9
}

/// The carrier-phase (RTK) solution a fix comes from: u-blox NAV-PVT's `carrSoln`, NMEA GGA quality 5
/// (float) and 4 (fixed), or the FAA mode `F` and `R` of RMC and GNS.
public enum CarrierSolution: Int, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// No carrier-phase solution: autonomous, SBAS or code-differential (DGNSS).
    case none = 0
    /// RTK with float ambiguities: decimetres.
    case float = 1
    /// RTK with fixed integer ambiguities: centimetres.
    case fixed = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .float: "RTK float"
        case .fixed: "RTK fixed"
        }
    }
}

/// Dilutions of precision; gpsd's `xdop` is the east (longitude) DOP and `ydop` the north DOP.
public struct DilutionOfPrecision: Hashable, Sendable {
    public var x: Double?
    public var y: Double?
    public var vertical: Double?
    public var time: Double?
    public var horizontal: Double?
    public var geometric: Double?
    public var position: Double?

    public init(
        x: Double? = nil, y: Double? = nil, vertical: Double? = nil, time: Double? = nil, horizontal: Double? = nil,
        geometric: Double? = nil, position: Double? = nil
    ) {
        self.x = x
        self.y = y
        self.vertical = vertical
        self.time = time
        self.horizontal = horizontal
        self.geometric = geometric
        self.position = position
    }

    public var isEmpty: Bool {
        x == nil && y == nil && vertical == nil && time == nil && horizontal == nil && geometric == nil
            && position == nil
    }

    /// Whether all seven are known (nothing left for ``fillMissing(from:)`` to fill).
    public var isComplete: Bool {
        x != nil && y != nil && vertical != nil && time != nil && horizontal != nil && geometric != nil
            && position != nil
    }

    /// These DOPs with every value at or above `limit` (a receiver's "unknown") left out.
    public func keeping(below limit: Double) -> DilutionOfPrecision {
        func keep(_ value: Double?) -> Double? { value.flatMap { $0 < limit ? $0 : nil } }
        return DilutionOfPrecision(
            x: keep(x), y: keep(y), vertical: keep(vertical), time: keep(time), horizontal: keep(horizontal),
            geometric: keep(geometric), position: keep(position))
    }

    /// Fills the DOPs this one lacks from `other`.
    public mutating func fillMissing(from other: DilutionOfPrecision) {
        x = x ?? other.x
        y = y ?? other.y
        vertical = vertical ?? other.vertical
        time = time ?? other.time
        horizontal = horizontal ?? other.horizontal
        geometric = geometric ?? other.geometric
        position = position ?? other.position
    }
}

/// One navigation solution, with the meaning of gpsd's TPV fields. Units: degrees, metres, m/s;
/// the error estimates (`ep*`) are gpsd's: 95 % confidence where derived from DOPs.
public struct Fix: Hashable, Sendable {
    /// Time of the fix (UTC). `nil` until the receiver has given a date as well as a time of day.
    public var time: GNSSTime?
    public var mode: FixMode = .unknown
    public var status: FixStatus = .unknown
    public var latitude: Double?
    public var longitude: Double?
    /// Height above the WGS84 ellipsoid and above mean sea level, metres.
    public var altitudeHAE: Double?
    public var altitudeMSL: Double?
    /// Geoid separation (HAE - MSL), metres.
    public var geoidSeparation: Double?
    /// Speed over ground, m/s; track (course over ground, true), degrees; climb rate, m/s.
    public var speed: Double?
    public var track: Double?
    public var climb: Double?
    /// Magnetic variation (east positive) and magnetic track, degrees.
    public var magneticVariation: Double?
    public var magneticTrack: Double?
    /// Estimated errors: time (s), longitude (m), latitude (m), vertical (m), horizontal (m),
    /// speed (m/s), climb (m/s), 3D position (m), track (degrees).
    public var ept: Double?
    public var epx: Double?
    public var epy: Double?
    public var epv: Double?
    public var eph: Double?
    public var eps: Double?
    public var epc: Double?
    public var sep: Double?
    public var epd: Double?
    /// NED velocity, m/s (when the receiver gives it).
    public var velocityNorth: Double?
    public var velocityEast: Double?
    public var velocityDown: Double?
    /// Age of differential corrections (s) and reference station id, as gpsd's TPV `dgpsAge` and
    /// `dgpsSta` report them (from NMEA GGA only, and only when one of them is not zero).
    public var dgpsAge: Double?
    public var dgpsStation: Int?
    /// Age of the differential corrections the solution used, seconds: GGA's age field, or NAV-PVT's
    /// `lastCorrectionAge` (a range: its upper end, 120 for "120 s or more"). nil: none used, or not said.
    public var correctionAge: Double?
    /// The reference station whose corrections the solution used: GGA's station field, or the station of
    /// the last RTCM message an RXM-RTCM said was used. nil: none used, or not said.
    public var referenceStation: Int?
    public var dops = DilutionOfPrecision()
    /// Satellites used in the solution.
    public var satellitesUsed: Int?
    /// GPS-UTC leap seconds, once the receiver has said them (UBX NAV-TIMEGPS with leapS valid).
    public var leapSeconds: Int?
    /// ECEF position and velocity with their accuracies, where the receiver sends them (UBX NAV-SOL,
    /// NAV-POSECEF, NAV-VELECEF): gpsd's `ecefx/y/z` and `ecefpAcc`, `ecefvx/vy/vz` and `ecefvAcc`.
    public var ecefPosition: ECEFVector?
    public var ecefVelocity: ECEFVector?

    public init() {}

    /// `true` when the fix has a 2D or 3D position.
    public var hasPosition: Bool { mode >= .twoD && latitude != nil && longitude != nil }

    /// The RTK solution of this fix, from its `status` (RTK float or fixed; none for any other).
    public var carrierSolution: CarrierSolution {
        switch status {
        case .rtkFixed: .fixed
        case .rtkFloat: .float
        default: .none
        }
    }

    /// Whether the solution used differential corrections: DGNSS, RTK float or RTK fixed.
    public var isDifferential: Bool { status == .dgps || carrierSolution != .none }
}

/// One satellite in view, with the meaning of an entry of gpsd's SKY `satellites`.
public struct SatelliteInView: Hashable, Sendable {
    public var system: GNSSSystem
    /// The satellite number within its system (u-blox `svId`, gpsd `svid`).
    public var svid: Int
    /// gpsd's PRN (NMEA 4.0 extended numbering: GLONASS 65-96, Galileo 301-336, BeiDou 401-437, ...).
    public var prn: Int
    /// Degrees; `nil` when unknown.
    public var elevation: Double?
    public var azimuth: Double?
    /// Signal strength, dBHz.
    public var signalStrength: Double?
    public var used: Bool
    /// Signal id (u-blox numbering: 0 for GPS L1 C/A, Galileo E1, ...), when the receiver says. A multi-band
    /// receiver's satellite has one entry per signal.
    public var signalID: Int?
    /// Pseudorange residual, metres; quality indicator and health (u-blox NAV-SAT, NAV-SVINFO).
    public var pseudorangeResidual: Double?
    public var quality: Int?
    public var health: Int?

    public init(
        system: GNSSSystem, svid: Int, prn: Int, elevation: Double? = nil, azimuth: Double? = nil,
        signalStrength: Double? = nil, used: Bool = false, signalID: Int? = nil
    ) {
        self.system = system
        self.svid = svid
        self.prn = prn
        self.elevation = elevation
        self.azimuth = azimuth
        self.signalStrength = signalStrength
        self.used = used
        self.signalID = signalID
    }
}

/// The satellites in view and the DOPs of one epoch, with gpsd's SKY meaning.
public struct SkyView: Hashable, Sendable {
    public var time: GNSSTime?
    public var dops = DilutionOfPrecision()
    public var satellites: [SatelliteInView] = []

    public init(
        time: GNSSTime? = nil, dops: DilutionOfPrecision = DilutionOfPrecision(), satellites: [SatelliteInView] = []
    ) {
        self.time = time
        self.dops = dops
        self.satellites = satellites
    }

    /// Entries in view (gpsd `nSat`) and used (`uSat`): one per satellite and signal, as gpsd counts them, so a
    /// multi-band receiver's dual-band satellite counts twice.
    public var satellitesVisible: Int { satellites.count }
    public var satellitesUsed: Int { satellites.reduce(0) { $0 + ($1.used ? 1 : 0) } }

    /// Satellites in view and used, each once however many of its signals are listed (used when any is).
    public var distinctSatellites: (visible: Int, used: Int) {
        var seen: [UInt32] = []
        var used: [UInt32] = []
        seen.reserveCapacity(satellites.count)
        for satellite in satellites {
            let key = satelliteKey(satellite.system, satellite.svid)
            if !seen.contains(key) { seen.append(key) }
            if satellite.used && !used.contains(key) { used.append(key) }
        }
        return (seen.count, used.count)
    }
}

/// A satellite as one number, its system and svid: to find a satellite in a list without hashing.
@inline(__always)
func satelliteKey(_ system: GNSSSystem, _ svid: Int) -> UInt32 {
    UInt32(system.rawValue) << 16 | UInt32(truncatingIfNeeded: svid & 0xFFFF)
}

/// Maps satellite numbers between NMEA, u-blox and gpsd conventions.
public enum SatelliteNumbering {
    /// gpsd's PRN for a u-blox (gnssId, svId) pair: NMEA 4.0's extended numbers, as gpsd's
    /// `ubx2_to_prn` makes them (SBAS 120–151 is 33–64, GLONASS 65 + slot, Galileo 301–336, BeiDou
    /// 401–463, QZSS 193–202, IMES 173–182; NavIC, which gpsd leaves unnumbered, 501 on). nil for
    /// an svId u-blox does not give the system, such as GLONASS 255 (tracked, slot not known yet).
    public static func prn(system: GNSSSystem, svid: Int) -> Int? {
        switch (system, svid) {
        case (.gps, 1...32): svid
        case (.sbas, 120...151): svid - 87
        case (.sbas, 152...158): svid
        case (.galileo, 1...36): 300 + svid
        case (.galileo, 211...246): svid + 90
        case (.beidou, 1...63): 400 + svid
        case (.beidou, 159...163): svid + 242
        case (.imes, 1...10): 172 + svid
        case (.imes, 173...182): svid
        case (.qzss, 1...10): 192 + svid
        case (.qzss, 193...202): svid
        case (.glonass, 1...32): 64 + svid
        case (.glonass, 65...96): svid
        case (.navic, 1...14): 500 + svid
        default: nil
        }
    }

    /// The system, svid and gpsd PRN of a satellite in u-blox's single-number scheme (NAV-SVINFO's `svid`),
    /// as gpsd's `ubx_to_prn` reads it: GPS 1–32; BeiDou 33–64 (svid 6–37) and 159–163 (svid 1–5);
    /// GLONASS 65–96 (slot 1–32); SBAS 120–158; IMES 173–182 (svid 1–10); QZSS 193–199 (svid 1–7);
    /// Galileo 211–246 (svid 1–36). `nil` for every other number: 0, the gaps, and 255 (a GLONASS
    /// satellite whose slot is not known yet).
    public static func fromUBX(_ number: Int) -> (system: GNSSSystem, svid: Int, prn: Int)? {
        let system: GNSSSystem
        let svid: Int
        switch number {
        case 1...32: (system, svid) = (.gps, number)
        case 33...64: (system, svid) = (.beidou, number - 27)
        case 65...96: (system, svid) = (.glonass, number - 64)
        case 120...158: (system, svid) = (.sbas, number)
        case 159...163: (system, svid) = (.beidou, number - 158)
        case 173...182: (system, svid) = (.imes, number - 172)
        // gpsd stops at 199 (u-blox documents 193-197; ZED-F9T NMEA shows 198 and 199).
        case 193...199: (system, svid) = (.qzss, number - 192)
        case 211...246: (system, svid) = (.galileo, number - 210)
        default: return nil
        }
        guard let prn = prn(system: system, svid: svid) else { return nil }
        return (system, svid, prn)
    }

    /// The system, svid and gpsd PRN of an NMEA satellite number, using the NMEA 4.10 system id when
    /// known and the talker otherwise (after gpsd's `nmeaid_to_prn`). `nil` for numbers nobody defines.
    public static func fromNMEA(
        _ number: Int, talker: NMEATalker, systemID: Int?
    )
        -> (system: GNSSSystem, svid: Int, prn: Int)?
    {
        guard number > 0 else { return nil }
        if let systemID, let system = GNSSSystem(nmeaSystemID: systemID) {
            switch system {
            case .gps, .sbas:
                if number <= 32 { return (.gps, number, number) }
                if number <= 64 { return (.sbas, number + 87, number) }
                if number >= 152 && number <= 158 { return (.sbas, number, number) }
                if number >= 193 && number <= 199 { return (.qzss, number - 192, number) }
                return nil
            case .glonass:
                let svid = number <= 64 ? number : number - 64
                guard svid >= 1 && svid <= 64 else { return nil }
                return (.glonass, svid, 64 + svid)
            case .galileo:
                let svid = number < 100 ? number : (number > 300 ? number - 300 : number - 100)
                guard svid >= 1 && svid < 100 else { return nil }
                return (.galileo, svid, 300 + svid)
            case .beidou:
                let svid = number < 100 ? number : (number > 400 ? number - 400 : number - 200)
                guard svid >= 1 && svid < 100 else { return nil }
                return (.beidou, svid, 400 + svid)
            case .qzss:
                let svid = number < 100 ? number : number - 192
                guard svid >= 1 && svid < 100 else { return nil }
                return (.qzss, svid, 192 + svid)
            case .navic:
                return (.navic, number, 500 + number)
            case .imes:
                return nil
            }
        }
        if number <= 32 {
            switch talker.system {
            case .galileo?: return (.galileo, number, 300 + number)
            case .beidou?: return (.beidou, number, 400 + number)
            case .navic?: return (.navic, number, 500 + number)
            case .glonass?: return (.glonass, number, 64 + number)
            case .qzss?: return (.qzss, number, 192 + number)
            default: return (.gps, number, number)
            }
        }
        switch number {
        case 33...64: return (.sbas, number + 87, number)
        case 65...96: return (.glonass, number - 64, number)
        case 120...158: return (.sbas, number, number)
        case 173...182: return (.imes, number - 172, number)
        case 193...199: return (.qzss, number - 192, number)
        case 201...237: return (.beidou, number - 200, number + 200)
        case 301...356: return (.galileo, number - 300, number)
        case 401...437: return (.beidou, number - 400, number)
        default: return nil
        }
    }
}

/// A position (metres) or a velocity (m/s) in Earth-centred, Earth-fixed coordinates (WGS84), with the
/// receiver's accuracy estimate for it, as the receiver gave them.
public struct ECEFVector: Hashable, Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    /// The receiver's accuracy estimate (UBX pAcc or sAcc), metres or m/s.
    public var accuracy: Double

    public init(x: Double, y: Double, z: Double, accuracy: Double) {
        self.x = x
        self.y = y
        self.z = z
        self.accuracy = accuracy
    }

    /// From UBX's centimetres (or cm/s), as gpsd's u-blox driver reads them.
    init(centimetres x: Int32, _ y: Int32, _ z: Int32, accuracy: UInt32) {
        self.init(x: Double(x) / 100, y: Double(y) / 100, z: Double(z) / 100, accuracy: Double(accuracy) / 100)
    }
}
