// What each UBX navigation message adds to the epoch in progress (their iTOW is the epoch's tag), the
// satellite lists of NAV-SAT and NAV-SVINFO, and HNR-PVT's high-rate fixes between epochs.

extension EpochAssembler {
    mutating func consumeUBX<Sink: EpochSink>(_ message: UBXMessage, into sink: inout Sink) {
        let key = MessageKey.ubx(message.messageID)
        switch message {
        case .navPVT(let m):
            let timeOfDay = m.time?.timeOfDay.nanosecondsSinceMidnight
            let station = referenceStationUsed
            participate(key: key, tag: .ubx(m.iTOW), utc: timeOfDay, into: &sink) { a in
                Self.take(m, usedStation: station, into: &a)
            }
        case .rxmRTCM(let m):
            // Not part of an epoch: the station of the last message used names the next fixes' station.
            if m.use == .used, !m.crcFailed {
                referenceStationUsed = Int(m.refStation)
            }
        case .navSOL(let m):
            let solutionTime = m.gpsNanoseconds.map { utc(gpsNanoseconds: $0) }
            let timeOfDay = solutionTime?.timeOfDay.nanosecondsSinceMidnight
            participate(key: key, tag: .ubx(m.iTOW), utc: timeOfDay, into: &sink) { a in
                Self.take(m, time: solutionTime, into: &a)
            }
        case .navPOSLLH(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { Self.take(m, into: &$0) }
        case .navVELNED(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { Self.take(m, into: &$0) }
        case .navHPPOSLLH(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { Self.take(m, into: &$0) }
        case .hnrPVT(let m):
            // A high-rate solution between navigation epochs: a fix of its own, outside the epoch in progress.
            // It supersedes that epoch's provisional fix, so the epoch gives one again.
            current.provisionalGiven = false
            sink.epochEnded(standaloneFix(m))
        case .navTimeGPS(let m):
            if m.leapSecondsValid { leapSeconds = Int(m.leapS) }
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { a in
                if a.fullTime == nil, let gps = m.gpsNanoseconds {
                    a.hasFixData = true
                    a.gpsTime = gps
                }
            }
        case .navTimeUTC(let m):
            let timeOfDay = m.time?.timeOfDay.nanosecondsSinceMidnight
            participate(key: key, tag: .ubx(m.iTOW), utc: timeOfDay, into: &sink) { Self.take(m, into: &$0) }
        case .navStatus(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { Self.take(m, into: &$0) }
        case .navDOP(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { a in
                a.hasSkyData = true
                // u-blox sends 99.99 for a DOP it does not know.
                a.dops = m.dops.keeping(below: 99.99)
            }
        case .navSAT(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { a in a.hasSkyData = true }
            takeSatellites(m)
        case .navSVINFO(let m):
            participate(key: key, tag: .ubx(m.iTOW), into: &sink) { a in a.hasSkyData = true }
            takeSatellites(m)
        case .other(let id, let payload) where id.messageClass == UBX.Class.nav:
            // NAV-POSECEF and NAV-VELECEF add their vector (UBXNavECEF.swift); other NAV messages
            // still mark the epoch.
            if let ecef = UBXNavECEF(id: id, payload: payload) {
                participate(key: key, tag: .ubx(ecef.iTOW), into: &sink) { a in
                    switch ecef.kind {
                    case .position: a.ecefPosition = ecef.vector
                    case .velocity: a.ecefVelocity = ecef.vector
                    }
                }
                return
            }
            guard let iTOW = Self.iTOW(of: id, payload) else { return }
            participate(key: key, tag: .ubx(iTOW), into: &sink) { _ in }
        default:
            return
        }
    }

    /// The iTOW of a NAV message not decoded here: most carry it first, a few after a version byte.
    private static func iTOW(of id: UBX.MessageID, _ payload: ArraySlice<UInt8>) -> UInt32? {
        guard payload.count >= 4 else { return nil }
        let offset = [0x13, 0x14, 0x3B, 0x3C].contains(id.id) ? 4 : 0
        guard payload.count >= offset + 4 else { return nil }
        let start = payload.startIndex + offset
        return UInt32(payload[start]) | UInt32(payload[start + 1]) << 8 | UInt32(payload[start + 2]) << 16
            | UInt32(payload[start + 3]) << 24
    }

    private static func take(_ m: UBXNavPVT, usedStation: Int?, into a: inout Accumulator) {
        a.hasFixData = true
        a.modeSource = .navPVT
        a.fullTime = m.time ?? a.fullTime
        if m.time != nil { a.ept = m.timeAccuracy }
        let (mode, status) = ubxMode(fixType: m.fixType, differential: m.differentialSolution)
        a.ubxMode = mode
        a.ubxStatus = status
        if mode >= .twoD {
            switch m.carrierSolution {
            case 1: a.ubxStatus = .rtkFloat
            case 2: a.ubxStatus = .rtkFixed
            default: break
            }
        }
        if mode >= .twoD, m.differentialSolution || m.carrierSolution != 0 {
            a.correctionAge = m.lastCorrectionAge
            a.referenceStation = a.referenceStation ?? usedStation
        }
        if a.positionSource < .geodetic {
            a.positionSource = .geodetic
            a.latitude = m.latitude
            a.longitude = m.longitude
            a.altitudeHAE = m.altitudeHAE
            a.altitudeMSL = m.altitudeMSL
        }
        a.velocitySource = .navPVT
        a.speed = m.groundSpeed
        a.track = m.headingOfMotion
        a.velocityNorth = m.velocityNorth
        a.velocityEast = m.velocityEast
        a.velocityDown = m.velocityDown
        a.climb = -m.velocityDown
        a.eph = m.horizontalAccuracy
        a.epv = m.verticalAccuracy
        a.eps = m.speedAccuracy
        a.satellitesUsed = Int(m.numSV)
        if m.pDOP < 9999 { a.dops.position = m.positionDOP }
    }

    /// NAV-SOL, whose GPS time `time` is already in UTC.
    private static func take(_ m: UBXNavSOL, time: GNSSTime?, into a: inout Accumulator) {
        a.hasFixData = true
        let (mode, status) = ubxMode(fixType: m.gpsFix, differential: m.differentialSolution)
        if a.modeSource < .navSOL {
            a.modeSource = .navSOL
            a.ubxMode = mode
            a.ubxStatus = status
        }
        if a.fullTime == nil { a.fullTime = time }
        // sAcc is the velocity's accuracy, as gpsd's driver reads it.
        a.ecefPosition = ECEFVector(centimetres: m.ecefX, m.ecefY, m.ecefZ, accuracy: m.pAcc)
        a.ecefVelocity = ECEFVector(centimetres: m.ecefVX, m.ecefVY, m.ecefVZ, accuracy: m.sAcc)
        let position = m.geodetic
        if a.positionSource < .ecef {
            a.positionSource = .ecef
            a.latitude = position.latitude
            a.longitude = position.longitude
            a.altitudeHAE = position.height
        }
        let velocity = WGS84.ned(
            vx: Double(m.ecefVX) / 100, vy: Double(m.ecefVY) / 100, vz: Double(m.ecefVZ) / 100,
            latitude: position.latitude, longitude: position.longitude)
        if a.velocitySource < .ecef {
            a.velocitySource = .ecef
            a.speed = (velocity.north * velocity.north + velocity.east * velocity.east).squareRoot()
            var track = arcTangent2(velocity.east, velocity.north) * 180 / .pi
            if track < 0 { track += 360 }
            a.track = track
        }
        if a.climb == nil { a.climb = -velocity.down }
        if a.eps == nil { a.eps = Double(m.sAcc) / 100 }
        a.satellitesUsed = a.satellitesUsed ?? Int(m.numSV)
        if m.pDOP < 9999, a.dops.position == nil { a.dops.position = Double(m.pDOP) * 0.01 }
    }

    private static func take(_ m: UBXNavHPPOSLLH, into a: inout Accumulator) {
        guard !m.invalid else { return }
        a.hasFixData = true
        a.positionSource = .highPrecision
        a.latitude = m.latitude
        a.longitude = m.longitude
        a.altitudeHAE = m.altitudeHAE
        a.altitudeMSL = m.altitudeMSL
    }

    private static func take(_ m: UBXNavTimeUTC, into a: inout Accumulator) {
        a.hasFixData = true
        if let time = m.time, a.fullTime == nil {
            a.fullTime = time
            a.ept = Double(m.tAcc) * 1e-9
        }
    }

    private static func take(_ m: UBXNavPOSLLH, into a: inout Accumulator) {
        a.hasFixData = true
        guard a.positionSource <= .geodetic else { return }
        a.positionSource = .geodetic
        a.latitude = m.latitude
        a.longitude = m.longitude
        a.altitudeHAE = m.altitudeHAE
        a.altitudeMSL = m.altitudeMSL
        if a.eph == nil { a.eph = Double(m.hAcc) / 1000 }
        if a.epv == nil { a.epv = Double(m.vAcc) / 1000 }
    }

    private static func take(_ m: UBXNavVELNED, into a: inout Accumulator) {
        // NAV-PVT gives the same velocity in mm/s; VELNED's cm/s only replaces coarser sources.
        guard a.velocitySource < .velned else { return }
        a.velocitySource = .velned
        a.speed = m.groundSpeed
        a.track = m.headingDegrees
        a.velocityNorth = Double(m.velN) / 100
        a.velocityEast = Double(m.velE) / 100
        a.velocityDown = Double(m.velD) / 100
        a.climb = -Double(m.velD) / 100
        if a.eps == nil { a.eps = Double(m.sAcc) / 100 }
    }

    private static func take(_ m: UBXNavStatus, into a: inout Accumulator) {
        a.hasFixData = true
        guard a.modeSource < .navStatus else { return }
        a.modeSource = .navStatus
        if m.gpsFixOK {
            let (mode, status) = ubxMode(fixType: m.gpsFix, differential: m.fixStat & 0x02 != 0)
            a.ubxMode = mode
            a.ubxStatus = status
        } else {
            a.ubxMode = .noFix
            a.ubxStatus = .unknown
        }
    }

    /// NAV-SAT's satellites, for the sky views while it is current.
    private mutating func takeSatellites(_ m: UBXNavSAT) {
        navSatSatellites.removeAll(keepingCapacity: true)
        for s in m.satellites {
            // A satellite with no number gpsd could give it (GLONASS 255: slot unknown) is left
            // out, as gpsd's SKY leaves out PRN 0.
            guard let system = s.system, let prn = SatelliteNumbering.prn(system: system, svid: Int(s.svId))
            else { continue }
            // C/N0 is always measured here: 0 dBHz (no signal) is reported, as gpsd does, where
            // a GSV's empty SNR field is unknown and left out.
            var entry = SatelliteInView(
                system: system, svid: Int(s.svId), prn: prn,
                elevation: abs(Int(s.elev)) <= 90 ? Double(s.elev) : nil,
                azimuth: (0...359).contains(Int(s.azim)) ? Double(s.azim) : nil,
                signalStrength: Double(s.cno), used: s.used)
            entry.pseudorangeResidual = s.pseudorangeResidual
            entry.quality = Int(s.qualityIndicator)
            entry.health = Int(s.health)
            navSatSatellites.append(entry)
        }
        navSatEpoch = epochCounter
    }

    /// u-blox 4 to 8 (and M8 timing firmware): the same satellite list as NAV-SAT, after gpsd's
    /// ubx_msg_nav_svinfo. Which of the two a SKY reports is decided in `currentSatellites`.
    private mutating func takeSatellites(_ m: UBXNavSVINFO) {
        svInfoSatellites.removeAll(keepingCapacity: true)
        for c in m.channels {
            // Numbers outside u-blox's single-number scheme (0, 255: GLONASS slot unknown) are left out,
            // as gpsd skips a satellite it cannot give a PRN.
            guard let satellite = c.satellite else { continue }
            // Elevation and azimuth ranges as in NAV-SAT above; C/N0 0 is reported as 0.
            var entry = SatelliteInView(
                system: satellite.system, svid: satellite.svid, prn: satellite.prn,
                elevation: abs(Int(c.elev)) <= 90 ? Double(c.elev) : nil,
                azimuth: (0...359).contains(Int(c.azim)) ? Double(c.azim) : nil,
                signalStrength: Double(c.cno), used: c.used)
            entry.pseudorangeResidual = c.pseudorangeResidual
            entry.quality = Int(c.qualityIndicator)
            // gpsd's SKY health: 1 healthy, 2 unhealthy (NAV-SVINFO has no "unknown").
            entry.health = c.unhealthy ? 2 : 1
            svInfoSatellites.append(entry)
        }
        svInfoEpoch = epochCounter
    }

    /// gpsd's mode and status for a u-blox fix type (NAV-PVT, NAV-SOL, NAV-STATUS, HNR-PVT).
    static func ubxMode(fixType: UInt8, differential: Bool) -> (FixMode, FixStatus) {
        switch fixType {
        case 1: return (.twoD, .deadReckoning)
        case 2: return (.twoD, differential ? .dgps : .gps)
        case 3: return (.threeD, differential ? .dgps : .gps)
        case 4: return (.threeD, differential ? .dgps : .gnssDeadReckoning)
        case 5: return (.threeD, .timeOnly)
        default: return (.noFix, .unknown)
        }
    }

    /// UTC of a GPS time (ns since the GPS epoch), with the leap seconds the receiver reported.
    func utc(gpsNanoseconds: Int64) -> GNSSTime {
        let leap = Int64(leapSeconds ?? options.defaultLeapSeconds)
        // Saturates at the ends of GNSSTime's range (years 1678-2262), as GNSSTime(date:time:) does.
        let (unix, overflow) = gpsNanoseconds.addingReportingOverflow((gpsEpochUnixSeconds - leap) * 1_000_000_000)
        return GNSSTime(nanosecondsSinceEpoch: overflow ? (gpsNanoseconds < 0 ? .min : .max) : unix)
    }

    /// HNR-PVT's fix, with the error model and rates against the fixes before it.
    private mutating func standaloneFix(_ m: UBXHnrPVT) -> Epoch {
        var fix = Fix()
        fix.time = m.time
        if fix.time != nil { fix.ept = 0.005 }
        let (mode, status) = Self.ubxMode(fixType: m.gpsFix, differential: m.flags & 0x02 != 0)
        fix.mode = mode
        fix.status = mode >= .twoD ? status : .unknown
        if mode >= .twoD {
            fix.latitude = Double(m.lat) * 1e-7
            fix.longitude = Double(m.lon) * 1e-7
            fix.altitudeHAE = Double(m.height) * 1e-3
            fix.altitudeMSL = Double(m.hMSL) * 1e-3
            fix.geoidSeparation = Double(m.height - m.hMSL) * 1e-3
            fix.speed = Double(m.gSpeed) * 1e-3
            var track = Double(m.headMot) * 1e-5
            if track < 0 { track += 360 }
            fix.track = track
            fix.eph = Double(m.hAcc) * 1e-3
            fix.epv = Double(m.vAcc) * 1e-3
            fix.eps = Double(m.sAcc) * 1e-3
        }
        applyErrorModel(&fix)
        remember(fix)
        return Epoch(fix: fix, sky: nil)
    }
}
