// NMEA decoding: every sentence type, every talker, NMEA 4.10 fields, proprietary sentences.

import GNSSProtocol
import Testing

func nmea(_ text: String) throws -> NMEASentence {
    var framer = Framer()
    framer.append(contentsOf: Array(text.utf8) + (text.hasSuffix("\n") ? [] : [13, 10]))
    let frame = framer.next()
    let found = try #require(frame, "framer rejected \(text)")
    return try NMEASentence(frame: found.bytes)
}

@Suite("NMEA")
struct NMEATests {
    @Test("GGA with units and signs")
    func gga() throws {
        guard case .gga(let s) = try nmea("$GNGGA,000941.00,4404.13387,N,12118.85628,W,1,12,1.01,1144.8,M,-21.4,M,,*4D")
        else { Issue.record("not GGA"); return }
        #expect(s.talker == .gn)
        #expect(s.time == TimeOfDay(hour: 0, minute: 9, second: 41, nanosecond: 0))
        #expect(abs(s.latitude! - (44 + 4.13387 / 60)) < 1e-12)
        #expect(abs(s.longitude! + (121 + 18.85628 / 60)) < 1e-12)
        #expect(s.quality == 1 && s.satellitesUsed == 12 && s.hdop == 1.01)
        #expect(s.altitudeMSL == 1144.8 && s.geoidSeparation == -21.4)
        #expect(s.dgpsAge == nil && s.dgpsStation == nil)
    }

    @Test("RMC with NMEA 4.10 navigational status, speed in knots and m/s")
    func rmc() throws {
        guard case .rmc(let s) = try nmea("$GNRMC,003956.00,A,4552.65403,S,17030.00668,E,0.025,,120419,,,A,V*07")
        else { Issue.record("not RMC"); return }
        #expect(s.status == "A" && s.isValid)
        #expect(s.latitude! < 0 && s.longitude! > 0)
        #expect(s.speedKnots == 0.025)
        #expect(abs(s.speed! - 0.025 * 1852 / 3600) < 1e-15)
        #expect(s.course == nil)
        #expect(s.date == GNSSDate(year: 2019, month: 4, day: 12))
        #expect(s.modeIndicator == "A" && s.navigationStatus == "V")
    }

    @Test("GSA with NMEA 4.10 system id, and the old form")
    func gsa() throws {
        guard case .gsa(let s) = try nmea("$GNGSA,A,3,82,66,81,,,,,,,,,,1.05,0.64,0.83,2*0C") else {
            Issue.record("not GSA"); return
        }
        #expect(Array(s.satelliteIDs) == [82, 66, 81])
        #expect(s.systemID == 2 && s.fixType == 3 && s.pdop == 1.05 && s.hdop == 0.64 && s.vdop == 0.83)
        guard case .gsa(let old) = try nmea("$GPGSA,A,3,20,16,09,03,07,10,23,19,27,30,,,1.64,0.98,1.31*05") else {
            Issue.record("not GSA"); return
        }
        #expect(old.systemID == nil && old.satelliteIDs.count == 10)
    }

    @Test(
        "GSV with signal id, empty fields, every talker",
        arguments: ["GP", "GL", "GA", "GB", "BD", "GQ", "QZ", "GI", "GN"])
    func gsv(talker: String) throws {
        let body = "\(talker)GSV,3,1,10,65,53,144,,66,58,305,32,67,06,313,,72,09,137,,1"
        let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        let text = "$" + body + "*" + String(sum, radix: 16, uppercase: true).leftPadded(2)
        guard case .gsv(let s) = try nmea(text) else { Issue.record("not GSV"); return }
        #expect(s.talker.description == talker)
        #expect(s.sentenceCount == 3 && s.sentenceNumber == 1 && s.satellitesInView == 10 && s.signalID == 1)
        #expect(
            Array(s.satellites) == [
                GSVSatellite(id: 65, elevation: 53, azimuth: 144, snr: nil),
                GSVSatellite(id: 66, elevation: 58, azimuth: 305, snr: 32),
                GSVSatellite(id: 67, elevation: 6, azimuth: 313, snr: nil),
                GSVSatellite(id: 72, elevation: 9, azimuth: 137, snr: nil),
            ])
    }

    @Test("VTG, GLL, GNS, GST, ZDA, TXT")
    func others() throws {
        guard case .vtg(let vtg) = try nmea("$GNVTG,286.35,T,,M,0.00,N,0.00,K,A*29") else {
            Issue.record("VTG"); return
        }
        #expect(
            vtg.courseTrue == 286.35 && vtg.courseMagnetic == nil && vtg.speedKnots == 0 && vtg.modeIndicator == "A")
        guard case .gll(let gll) = try nmea("$GNGLL,4404.13387,N,12118.85628,W,000941.00,A,A*69") else {
            Issue.record("GLL"); return
        }
        #expect(gll.status == "A" && gll.time?.second == 41)
        guard case .gns(let gns) = try nmea("$GNGNS,053232.438,3114.8789,N,12135.2442,E,ANNA,07,1.2,153.8,8.3,,0000*5F")
        else { Issue.record("GNS"); return }
        #expect(
            gns.modeIndicators == "ANNA" && gns.satellitesUsed == 7 && gns.dgpsStation == 0
                && gns.time?.nanosecond == 438_000_000)
        let gstText = String(
            decoding: NMEAGST(
                time: TimeOfDay(hour: 1, minute: 2, second: 3), rangeRMS: 1.5,
                semiMajor: 2.5, semiMinor: 1.0, orientation: 45, latitudeError: 1.1, longitudeError: 1.2,
                altitudeError: 2.2
            ).sentence(), as: UTF8.self)
        guard case .gst(let gst) = try nmea(gstText) else { Issue.record("GST"); return }
        #expect(gst.altitudeError == 2.2 && gst.orientation == 45)
        guard case .zda(let zda) = try nmea("$GNZDA,000941.00,10,01,2017,00,00*70") else { Issue.record("ZDA"); return }
        #expect(zda.date == GNSSDate(year: 2017, month: 1, day: 10))
        guard case .txt(let txt) = try nmea("$GPTXT,01,01,01,ANTENNA OK*35") else { Issue.record("TXT"); return }
        #expect(txt.text == "ANTENNA OK" && txt.textID == 1)
    }

    @Test("other proprietary sentences are kept whole; unknown standard ones too")
    func kept() throws {
        let text = "$PSRFEPE,053229.438,V,,,,,*23"
        guard case .proprietary(let address, let raw) = try nmea(text) else { Issue.record("not proprietary"); return }
        #expect(address.description == "PSRFEPE")
        #expect(String(decoding: raw, as: UTF8.self) == text + "\r\n")
        guard case .unsupported(let gbs, _) = try nmea("$GPGBS,204226.00,12.296,16.439,40.480,,,,*7E") else {
            Issue.record("not kept"); return
        }
        #expect(gbs.description == "GPGBS")
    }

    @Test("a malformed field is a typed error, not a crash")
    func malformed() throws {
        let body = "GPGGA,12x456,4404.1,N,12118.8,W,1,08,1.0,10.0,M,0.0,M,,"
        let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        let text = "$" + body + "*" + String(sum, radix: 16, uppercase: true).leftPadded(2)
        #expect(throws: DecodeError.self) { try nmea(text) }
    }

    @Test("inputs the fuzzer found: a far-future date, a 105-digit number, a long GSV signal id, 13 GSA ids")
    func fuzzFindings() throws {
        // A ZDA in the year 9999 is no date a receiver reports (GNSSTime covers 1678-2262).
        guard case .zda(let zda) = try nmea(sentenceWithChecksum("GPZDA,120000.00,01,01,9999,00,00")) else {
            Issue.record("not ZDA")
            return
        }
        #expect(zda.date == nil)
        #expect(GNSSTime(date: GNSSDate(year: 9999, month: 1, day: 1), time: TimeOfDay(hour: 0, minute: 0, second: 0))
            .nanosecondsSinceEpoch == .max)
        var assembler = EpochAssembler()
        _ = assembler.consume(.nmea(.zda(zda)))
        _ = assembler.finish()
        // A number no NMEA field holds is a malformed field (it could not be written back in fixed notation).
        let huge = String(repeating: "3", count: 105)
        #expect(throws: DecodeError.self) {
            try nmea(sentenceWithChecksum("GPGSA,A,3,17,28,06,01,,,,,,,,,1.8,\(huge).1,1.5"))
        }
        // A GSV signal id is one hexadecimal digit (two allowed); nine are a malformed field, not a trap
        // in the assembler's set key.
        #expect(throws: DecodeError.self) {
            try nmea(sentenceWithChecksum("GPGSV,4,2,16,16,25,306,27,18,68,358,38,20,63,235,37,21,35,292,,1CCCCCCCC"))
        }
        guard case .gsv(let gsv) = try nmea(sentenceWithChecksum("GPGSV,1,1,01,16,25,306,27,1B")) else {
            Issue.record("not GSV")
            return
        }
        #expect(gsv.signalID == 0x1B)
        var gsvAssembler = EpochAssembler()
        var wide = gsv
        wide.signalID = .max  // the public initialiser allows it; the assembler must not trap either
        _ = gsvAssembler.consume(.nmea(.gsv(wide)))
        _ = gsvAssembler.finish()
        // 13 satellite ids and no system id: written back, they must not read as 12 ids and a system id.
        guard case .gsa(let gsa) = try nmea(sentenceWithChecksum("GPGSA,A,3,20,16,09,03,07,10,23,10,23,19,27,30,05,,1.33,0.83,1.03"))
        else {
            Issue.record("not GSA")
            return
        }
        #expect(gsa.satelliteIDs.count == 13 && gsa.systemID == nil && gsa.pdop == 1.33 && gsa.vdop == 1.03)
        #expect(try nmea(String(decoding: gsa.sentence().dropLast(2), as: UTF8.self)) == .gsa(gsa))
        // With a system id beside more than 12 ids, the id is left out rather than misread.
        var both = gsa
        both.systemID = 1
        #expect(try nmea(String(decoding: both.sentence().dropLast(2), as: UTF8.self)) == .gsa(gsa))
    }

    @Test("encoders round-trip through the decoder")
    func roundTrip() throws {
        let time = TimeOfDay(hour: 23, minute: 59, second: 59, nanosecond: 990_000_000)
        let sentences: [NMEASentence] = [
            .gga(
                NMEAGGA(
                    talker: .gp, time: time, latitude: -33.5, longitude: 151.25, quality: 4, satellitesUsed: 19,
                    hdop: 0.7, altitudeMSL: 280.8, geoidSeparation: -31.4, dgpsAge: 6.0, dgpsStation: 2)),
            .rmc(
                NMEARMC(
                    talker: .gl, time: time, status: "A", latitude: 0.5, longitude: -0.25, speedKnots: 12.5,
                    course: 359.99, date: GNSSDate(year: 2031, month: 12, day: 31), magneticVariation: -11.5,
                    modeIndicator: "D", navigationStatus: "S")),
            .gsa(
                NMEAGSA(
                    talker: .ga, fixType: 2, satelliteIDs: [1, 2, 3], pdop: 9.99, hdop: 1.0, vdop: 0.5, systemID: 3)),
            .vtg(
                NMEAVTG(
                    talker: .gb, courseTrue: 10.5, courseMagnetic: 12.5, speedKnots: 1.5, speedKmh: 2.778,
                    modeIndicator: "A")),
            .gll(NMEAGLL(talker: .gq, latitude: 89.5, longitude: 179.5, time: time, status: "V", modeIndicator: "N")),
            .zda(
                NMEAZDA(
                    talker: .gi, time: time, day: 29, month: 2, year: 2024, localZoneHours: 0, localZoneMinutes: 0)),
            .txt(NMEATXT(talker: .gn, textID: 2, text: "HW UBX-M8030 00080000")),
            .pmtk(.ack(command: 314, flag: 3)),
        ]
        for sentence in sentences {
            let decoded = try nmea(String(decoding: sentence.sentence(), as: UTF8.self))
            #expect(decoded == sentence)
        }
    }
}

func sentenceWithChecksum(_ body: String) -> String {
    let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
    return "$" + body + "*" + String(sum, radix: 16, uppercase: true).leftPadded(2)
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
