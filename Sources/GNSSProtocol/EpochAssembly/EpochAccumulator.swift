// What an epoch in progress has gathered, and which message each of its values came from.
//
// A u-blox receiver may send the same quantity in several messages of one epoch (a position in NAV-PVT,
// NAV-POSLLH, NAV-HPPOSLLH and NAV-SOL, beside NMEA GGA and RMC). Each value keeps the most precise
// source seen so far; the sources are ordered from least to most trusted, so a message replaces a value
// only when it ranks above (or, for some, level with) the one that set it.

/// Which message gave the epoch's mode and status, least trusted first.
enum ModeSource: Int, Comparable, Sendable {
    /// No UBX message yet: NMEA sentences decide (see `FixBuilding`).
    case nmea
    case navStatus
    case navSOL
    case navPVT

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which message gave the epoch's position, least precise first.
enum PositionSource: Int, Comparable, Sendable {
    /// No UBX position yet: GGA, RMC, GLL and GNS fill it.
    case nmea
    /// NAV-SOL: ECEF in centimetres.
    case ecef
    /// NAV-PVT or NAV-POSLLH: 1e-7 degree, millimetres.
    case geodetic
    /// NAV-HPPOSLLH: 1e-9 degree, 0.1 mm.
    case highPrecision

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which message gave the epoch's velocity, least precise first.
enum VelocitySource: Int, Comparable, Sendable {
    /// No UBX velocity yet: RMC and VTG fill it.
    case nmea
    /// NAV-SOL: ECEF in cm/s.
    case ecef
    /// NAV-VELNED: north, east, down in cm/s.
    case velned
    /// NAV-PVT: north, east, down in mm/s.
    case navPVT

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What an epoch in progress has gathered.
struct Accumulator: Sendable {
    var nmeaTag: Int64?
    var ubxTag: UInt32?
    /// UTC time of day (ns) of the epoch, once a message has given it.
    var utcTimeOfDay: Int64?
    /// The epoch was reported (at its learned last message); a later message may still continue it.
    var emitted = false
    /// A provisional fix of this epoch was handed out (`EpochAssembler.provisionalFix()`).
    var provisionalGiven = false
    var lastKey: UInt64?
    var hasFixData = false
    var hasSkyData = false

    var timeOfDay: TimeOfDay?
    var date: GNSSDate?
    var fullTime: GNSSTime?
    var gpsTime: Int64?
    var ept: Double?

    var latitude: Double?
    var longitude: Double?
    var altitudeMSL: Double?
    var altitudeHAE: Double?
    var geoidSeparation: Double?
    var speed: Double?
    var track: Double?
    var climb: Double?
    var magneticVariation: Double?
    var velocityNorth: Double?
    var velocityEast: Double?
    var velocityDown: Double?
    var eph: Double?
    var epv: Double?
    var eps: Double?
    var epx: Double?
    var epy: Double?
    var dgpsAge: Double?
    var dgpsStation: Int?
    /// Age and station of the corrections the solution used (GGA, NAV-PVT flags3).
    var correctionAge: Double?
    var referenceStation: Int?
    /// The ECEF solution of NAV-SOL, NAV-POSECEF and NAV-VELECEF, reported as it came (gpsd's `ecef*`).
    var ecefPosition: ECEFVector?
    var ecefVelocity: ECEFVector?

    var ggaQuality: Int?
    var rmcValid: Bool?
    var gllValid: Bool?
    var gnsValid: Bool?
    var faaMode: Unicode.Scalar?
    var gsaFixType: Int?
    var sawGSA = false
    /// Satellites the GSA sentences of this epoch list as used (system and svid keys).
    var usedThisEpoch: [UInt32] = []
    var modeSource = ModeSource.nmea
    var positionSource = PositionSource.nmea
    var velocitySource = VelocitySource.nmea
    var ubxMode: FixMode?
    var ubxStatus: FixStatus?
    var satellitesUsed: Int?
    var dops = DilutionOfPrecision()

    var hasContent: Bool { hasFixData || hasSkyData }

    /// Whether a fix of this epoch could have a position now (a necessary condition, cheap to test).
    var mayHavePosition: Bool {
        hasFixData && latitude != nil && longitude != nil && (ubxMode.map { $0 >= .twoD } ?? true)
    }

    mutating func reset() {
        var used = usedThisEpoch
        used.removeAll(keepingCapacity: true)
        self = Accumulator()
        usedThisEpoch = used
    }
}
