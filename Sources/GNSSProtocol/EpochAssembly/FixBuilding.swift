// An epoch's Fix from what it gathered, with gpsd's TPV meaning: the time, the mode and status, position
// and velocity, and the error estimates gpsd's error model gives when the receiver sends none.

extension EpochAssembler {
    /// Error model constants (gpsd's UERE guesses, metres at 95 %), used for `eph`/`epv`/`epx`/`epy`/`sep`
    /// when the receiver gives DOPs but no accuracy estimate.
    public struct ErrorModel: Hashable, Sendable {
        public var horizontal: Double
        public var vertical: Double
        public var position: Double
        public var horizontalDGPS: Double
        public var verticalDGPS: Double
        public var positionDGPS: Double

        public init(
            horizontal: Double = 15, vertical: Double = 23, position: Double = 19, horizontalDGPS: Double = 3.75,
            verticalDGPS: Double = 5.75, positionDGPS: Double = 4.75
        ) {
            self.horizontal = horizontal
            self.vertical = vertical
            self.position = position
            self.horizontalDGPS = horizontalDGPS
            self.verticalDGPS = verticalDGPS
            self.positionDGPS = positionDGPS
        }

        /// gpsd's constants (`gpsd_error_model`).
        public static let gpsd = ErrorModel()
    }

    /// The fix of the epoch in progress, and the date its time was given when it came from the date
    /// remembered from an earlier epoch or an NMEA date (what `makeFix` remembers for the next epochs).
    func buildFix(geometry: inout GeometryOnDemand) -> (fix: Fix, date: (date: GNSSDate, timeOfDay: Int64)?) {
        let a = current
        var fix = Fix()
        let time = fixTime(a)
        fix.time = time.time
        if fix.time != nil { fix.ept = a.ept ?? 0.005 }
        setModeAndStatus(of: &fix, from: a)
        if fix.mode >= .twoD { Self.setPositionAndVelocity(of: &fix, from: a) }
        fix.satellitesUsed = a.satellitesUsed
        fix.leapSeconds = leapSeconds
        if fix.mode >= .twoD {
            fix.ecefPosition = a.ecefPosition
            fix.ecefVelocity = a.ecefVelocity
        }
        fix.dops = a.dops
        if a.hasSkyData || !a.dops.isEmpty {
            // Fill the DOPs the receiver did not send from the geometry of the used satellites (as gpsd does).
            geometry.fillMissing(in: &fix.dops)
        }
        fix.eph = a.eph
        fix.epv = a.epv
        fix.eps = a.eps
        fix.epx = a.epx
        fix.epy = a.epy
        applyErrorModel(&fix)
        return (fix, time.date)
    }

    /// The fix of the epoch in progress, remembered for the next epochs (their dates and rates).
    mutating func makeFix(geometry: inout GeometryOnDemand) -> Fix {
        let (fix, date) = buildFix(geometry: &geometry)
        if let date {
            lastDate = date.date
            lastTimeOfDay = date.timeOfDay
        }
        remember(fix)
        return fix
    }

    /// Keeps a fix with a time for the rates of the next ones (and the one before it, for a fix that
    /// repeats this one's time).
    mutating func remember(_ fix: Fix) {
        guard let time = fix.time else { return }
        if let last = lastFix, let lastTime = last.time, abs(time.seconds(since: lastTime)) >= 0.0099 {
            olderFix = last
        }
        lastFix = fix
    }

    /// A full UTC time from UBX, else the NMEA time of day on the latest date.
    private func fixTime(_ a: Accumulator) -> (time: GNSSTime?, date: (date: GNSSDate, timeOfDay: Int64)?) {
        if let time = a.fullTime { return (time, nil) }
        if let gps = a.gpsTime { return (utc(gpsNanoseconds: gps), nil) }
        guard let tod = a.timeOfDay else { return (nil, nil) }
        let ns = tod.nanosecondsSinceMidnight
        var date = a.date
        if date == nil, let last = lastDate {
            // Roll the remembered date over at midnight.
            if let previous = lastTimeOfDay, ns + 43_200_000_000_000 < previous {
                date = GNSSDate(daysSinceEpoch: last.daysSinceEpoch + 1)
            } else {
                date = last
            }
        }
        guard let date else { return (nil, nil) }
        return (GNSSTime(date: date, time: tod), (date, ns))
    }

    /// The mode and status: a UBX message's when the epoch has one, else what the NMEA sentences say.
    private func setModeAndStatus(of fix: inout Fix, from a: Accumulator) {
        if let mode = a.ubxMode {
            fix.mode = mode
            fix.status = a.ubxStatus ?? .unknown
            return
        }
        if a.ggaQuality == nil && a.rmcValid == nil && a.gllValid == nil && a.gnsValid == nil && a.gsaFixType == nil {
            // Nothing in the epoch says whether there is a fix (time messages only): gpsd's mode 0.
            fix.mode = .unknown
            return
        }
        let hasPosition = a.latitude != nil && a.longitude != nil
        let positive = (a.ggaQuality ?? 0) > 0 || a.rmcValid == true || a.gllValid == true || a.gnsValid == true
        if !positive || !hasPosition {
            fix.mode = .noFix
        } else if let type = a.gsaFixType {
            fix.mode = FixMode(rawValue: type) ?? .noFix
        } else if a.altitudeMSL != nil || a.altitudeHAE != nil {
            fix.mode = (a.satellitesUsed ?? 4) >= 4 || a.satellitesUsed == nil ? .threeD : .twoD
        } else {
            fix.mode = (lastFix?.mode ?? .unknown) == .threeD && a.rmcValid == true ? .threeD : .twoD
        }
        if fix.mode >= .twoD {
            fix.status = Self.status(quality: a.ggaQuality, faa: a.faaMode)
        }
    }

    /// Position, altitudes (each from the other and the geoid separation when one is missing) and velocity.
    private static func setPositionAndVelocity(of fix: inout Fix, from a: Accumulator) {
        fix.latitude = a.latitude
        fix.longitude = a.longitude
        fix.geoidSeparation = a.geoidSeparation
        if let hae = a.altitudeHAE, let msl = a.altitudeMSL {
            fix.altitudeHAE = hae
            fix.altitudeMSL = msl
            fix.geoidSeparation = fix.geoidSeparation ?? hae - msl
        } else if let msl = a.altitudeMSL {
            fix.altitudeMSL = msl
            fix.altitudeHAE = a.geoidSeparation.map { msl + $0 }
        } else if let hae = a.altitudeHAE {
            fix.altitudeHAE = hae
            fix.altitudeMSL = a.geoidSeparation.map { hae - $0 }
        }
        fix.speed = a.speed
        if let track = a.track { fix.track = track < 0 ? track + 360 : (track >= 360 ? track - 360 : track) }
        fix.climb = fix.mode == .threeD ? a.climb : nil
        fix.magneticVariation = a.magneticVariation
        if let variation = a.magneticVariation, let track = fix.track {
            var magnetic = track + variation
            if magnetic < 0 { magnetic += 360 }
            if magnetic >= 360 { magnetic -= 360 }
            fix.magneticTrack = magnetic
        }
        fix.velocityNorth = a.velocityNorth
        fix.velocityEast = a.velocityEast
        fix.velocityDown = a.velocityDown
        fix.dgpsAge = a.dgpsAge
        fix.dgpsStation = a.dgpsStation
        fix.correctionAge = a.correctionAge
        fix.referenceStation = a.referenceStation
    }

    /// gpsd's status for an NMEA fix: the GGA quality, else the FAA mode of RMC or GNS.
    static func status(quality: Int?, faa: Unicode.Scalar?) -> FixStatus {
        switch quality {
        case 1?: return .gps
        case 2?: return .dgps
        case 3?: return .ppsFix
        case 4?: return .rtkFixed
        case 5?: return .rtkFloat
        case 6?: return .deadReckoning
        case 7?: return .timeOnly
        case 8?: return .simulated
        default: break
        }
        switch faa {
        case "D"?, "P"?: return .dgps
        case "E"?: return .deadReckoning
        case "F"?: return .rtkFloat
        case "R"?: return .rtkFixed
        case "S"?: return .simulated
        case "M"?: return .timeOnly
        default: return .gps
        }
    }

    /// gpsd's `gpsd_error_model`: estimates from DOPs, and rates from the previous fix.
    func applyErrorModel(_ fix: inout Fix) {
        let model = options.errorModel
        let dgps = fix.status == .dgps
        let h = dgps ? model.horizontalDGPS : model.horizontal
        let v = dgps ? model.verticalDGPS : model.vertical
        let p = dgps ? model.positionDGPS : model.position
        guard fix.mode >= .twoD else { return }
        if fix.dops.horizontal != nil {
            if fix.epx == nil, let x = fix.dops.x { fix.epx = x * h }
            if fix.epy == nil, let y = fix.dops.y { fix.epy = y * h }
        }
        if fix.mode == .threeD, fix.epv == nil, let vdop = fix.dops.vertical { fix.epv = vdop * v }
        if fix.eph == nil, let hdop = fix.dops.horizontal { fix.eph = hdop * p }
        if fix.sep == nil, let pdop = fix.dops.position { fix.sep = pdop * p }
        applyRates(&fix)
    }

    /// Speed, climb and their errors against the previous fix with a different time.
    private func applyRates(_ fix: inout Fix) {
        guard let time = fix.time else { return }
        var previous = lastFix
        if let last = previous, let lastTime = last.time, abs(time.seconds(since: lastTime)) < 0.0099 {
            previous = olderFix
        }
        guard let old = previous, let oldTime = old.time else { return }
        let dt = time.seconds(since: oldTime)
        guard dt > 0, old.mode >= .twoD else { return }
        if options.deriveRates {
            if fix.speed == nil, let lat = fix.latitude, let lon = fix.longitude, let oldLat = old.latitude,
                let oldLon = old.longitude
            {
                let speed = WGS84.sphericalDistance(lat, lon, oldLat, oldLon) / dt
                if speed < 9999.9 { fix.speed = speed }
            }
            if fix.mode == .threeD, old.mode == .threeD, fix.climb == nil, let hae = fix.altitudeHAE,
                let oldHAE = old.altitudeHAE
            {
                let climb = (hae - oldHAE) / dt
                if abs(climb) < 9999.9 { fix.climb = climb }
            }
        }
        if fix.eps == nil, let ox = old.epx, let oy = old.epy, let x = fix.epx, let y = fix.epy {
            fix.eps = (max(ox, oy) + max(x, y)) / dt
        }
        if fix.mode == .threeD, fix.epc == nil, let oldV = old.epv, let epv = fix.epv {
            fix.epc = (oldV + epv) / dt
        }
    }
}
