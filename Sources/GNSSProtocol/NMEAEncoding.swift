// Encoding NMEA sentences and MTK commands, checksum included.

/// How many decimals an encoder writes, per kind of field (receivers differ).
public struct NMEAFormat: Hashable, Sendable {
    public var timeDecimals: Int
    /// Decimals of the minutes of latitude and longitude.
    public var coordinateDecimals: Int
    public var altitudeDecimals: Int
    public var dopDecimals: Int
    public var speedDecimals: Int
    public var courseDecimals: Int
    public var errorDecimals: Int

    public init(
        timeDecimals: Int = 2, coordinateDecimals: Int = 5, altitudeDecimals: Int = 1, dopDecimals: Int = 2,
        speedDecimals: Int = 3, courseDecimals: Int = 2, errorDecimals: Int = 1
    ) {
        self.timeDecimals = timeDecimals
        self.coordinateDecimals = coordinateDecimals
        self.altitudeDecimals = altitudeDecimals
        self.dopDecimals = dopDecimals
        self.speedDecimals = speedDecimals
        self.courseDecimals = courseDecimals
        self.errorDecimals = errorDecimals
    }

    /// As u-blox receivers write: `hhmmss.ss`, `ddmm.mmmmm`, altitude to 0.1 m, DOPs to 0.01.
    public static let ublox = NMEAFormat()
    /// As MediaTek (MTK) receivers write: `hhmmss.sss`, `ddmm.mmmm`, speed and course to 0.01.
    public static let mtk = NMEAFormat(
        timeDecimals: 3, coordinateDecimals: 4, altitudeDecimals: 1, dopDecimals: 2, speedDecimals: 2,
        courseDecimals: 2)
}

extension NMEAGGA {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GGA")
        w.field(time, decimals: format.timeDecimals)
        w.coordinate(latitude, decimals: format.coordinateDecimals, latitude: true)
        w.coordinate(longitude, decimals: format.coordinateDecimals, latitude: false)
        w.field(quality)
        w.field(satellitesUsed, width: 2)
        w.field(hdop, decimals: format.dopDecimals)
        w.field(altitudeMSL, decimals: format.altitudeDecimals)
        w.field(altitudeMSL == nil ? nil : "M" as Unicode.Scalar)
        w.field(geoidSeparation, decimals: format.altitudeDecimals)
        w.field(geoidSeparation == nil ? nil : "M" as Unicode.Scalar)
        w.field(dgpsAge, decimals: format.errorDecimals)
        w.field(dgpsStation, width: 4)
        return w.finish()
    }
}

extension NMEARMC {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "RMC")
        w.field(time, decimals: format.timeDecimals)
        w.field(status)
        w.coordinate(latitude, decimals: format.coordinateDecimals, latitude: true)
        w.coordinate(longitude, decimals: format.coordinateDecimals, latitude: false)
        w.field(speedKnots, decimals: format.speedDecimals)
        w.field(course, decimals: format.courseDecimals)
        w.field(date)
        w.field(magneticVariation.map { abs($0) }, decimals: 1)
        w.field(magneticVariation.map { $0 < 0 ? "W" : "E" } as Unicode.Scalar?)
        if modeIndicator != nil || navigationStatus != nil { w.field(modeIndicator) }
        if navigationStatus != nil { w.field(navigationStatus) }
        return w.finish()
    }
}

extension NMEAGSA {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GSA")
        w.field(selectionMode)
        w.field(fixType)
        // 12 id fields as the standard has them. More ids go the way the few receivers that send
        // them do, with no system id, and in at least 14 fields: 13 ids and three DOPs would read
        // back as 12 ids, three DOPs and an NMEA 4.10 system id (found by the fuzzer).
        let extended = satelliteIDs.count > 12
        for index in 0..<(extended ? max(14, satelliteIDs.count) : 12) {
            w.field(index < satelliteIDs.count ? satelliteIDs[index] : nil, width: 2)
        }
        w.field(pdop, decimals: format.dopDecimals)
        w.field(hdop, decimals: format.dopDecimals)
        w.field(vdop, decimals: format.dopDecimals)
        if let systemID, !extended { w.field(systemID) }
        return w.finish()
    }
}

extension NMEAGSV {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GSV")
        w.field(sentenceCount)
        w.field(sentenceNumber)
        w.field(satellitesInView, width: 2)
        for satellite in satellites {
            w.field(satellite.id, width: 2)
            w.field(satellite.elevation, width: 2)
            w.field(satellite.azimuth, width: 3)
            w.field(satellite.snr, width: 2)
        }
        if let signalID {
            w.field(String(signalID, radix: 16, uppercase: true))
        }
        return w.finish()
    }

    /// The GSV sentences (four satellites each) describing `satellites`.
    public static func sentences(
        talker: NMEATalker, satellites: [GSVSatellite], signalID: Int? = nil, format: NMEAFormat = .ublox
    ) -> [[UInt8]] {
        let count = max(1, (satellites.count + 3) / 4)
        return (0..<count).map { index in
            let slice = satellites.dropFirst(index * 4).prefix(4)
            return NMEAGSV(
                talker: talker, sentenceCount: count, sentenceNumber: index + 1, satellitesInView: satellites.count,
                satellites: GSVSatellites(slice), signalID: signalID
            ).sentence(format)
        }
    }
}

extension NMEAVTG {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "VTG")
        w.field(courseTrue, decimals: format.courseDecimals)
        w.field("T" as Unicode.Scalar)
        w.field(courseMagnetic, decimals: format.courseDecimals)
        w.field("M" as Unicode.Scalar)
        w.field(speedKnots, decimals: format.speedDecimals)
        w.field("N" as Unicode.Scalar)
        w.field(speedKmh, decimals: format.speedDecimals)
        w.field("K" as Unicode.Scalar)
        if let modeIndicator { w.field(modeIndicator) }
        return w.finish()
    }
}

extension NMEAGLL {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GLL")
        w.coordinate(latitude, decimals: format.coordinateDecimals, latitude: true)
        w.coordinate(longitude, decimals: format.coordinateDecimals, latitude: false)
        w.field(time, decimals: format.timeDecimals)
        w.field(status)
        if let modeIndicator { w.field(modeIndicator) }
        return w.finish()
    }
}

extension NMEAGNS {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GNS")
        w.field(time, decimals: format.timeDecimals)
        w.coordinate(latitude, decimals: format.coordinateDecimals, latitude: true)
        w.coordinate(longitude, decimals: format.coordinateDecimals, latitude: false)
        w.field(modeIndicators)
        w.field(satellitesUsed, width: 2)
        w.field(hdop, decimals: format.dopDecimals)
        w.field(altitudeMSL, decimals: format.altitudeDecimals)
        w.field(geoidSeparation, decimals: format.altitudeDecimals)
        w.field(dgpsAge, decimals: format.errorDecimals)
        w.field(dgpsStation, width: 4)
        if let navigationStatus { w.field(navigationStatus) }
        return w.finish()
    }
}

extension NMEAGST {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "GST")
        w.field(time, decimals: format.timeDecimals)
        for value in [rangeRMS, semiMajor, semiMinor, orientation, latitudeError, longitudeError, altitudeError] {
            w.field(value, decimals: format.errorDecimals)
        }
        return w.finish()
    }
}

extension NMEAZDA {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "ZDA")
        w.field(time, decimals: format.timeDecimals)
        w.field(day, width: 2)
        w.field(month, width: 2)
        w.field(year, width: 4)
        w.field(localZoneHours, width: 2)
        w.field(localZoneMinutes, width: 2)
        return w.finish()
    }
}

extension NMEATXT {
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        var w = NMEASentenceWriter(talker: talker, formatter: "TXT")
        w.field(sentenceCount, width: 2)
        w.field(sentenceNumber, width: 2)
        w.field(textID, width: 2)
        // `$`, `*`, `!` and control characters cannot appear in a sentence.
        w.field(
            String(
                text.unicodeScalars.filter {
                    $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F && $0 != "$" && $0 != "*" && $0 != "!"
                }.map(Character.init)))
        return w.finish()
    }
}

extension PMTKMessage {
    public func sentence() -> [UInt8] {
        switch self {
        case .ack(let command, let flag): return PMTK.command(1, [pad3(command), String(flag)])
        case .system(let message): return PMTK.command(10, [pad3(message)])
        case .firmware(let release, let build, let model, let extra):
            return PMTK.command(705, [release, build, model] + extra)
        case .other(let number, let fields): return PMTK.command(number, fields)
        }
    }

    private func pad3(_ value: Int) -> String {
        var bytes: [UInt8] = []
        ASCII.appendPadded(value, width: 3, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension NMEASentence {
    /// Re-encodes the sentence; kept-whole sentences are returned as received.
    public func sentence(_ format: NMEAFormat = .ublox) -> [UInt8] {
        switch self {
        case .gga(let s): return s.sentence(format)
        case .rmc(let s): return s.sentence(format)
        case .gsa(let s): return s.sentence(format)
        case .gsv(let s): return s.sentence(format)
        case .vtg(let s): return s.sentence(format)
        case .gll(let s): return s.sentence(format)
        case .gns(let s): return s.sentence(format)
        case .gst(let s): return s.sentence(format)
        case .zda(let s): return s.sentence(format)
        case .txt(let s): return s.sentence(format)
        case .pmtk(let m): return m.sentence()
        case .proprietary(_, let raw), .unsupported(_, let raw): return Array(raw)
        }
    }
}

/// MTK (MediaTek) commands: `$PMTKnnn,fields*hh`.
public enum PMTK {
    /// `$PMTK<number>,<fields>*hh\r\n`.
    public static func command(_ number: Int, _ fields: [String] = []) -> [UInt8] {
        var bytes: [UInt8] = []
        ASCII.appendPadded(number, width: 3, to: &bytes)
        var w = NMEASentenceWriter(address: "PMTK" + String(decoding: bytes, as: UTF8.self))
        for field in fields { w.field(field) }
        return w.finish()
    }

    /// Any NMEA sentence from its address and fields, with checksum: `sentence("PUBX", ["00"])`.
    public static func sentence(address: String, _ fields: [String]) -> [UInt8] {
        var w = NMEASentenceWriter(address: address)
        for field in fields { w.field(field) }
        return w.finish()
    }

    /// `$PMTK161,0*28`: standby; any byte on the UART wakes the receiver.
    public static let standby = command(161, ["0"])
    /// `$PMTK225,0*2B`: normal power mode.
    public static let normalMode = command(225, ["0"])
    /// `$PMTK225,4*2F`: perpetual backup, left only by a FORCE_ON pulse.
    public static let perpetualBackup = command(225, ["4"])
    /// `$PMTK605*31`: query the firmware release (answered by PMTK705).
    public static let queryFirmware = command(605)
    /// `$PMTK101*32` hot start, `$PMTK102` warm, `$PMTK103` cold.
    public static let hotStart = command(101)

    /// `$PMTK220,<ms>`: position fix interval.
    public static func fixInterval(milliseconds: Int) -> [UInt8] { command(220, [String(milliseconds)]) }

    /// `$PMTK251,<baud>`: serial speed.
    public static func baudRate(_ baud: Int) -> [UInt8] { command(251, [String(baud)]) }

    /// Output rates (`$PMTK314`), in fixes per sentence; 0 turns a sentence off.
    public struct SentenceRates: Hashable, Sendable {
        public var gll = 0
        public var rmc = 1
        public var vtg = 1
        public var gga = 1
        public var gsa = 1
        public var gsv = 1
        public var zda = 0

        public init(gll: Int = 0, rmc: Int = 1, vtg: Int = 1, gga: Int = 1, gsa: Int = 1, gsv: Int = 1, zda: Int = 0) {
            self.gll = gll
            self.rmc = rmc
            self.vtg = vtg
            self.gga = gga
            self.gsa = gsa
            self.gsv = gsv
            self.zda = zda
        }
    }

    /// `$PMTK314,...`: sentence output rates (19 fields, ZDA in the 18th, as MTK3339 documents).
    public static func setOutput(_ rates: SentenceRates) -> [UInt8] {
        var fields = [rates.gll, rates.rmc, rates.vtg, rates.gga, rates.gsa, rates.gsv]
        fields += Array(repeating: 0, count: 11)
        fields += [rates.zda, 0]
        return command(314, fields.map { String($0) })
    }
}
