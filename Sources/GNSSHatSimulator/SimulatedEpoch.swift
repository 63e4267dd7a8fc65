// The simulated receiver's navigation output for one epoch, encoded by GNSSProtocol: u-blox NMEA
// (GN talker, per-system GSV) with the UBX NAV messages configuration enabled, or MTK NMEA
// (GP talker, PMTK314 rates).
import GNSSHat
import GNSSProtocol

/// The frames of one epoch of the simulated receiver's navigation output, in the order it sends them.
enum SimulatedEpoch {
    /// GPS seconds are ahead of UTC by the leap seconds (18 since 2017); GPS time started at
    /// 1980-01-06, 315 964 800 s after the Unix epoch.
    static let leapSeconds: Int64 = 18
    static let gpsEpochOffset: Int64 = 315_964_800

    /// GPS time of week in milliseconds for a UTC time.
    static func iTOW(_ time: GNSSTime) -> UInt32 {
        let gpsNanos = time.nanosecondsSinceEpoch - gpsEpochOffset * 1_000_000_000 + leapSeconds * 1_000_000_000
        let weekNanos: Int64 = 604_800 * 1_000_000_000
        let into = ((gpsNanos % weekNanos) + weekNanos) % weekNanos
        return UInt32(into / 1_000_000)
    }

    static let geoidSeparation = 47.0

    static func ublox(
        time: GNSSTime, position: (latitude: Double, longitude: Double)?, accuracy: Double = 1.5,
        settings: SimulatedReceiver.Settings, satellites: [SimulatedSatellite], nmea: Bool,
        ubx: Set<UBX.MessageID>, rtk: RTKSolution? = nil
    ) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        let simulation = settings.simulation
        let used = satellites.filter(\.used)
        let iTOW = iTOW(time)
        if ubx.contains(.navPVT) {
            let pvt: UBXNavPVT
            if let position {
                pvt = UBXNavPVT(
                    iTOW: iTOW, time: time, fixType: 3, numSV: UInt8(used.count), latitude: position.latitude,
                    longitude: position.longitude, altitudeHAE: simulation.altitude + geoidSeparation,
                    altitudeMSL: simulation.altitude, groundSpeed: simulation.speed,
                    headingOfMotion: simulation.course, horizontalAccuracy: accuracy,
                    verticalAccuracy: accuracy * 5 / 3, positionDOP: 1.4, differential: rtk != nil,
                    carrierSolution: UInt8(rtk?.carrier.rawValue ?? 0), correctionAge: rtk?.age)
            } else {
                pvt = UBXNavPVT(
                    iTOW: iTOW, time: time, fixType: 0, numSV: 0, latitude: 0, longitude: 0, altitudeHAE: 0,
                    altitudeMSL: 0, horizontalAccuracy: 4_000_000, verticalAccuracy: 4_000_000, positionDOP: 99.99)
            }
            frames.append(pvt.frame)
        }
        if ubx.contains(.navSAT) {
            let entries = satellites.map { satellite in
                UBXNavSAT.Satellite(
                    gnssId: satellite.system.rawValue, svId: UInt8(satellite.svid), cno: UInt8(satellite.strength),
                    elev: Int8(satellite.elevation), azim: Int16(satellite.azimuth),
                    flags: (satellite.used ? 0x08 : 0) | (position == nil ? 0x02 : 0x07))
            }
            frames.append(UBXNavSAT(iTOW: iTOW, satellites: entries).frame)
        }
        if ubx.contains(.navTimeUTC) {
            frames.append(UBXNavTimeUTC(iTOW: iTOW, time: time).frame)
        }
        if nmea {
            frames += nmeaSentences(time: time, position: position, settings: settings, satellites: satellites,
                                    talker: .gn, format: .ublox, rates: PMTK.SentenceRates(vtg: 0), epoch: 0,
                                    rtk: rtk)
        }
        return frames
    }

    static func mtk(
        time: GNSSTime, position: (latitude: Double, longitude: Double)?, settings: SimulatedReceiver.Settings,
        satellites: [SimulatedSatellite], rates: PMTK.SentenceRates
    ) -> [[UInt8]] {
        let gps = satellites.filter { $0.system == .gps }
        let epoch = Int(time.nanosecondsSinceEpoch / 1_000_000_000)
        return nmeaSentences(time: time, position: position, settings: settings, satellites: gps, talker: .gp,
                             format: .mtk, rates: rates, epoch: epoch)
    }

    /// GGA, GSA, GSV, RMC, VTG, each when its rate (every Nth epoch) says so.
    static func nmeaSentences(
        time: GNSSTime, position: (latitude: Double, longitude: Double)?, settings: SimulatedReceiver.Settings,
        satellites: [SimulatedSatellite], talker: NMEATalker, format: NMEAFormat, rates: PMTK.SentenceRates,
        epoch: Int, rtk: RTKSolution? = nil
    ) -> [[UInt8]] {
        func due(_ rate: Int) -> Bool { rate > 0 && epoch % rate == 0 }
        let simulation = settings.simulation
        let used = satellites.filter(\.used)
        let day = time.timeOfDay
        let knots = simulation.speed / metresPerSecondPerKnot
        var sentences: [[UInt8]] = []
        if due(rates.gga) {
            sentences.append(NMEAGGA(
                talker: talker, time: day, latitude: position?.latitude, longitude: position?.longitude,
                quality: position == nil ? 0 : (rtk?.ggaQuality ?? 1), satellitesUsed: used.count,
                hdop: position == nil ? 99.99 : 0.9, altitudeMSL: position == nil ? nil : simulation.altitude,
                geoidSeparation: position == nil ? nil : geoidSeparation, dgpsAge: rtk?.age,
                dgpsStation: rtk?.station
            ).sentence(format))
        }
        if due(rates.gsa) {
            let ids = NMEASatelliteIDs(used.prefix(12).map { $0.system == .galileo ? $0.svid + 300 : $0.svid })
            sentences.append(NMEAGSA(
                talker: talker, fixType: position == nil ? 1 : 3, satelliteIDs: ids,
                pdop: position == nil ? 99.99 : 1.4, hdop: position == nil ? 99.99 : 0.9,
                vdop: position == nil ? 99.99 : 1.1
            ).sentence(format))
        }
        if due(rates.gsv) {
            for system in [GNSSSystem.gps, .galileo] {
                let inView = satellites.filter { $0.system == system }
                guard !inView.isEmpty else { continue }
                let gsv = inView.map {
                    GSVSatellite(id: $0.svid, elevation: $0.elevation, azimuth: $0.azimuth, snr: $0.strength)
                }
                sentences += NMEAGSV.sentences(talker: system == .gps ? .gp : .ga, satellites: gsv, format: format)
            }
        }
        if due(rates.rmc) {
            sentences.append(NMEARMC(
                talker: talker, time: day, status: position == nil ? "V" : "A", latitude: position?.latitude,
                longitude: position?.longitude, speedKnots: position == nil ? nil : knots,
                course: position == nil ? nil : simulation.course, date: time.date,
                modeIndicator: position == nil ? "N" : (rtk?.modeIndicator ?? "A")
            ).sentence(format))
        }
        if due(rates.vtg) {
            sentences.append(NMEAVTG(
                talker: talker, courseTrue: position == nil ? nil : simulation.course, courseMagnetic: nil,
                speedKnots: position == nil ? nil : knots,
                speedKmh: position == nil ? nil : simulation.speed * 3.6, modeIndicator: position == nil ? "N" : "A"
            ).sentence(format))
        }
        return sentences
    }
}
