// NMEA 0183 sentences as typed values. Positions are decimal degrees (north and east positive),
// altitudes metres; speeds keep the sentence's unit in their name (`speedKnots`) with an SI
// property beside them (`speed`, m/s), so a decoded sentence re-encodes to the same text.

/// Knots to metres per second.
public let metresPerSecondPerKnot = 1852.0 / 3600.0

/// Satellite numbers of a GSA sentence, stored inline (up to 32; NMEA sends 12).
public struct NMEASatelliteIDs: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral {
    private var storage = SIMD32<UInt16>()
    public private(set) var count = 0

    public init() {}

    public init(_ ids: some Sequence<Int>) {
        for id in ids { append(id) }
    }

    public init(arrayLiteral elements: Int...) {
        self.init(elements)
    }

    public static let capacity = 32

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(position: Int) -> Int { Int(storage[position]) }

    /// Appends an id; ids beyond the capacity are dropped.
    public mutating func append(_ id: Int) {
        guard count < NMEASatelliteIDs.capacity else { return }
        storage[count] = UInt16(clamping: id)
        count += 1
    }
}

/// One satellite of a GSV sentence.
public struct GSVSatellite: Hashable, Sendable {
    /// The NMEA satellite number (see `SatelliteNumbering.fromNMEA`).
    public var id: Int
    /// Degrees; `nil` when the field is empty.
    public var elevation: Int?
    public var azimuth: Int?
    /// Signal-to-noise ratio, dBHz; `nil` when not tracking.
    public var snr: Int?

    public init(id: Int, elevation: Int?, azimuth: Int?, snr: Int?) {
        self.id = id
        self.elevation = elevation
        self.azimuth = azimuth
        self.snr = snr
    }
}

/// The up to four satellites of a GSV sentence, stored inline.
public struct GSVSatellites: RandomAccessCollection, Hashable, Sendable {
    // Each satellite packed in a UInt64: id, elevation, azimuth, SNR as 16-bit fields, with
    // Int16.min for an empty field. Plain shifts, no SIMD lane inserts.
    private static let none = Int16.min
    private var packed: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    public private(set) var count = 0

    public init() {}

    public init(_ satellites: some Sequence<GSVSatellite>) {
        for satellite in satellites { append(satellite) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> GSVSatellite {
        let word: UInt64
        switch position {
        case 0: word = packed.0
        case 1: word = packed.1
        case 2: word = packed.2
        default: word = packed.3
        }
        func field(_ shift: UInt64) -> Int16 { Int16(truncatingIfNeeded: word >> shift) }
        func value(_ v: Int16) -> Int? { v == GSVSatellites.none ? nil : Int(v) }
        return GSVSatellite(
            id: Int(field(0)), elevation: value(field(16)), azimuth: value(field(32)), snr: value(field(48)))
    }

    public static func == (lhs: GSVSatellites, rhs: GSVSatellites) -> Bool {
        lhs.count == rhs.count && lhs.packed == rhs.packed
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        hasher.combine(packed.0)
        hasher.combine(packed.1)
        hasher.combine(packed.2)
        hasher.combine(packed.3)
    }

    /// Appends a satellite; a fifth is dropped (GSV carries four).
    public mutating func append(_ satellite: GSVSatellite) {
        guard count < 4 else { return }
        func store(_ v: Int?) -> UInt64 { UInt64(UInt16(bitPattern: v.map { Int16(clamping: $0) } ?? GSVSatellites.none)) }
        let word = UInt64(UInt16(bitPattern: Int16(clamping: satellite.id))) | store(satellite.elevation) << 16
            | store(satellite.azimuth) << 32 | store(satellite.snr) << 48
        switch count {
        case 0: packed.0 = word
        case 1: packed.1 = word
        case 2: packed.2 = word
        default: packed.3 = word
        }
        count += 1
    }
}

/// GGA: time, position and fix data.
public struct NMEAGGA: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var time: TimeOfDay?
    @Compact public var latitude: Double?
    @Compact public var longitude: Double?
    /// 0 none, 1 autonomous, 2 differential, 3 PPS, 4 RTK fixed, 5 RTK float, 6 dead reckoning, 7 manual, 8 simulator.
    @Compact public var quality: Int?
    @Compact public var satellitesUsed: Int?
    @Compact public var hdop: Double?
    /// Altitude above mean sea level and geoid separation, metres.
    @Compact public var altitudeMSL: Double?
    @Compact public var geoidSeparation: Double?
    /// Age of differential corrections, seconds; reference station id.
    @Compact public var dgpsAge: Double?
    @Compact public var dgpsStation: Int?

    public init(
        talker: NMEATalker = .gp, time: TimeOfDay?, latitude: Double?, longitude: Double?, quality: Int?,
        satellitesUsed: Int?, hdop: Double?, altitudeMSL: Double?, geoidSeparation: Double?,
        dgpsAge: Double? = nil, dgpsStation: Int? = nil
    ) {
        self.talker = talker
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.quality = quality
        self.satellitesUsed = satellitesUsed
        self.hdop = hdop
        self.altitudeMSL = altitudeMSL
        self.geoidSeparation = geoidSeparation
        self.dgpsAge = dgpsAge
        self.dgpsStation = dgpsStation
    }
}

/// RMC: recommended minimum data.
public struct NMEARMC: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var time: TimeOfDay?
    /// `A` valid, `V` warning.
    @Compact public var status: Unicode.Scalar?
    @Compact public var latitude: Double?
    @Compact public var longitude: Double?
    @Compact public var speedKnots: Double?
    /// Course over ground, degrees true.
    @Compact public var course: Double?
    @Compact public var date: GNSSDate?
    /// Magnetic variation, degrees, east positive.
    @Compact public var magneticVariation: Double?
    /// FAA mode indicator (NMEA 2.3): A autonomous, D differential, E estimated, F float RTK, M manual,
    /// N not valid, P precise, R RTK, S simulator.
    @Compact public var modeIndicator: Unicode.Scalar?
    /// NMEA 4.10 navigational status: S safe, C caution, U unsafe, V not valid.
    @Compact public var navigationStatus: Unicode.Scalar?

    public init(
        talker: NMEATalker = .gp, time: TimeOfDay?, status: Unicode.Scalar?, latitude: Double?, longitude: Double?,
        speedKnots: Double?, course: Double?, date: GNSSDate?, magneticVariation: Double? = nil,
        modeIndicator: Unicode.Scalar? = nil, navigationStatus: Unicode.Scalar? = nil
    ) {
        self.talker = talker
        self.time = time
        self.status = status
        self.latitude = latitude
        self.longitude = longitude
        self.speedKnots = speedKnots
        self.course = course
        self.date = date
        self.magneticVariation = magneticVariation
        self.modeIndicator = modeIndicator
        self.navigationStatus = navigationStatus
    }

    /// Speed over ground, m/s.
    public var speed: Double? { speedKnots.map { $0 * metresPerSecondPerKnot } }
    public var isValid: Bool { status == "A" || status == "D" }
}

/// GSA: DOPs and the satellites used.
public struct NMEAGSA: Hashable, Sendable {
    public var talker: NMEATalker
    /// `A` automatic, `M` manual.
    @Compact public var selectionMode: Unicode.Scalar?
    /// 1 no fix, 2 2D, 3 3D.
    @Compact public var fixType: Int?
    public var satelliteIDs: NMEASatelliteIDs
    @Compact public var pdop: Double?
    @Compact public var hdop: Double?
    @Compact public var vdop: Double?
    /// NMEA 4.10 system id (1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC). A sentence
    /// with more than 12 satellite ids has none (it would be read as one more id), so `sentence()`
    /// leaves it out then.
    @Compact public var systemID: Int?

    public init(
        talker: NMEATalker = .gp, selectionMode: Unicode.Scalar? = "A", fixType: Int?, satelliteIDs: NMEASatelliteIDs,
        pdop: Double?, hdop: Double?, vdop: Double?, systemID: Int? = nil
    ) {
        self.talker = talker
        self.selectionMode = selectionMode
        self.fixType = fixType
        self.satelliteIDs = satelliteIDs
        self.pdop = pdop
        self.hdop = hdop
        self.vdop = vdop
        self.systemID = systemID
    }
}

/// GSV: satellites in view, four per sentence.
public struct NMEAGSV: Hashable, Sendable {
    public var talker: NMEATalker
    public var sentenceCount: Int
    public var sentenceNumber: Int
    @Compact public var satellitesInView: Int?
    public var satellites: GSVSatellites
    /// NMEA 4.10 signal id (1 = GPS L1 C/A, GLONASS L1 OF, ...; 7 = Galileo E1).
    @Compact public var signalID: Int?

    public init(
        talker: NMEATalker = .gp, sentenceCount: Int, sentenceNumber: Int, satellitesInView: Int?,
        satellites: GSVSatellites, signalID: Int? = nil
    ) {
        self.talker = talker
        self.sentenceCount = sentenceCount
        self.sentenceNumber = sentenceNumber
        self.satellitesInView = satellitesInView
        self.satellites = satellites
        self.signalID = signalID
    }
}

/// VTG: course and speed over ground.
public struct NMEAVTG: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var courseTrue: Double?
    @Compact public var courseMagnetic: Double?
    @Compact public var speedKnots: Double?
    @Compact public var speedKmh: Double?
    @Compact public var modeIndicator: Unicode.Scalar?

    public init(
        talker: NMEATalker = .gp, courseTrue: Double?, courseMagnetic: Double? = nil, speedKnots: Double?,
        speedKmh: Double?, modeIndicator: Unicode.Scalar? = nil
    ) {
        self.talker = talker
        self.courseTrue = courseTrue
        self.courseMagnetic = courseMagnetic
        self.speedKnots = speedKnots
        self.speedKmh = speedKmh
        self.modeIndicator = modeIndicator
    }

    /// Speed over ground, m/s (from the knots field, else km/h).
    public var speed: Double? {
        if let speedKnots { return speedKnots * metresPerSecondPerKnot }
        return speedKmh.map { $0 / 3.6 }
    }
}

/// GLL: geographic position.
public struct NMEAGLL: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var latitude: Double?
    @Compact public var longitude: Double?
    @Compact public var time: TimeOfDay?
    /// `A` valid, `V` invalid.
    @Compact public var status: Unicode.Scalar?
    @Compact public var modeIndicator: Unicode.Scalar?

    public init(
        talker: NMEATalker = .gp, latitude: Double?, longitude: Double?, time: TimeOfDay?, status: Unicode.Scalar?,
        modeIndicator: Unicode.Scalar? = nil
    ) {
        self.talker = talker
        self.latitude = latitude
        self.longitude = longitude
        self.time = time
        self.status = status
        self.modeIndicator = modeIndicator
    }
}

/// GNS: fix data for several systems.
public struct NMEAGNS: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var time: TimeOfDay?
    @Compact public var latitude: Double?
    @Compact public var longitude: Double?
    /// One mode indicator per system (GPS, GLONASS, Galileo, BeiDou, QZSS, NavIC).
    public var modeIndicators: String?
    @Compact public var satellitesUsed: Int?
    @Compact public var hdop: Double?
    @Compact public var altitudeMSL: Double?
    @Compact public var geoidSeparation: Double?
    @Compact public var dgpsAge: Double?
    @Compact public var dgpsStation: Int?
    /// NMEA 4.10 navigational status.
    @Compact public var navigationStatus: Unicode.Scalar?

    public init(
        talker: NMEATalker = .gn, time: TimeOfDay?, latitude: Double?, longitude: Double?, modeIndicators: String?,
        satellitesUsed: Int?, hdop: Double?, altitudeMSL: Double?, geoidSeparation: Double?,
        dgpsAge: Double? = nil, dgpsStation: Int? = nil, navigationStatus: Unicode.Scalar? = nil
    ) {
        self.talker = talker
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.modeIndicators = modeIndicators
        self.satellitesUsed = satellitesUsed
        self.hdop = hdop
        self.altitudeMSL = altitudeMSL
        self.geoidSeparation = geoidSeparation
        self.dgpsAge = dgpsAge
        self.dgpsStation = dgpsStation
        self.navigationStatus = navigationStatus
    }
}

/// GST: pseudorange error statistics, metres (orientation in degrees).
public struct NMEAGST: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var time: TimeOfDay?
    @Compact public var rangeRMS: Double?
    @Compact public var semiMajor: Double?
    @Compact public var semiMinor: Double?
    @Compact public var orientation: Double?
    @Compact public var latitudeError: Double?
    @Compact public var longitudeError: Double?
    @Compact public var altitudeError: Double?

    public init(
        talker: NMEATalker = .gp, time: TimeOfDay?, rangeRMS: Double?, semiMajor: Double?, semiMinor: Double?,
        orientation: Double?, latitudeError: Double?, longitudeError: Double?, altitudeError: Double?
    ) {
        self.talker = talker
        self.time = time
        self.rangeRMS = rangeRMS
        self.semiMajor = semiMajor
        self.semiMinor = semiMinor
        self.orientation = orientation
        self.latitudeError = latitudeError
        self.longitudeError = longitudeError
        self.altitudeError = altitudeError
    }
}

/// ZDA: UTC date and time, local zone.
public struct NMEAZDA: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var time: TimeOfDay?
    @Compact public var day: Int?
    @Compact public var month: Int?
    @Compact public var year: Int?
    @Compact public var localZoneHours: Int?
    @Compact public var localZoneMinutes: Int?

    public init(
        talker: NMEATalker = .gp, time: TimeOfDay?, day: Int?, month: Int?, year: Int?, localZoneHours: Int? = nil,
        localZoneMinutes: Int? = nil
    ) {
        self.talker = talker
        self.time = time
        self.day = day
        self.month = month
        self.year = year
        self.localZoneHours = localZoneHours
        self.localZoneMinutes = localZoneMinutes
    }

    public var date: GNSSDate? {
        guard let year, let month, let day else { return nil }
        return GNSSDate(validYear: year, month: month, day: day)
    }
}

/// TXT: a text message.
public struct NMEATXT: Hashable, Sendable {
    public var talker: NMEATalker
    @Compact public var sentenceCount: Int?
    @Compact public var sentenceNumber: Int?
    /// 0 error, 1 warning, 2 notice, 7 user (u-blox).
    @Compact public var textID: Int?
    public var text: String

    public init(talker: NMEATalker = .gp, sentenceCount: Int? = 1, sentenceNumber: Int? = 1, textID: Int?, text: String)
    {
        self.talker = talker
        self.sentenceCount = sentenceCount
        self.sentenceNumber = sentenceNumber
        self.textID = textID
        self.text = text
    }
}

/// MTK replies and commands (`$PMTK...`).
public enum PMTKMessage: Hashable, Sendable {
    /// `PMTK001,cmd,flag`: acknowledgement; flag 0 invalid, 1 unsupported, 2 failed, 3 success.
    case ack(command: Int, flag: Int)
    /// `PMTK010,msg`: system message; 1 startup, 2 wake-up from standby (notify), 3 normal.
    case system(message: Int)
    /// `PMTK705,release,build,model(,sdk)`: firmware version.
    case firmware(release: String, buildID: String, model: String, extra: [String])
    /// Any other `$PMTKnnn` sentence: its number and fields as text.
    case other(number: Int, fields: [String])

    /// The three-digit packet number.
    public var number: Int {
        switch self {
        case .ack: return 1
        case .system: return 10
        case .firmware: return 705
        case .other(let number, _): return number
        }
    }
}

/// A decoded NMEA sentence.
public enum NMEASentence: Hashable, Sendable {
    case gga(NMEAGGA)
    case rmc(NMEARMC)
    case gsa(NMEAGSA)
    case gsv(NMEAGSV)
    case vtg(NMEAVTG)
    case gll(NMEAGLL)
    case gns(NMEAGNS)
    case gst(NMEAGST)
    case zda(NMEAZDA)
    case txt(NMEATXT)
    case pmtk(PMTKMessage)
    /// Another proprietary sentence (`$P...`), kept whole.
    case proprietary(NMEAAddress, sentence: ArraySlice<UInt8>)
    /// A standard sentence of a type not decoded here, kept whole.
    case unsupported(NMEAAddress, sentence: ArraySlice<UInt8>)

    /// The talker of a standard sentence.
    public var talker: NMEATalker? {
        switch self {
        case .gga(let s): return s.talker
        case .rmc(let s): return s.talker
        case .gsa(let s): return s.talker
        case .gsv(let s): return s.talker
        case .vtg(let s): return s.talker
        case .gll(let s): return s.talker
        case .gns(let s): return s.talker
        case .gst(let s): return s.talker
        case .zda(let s): return s.talker
        case .txt(let s): return s.talker
        case .pmtk, .proprietary: return nil
        case .unsupported(let address, _): return address.talker
        }
    }
}
