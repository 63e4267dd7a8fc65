// Decoding NMEA sentences from a frame, field by field, without a String per field.

extension NMEASentence {
    /// Decodes a whole sentence (`$` to LF; the framer has verified the checksum).
    public init(frame: ArraySlice<UInt8>) throws(DecodeError) {
        do {
            self = try frame.withUnsafeBytes { raw in try NMEASentence.decode(raw, frame) }
        } catch let error as DecodeError {
            throw error
        } catch {
            // withUnsafeBytes rethrows untyped; decode throws nothing else.
            throw .truncated
        }
    }

    static func decode(_ raw: UnsafeRawBufferPointer, _ frame: ArraySlice<UInt8>) throws(DecodeError) -> NMEASentence {
        var end = raw.count
        if end > 0 && raw[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        if end > 0 && raw[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        guard end >= 5, raw[end - 3] == UInt8(ascii: "*") else { throw .truncated }
        let body = UnsafeRawBufferPointer(rebasing: raw[1..<(end - 3)])
        var addressEnd = 0
        while addressEnd < body.count && body[addressEnd] != UInt8(ascii: ",") { addressEnd += 1 }
        guard let address = NMEAAddress(UnsafeRawBufferPointer(rebasing: body[0..<addressEnd])) else {
            throw .nmeaAddress
        }
        var fields = NMEAFieldReader(body: body, address: address, addressEnd: addressEnd)
        if address.isProprietary {
            if address.count == 7, address[1] == UInt8(ascii: "M"), address[2] == UInt8(ascii: "T"),
                address[3] == UInt8(ascii: "K"),
                let number = ASCII.parseInt(UnsafeRawBufferPointer(rebasing: body[4..<7]))
            {
                return .pmtk(try PMTKMessage(number: number, fields: &fields))
            }
            return .proprietary(address, sentence: frame)
        }
        guard raw[0] == UInt8(ascii: "$"), let talker = address.talker else {
            return .unsupported(address, sentence: frame)
        }
        switch address.formatter {
        case formatterGGA: return .gga(try NMEAGGA(talker: talker, fields: &fields))
        case formatterRMC: return .rmc(try NMEARMC(talker: talker, fields: &fields))
        case formatterGSA: return .gsa(try NMEAGSA(talker: talker, fields: &fields))
        case formatterGSV: return .gsv(try NMEAGSV(talker: talker, fields: &fields))
        case formatterVTG: return .vtg(try NMEAVTG(talker: talker, fields: &fields))
        case formatterGLL: return .gll(try NMEAGLL(talker: talker, fields: &fields))
        case formatterGNS: return .gns(try NMEAGNS(talker: talker, fields: &fields))
        case formatterGST: return .gst(try NMEAGST(talker: talker, fields: &fields))
        case formatterZDA: return .zda(try NMEAZDA(talker: talker, fields: &fields))
        case formatterTXT: return .txt(try NMEATXT(talker: talker, fields: &fields))
        default: return .unsupported(address, sentence: frame)
        }
    }
}

// Sentence formatters packed as NMEAAddress.formatter packs them ("GGA" is G | G << 8 | A << 16), as
// literals so reading them costs no lazy-initialisation check.
let formatterGGA: UInt32 = 0x41_4747
let formatterRMC: UInt32 = 0x43_4D52
let formatterGSA: UInt32 = 0x41_5347
let formatterGSV: UInt32 = 0x56_5347
let formatterVTG: UInt32 = 0x47_5456
let formatterGLL: UInt32 = 0x4C_4C47
let formatterGNS: UInt32 = 0x53_4E47
let formatterGST: UInt32 = 0x54_5347
let formatterZDA: UInt32 = 0x41_445A
let formatterTXT: UInt32 = 0x54_5854

extension NMEAFieldReader {
    mutating func require(_ minimum: Int) throws(DecodeError) {
        guard count >= minimum else { throw .nmeaFieldCount(address: address, count: count) }
    }

    mutating func latitude() throws(DecodeError) -> Double? {
        try coordinate(positive: UInt8(ascii: "N"), negative: UInt8(ascii: "S"), maxDegrees: 90)
    }

    mutating func longitude() throws(DecodeError) -> Double? {
        try coordinate(positive: UInt8(ascii: "E"), negative: UInt8(ascii: "W"), maxDegrees: 180)
    }
}

extension NMEAGGA {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(13)
        let time = try f.time()
        let latitude = try f.latitude()
        let longitude = try f.longitude()
        let quality = try f.int()
        let used = try f.int()
        let hdop = try f.double()
        let altitude = try f.double()
        f.skip()  // unit M
        let separation = try f.double()
        f.skip()  // unit M
        let age = try f.double()
        let station = try f.int()
        self.init(
            talker: talker, time: time, latitude: latitude, longitude: longitude, quality: quality,
            satellitesUsed: used, hdop: hdop, altitudeMSL: altitude, geoidSeparation: separation, dgpsAge: age,
            dgpsStation: station)
    }
}

extension NMEARMC {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(11)
        let time = try f.time()
        let status = try f.character()
        let latitude = try f.latitude()
        let longitude = try f.longitude()
        let speed = try f.double()
        let course = try f.double()
        let date = try f.date()
        var variation = try f.double()
        let direction = try f.character()
        if direction == "W", let value = variation { variation = -value }
        let mode = try f.character()
        let navigation = try f.character()
        self.init(
            talker: talker, time: time, status: status, latitude: latitude, longitude: longitude, speedKnots: speed,
            course: course, date: date, magneticVariation: variation, modeIndicator: mode,
            navigationStatus: navigation)
    }
}

extension NMEAGSA {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(17)
        let selection = try f.character()
        let fixType = try f.int()
        // 12 ids in the standard (then 3 DOPs and, in NMEA 4.10, the system id); a few receivers send
        // more ids and no system id.
        let idFields = f.count > 18 ? f.count - 5 : 12
        var ids = NMEASatelliteIDs()
        for _ in 0..<idFields {
            if let id = try f.int(), id > 0 { ids.append(id) }
        }
        let pdop = try f.double()
        let hdop = try f.double()
        let vdop = try f.double()
        let system = f.remaining > 0 ? try f.int() : nil
        self.init(
            talker: talker, selectionMode: selection, fixType: fixType, satelliteIDs: ids, pdop: pdop, hdop: hdop,
            vdop: vdop, systemID: system)
    }
}

extension NMEAGSV {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(3)
        guard let count = try f.int(), let number = try f.int() else { throw f.error }
        let inView = try f.int()
        var satellites = GSVSatellites()
        // Four fields per satellite; one left over is the NMEA 4.10 signal id.
        let blocks = (f.count - 3) / 4
        for _ in 0..<min(blocks, 4) {
            let id = try f.int()
            let elevation = try f.int()
            let azimuth = try f.int()
            let snr = try f.int()
            if let id { satellites.append(GSVSatellite(id: id, elevation: elevation, azimuth: azimuth, snr: snr)) }
        }
        if blocks > 4 { f.skip(4 * (blocks - 4)) }
        let signal = (f.count - 3) % 4 == 1 ? try f.hexInt() : nil
        self.init(
            talker: talker, sentenceCount: count, sentenceNumber: number, satellitesInView: inView,
            satellites: satellites, signalID: signal)
    }
}

extension NMEAFieldReader {
    /// The NMEA 4.10 signal id, one hexadecimal digit (u-blox sends `B` for some signals); two are
    /// allowed for later signals, more are an error (the fuzzer sent `1CCCCCCCC`).
    mutating func hexInt() throws(DecodeError) -> Int? {
        let field = next()
        if field.isEmpty { return nil }
        guard field.count <= 2, let value = ASCII.parseHex(field) else { throw error }
        return value
    }
}

extension NMEAVTG {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(4)
        // Before NMEA 2.0: course true, course magnetic, knots, km/h without unit letters.
        if f.count < 8 {
            let courseTrue = try f.double()
            let courseMagnetic = try f.double()
            let knots = try f.double()
            let kmh = try f.double()
            self.init(
                talker: talker, courseTrue: courseTrue, courseMagnetic: courseMagnetic, speedKnots: knots,
                speedKmh: kmh)
            return
        }
        let courseTrue = try f.double()
        f.skip()
        let courseMagnetic = try f.double()
        f.skip()
        let knots = try f.double()
        f.skip()
        let kmh = try f.double()
        f.skip()
        let mode = try f.character()
        self.init(
            talker: talker, courseTrue: courseTrue, courseMagnetic: courseMagnetic, speedKnots: knots, speedKmh: kmh,
            modeIndicator: mode)
    }
}

extension NMEAGLL {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(4)
        let latitude = try f.latitude()
        let longitude = try f.longitude()
        let time = try f.time()
        let status = try f.character()
        let mode = try f.character()
        self.init(
            talker: talker, latitude: latitude, longitude: longitude, time: time, status: status, modeIndicator: mode)
    }
}

extension NMEAGNS {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(12)
        let time = try f.time()
        let latitude = try f.latitude()
        let longitude = try f.longitude()
        let modes = f.text()
        let used = try f.int()
        let hdop = try f.double()
        let altitude = try f.double()
        let separation = try f.double()
        let age = try f.double()
        let station = try f.int()
        let navigation = try f.character()
        self.init(
            talker: talker, time: time, latitude: latitude, longitude: longitude, modeIndicators: modes,
            satellitesUsed: used, hdop: hdop, altitudeMSL: altitude, geoidSeparation: separation, dgpsAge: age,
            dgpsStation: station, navigationStatus: navigation)
    }
}

extension NMEAGST {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(8)
        self.init(
            talker: talker, time: try f.time(), rangeRMS: try f.double(), semiMajor: try f.double(),
            semiMinor: try f.double(), orientation: try f.double(), latitudeError: try f.double(),
            longitudeError: try f.double(), altitudeError: try f.double())
    }
}

extension NMEAZDA {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(4)
        self.init(
            talker: talker, time: try f.time(), day: try f.int(), month: try f.int(), year: try f.int(),
            localZoneHours: try f.int(), localZoneMinutes: try f.int())
    }
}

extension NMEATXT {
    init(talker: NMEATalker, fields f: inout NMEAFieldReader) throws(DecodeError) {
        try f.require(4)
        let count = try f.int()
        let number = try f.int()
        let id = try f.int()
        // The text may itself contain commas: take the rest of the body.
        var parts: [String] = []
        while f.remaining > 0 { parts.append(f.text() ?? "") }
        self.init(
            talker: talker, sentenceCount: count, sentenceNumber: number, textID: id, text: parts.joined(separator: ",")
        )
    }
}

extension PMTKMessage {
    init(number: Int, fields f: inout NMEAFieldReader) throws(DecodeError) {
        switch number {
        case 1:
            try f.require(2)
            guard let command = try f.int(), let flag = try f.int() else { throw f.error }
            self = .ack(command: command, flag: flag)
        case 10:
            try f.require(1)
            guard let message = try f.int() else { throw f.error }
            self = .system(message: message)
        case 705:
            try f.require(3)
            let release = f.text() ?? ""
            let build = f.text() ?? ""
            let model = f.text() ?? ""
            var extra: [String] = []
            while f.remaining > 0 { extra.append(f.text() ?? "") }
            self = .firmware(release: release, buildID: build, model: model, extra: extra)
        default:
            var fields: [String] = []
            while f.remaining > 0 { fields.append(f.text() ?? "") }
            self = .other(number: number, fields: fields)
        }
    }
}
