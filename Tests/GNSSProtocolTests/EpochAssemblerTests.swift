// Epoch grouping: NMEA by time tag (with the learned end of cycle), UBX by iTOW, mixed streams.

import GNSSProtocol
import GPSDProtocol
import Testing

func messages(_ bytes: [UInt8]) -> [Message] {
    var framer = Framer()
    framer.append(contentsOf: bytes)
    framer.finish()
    var out: [Message] = []
    while let result = framer.nextMessage() {
        if case .success(let message) = result { out.append(message) }
    }
    return out
}

func assemble(_ messages: [Message], into assembler: inout EpochAssembler) -> [Epoch] {
    var epochs: [Epoch] = []
    for message in messages { epochs += assembler.consume(message) }
    return epochs
}

/// One u-blox-like NMEA cycle: RMC VTG GGA GSA GSV GLL ZDA.
func nmeaCycle(second: Int, latitude: Double = 44.0689, satellites: Int = 8) -> [UInt8] {
    let time = TimeOfDay(hour: 0, minute: 9, second: second)
    let date = GNSSDate(year: 2017, month: 1, day: 10)
    var bytes = NMEARMC(
        talker: .gn, time: time, status: "A", latitude: latitude, longitude: -121.3, speedKnots: 1.0,
        course: 90, date: date, modeIndicator: "A"
    ).sentence()
    bytes += NMEAVTG(talker: .gn, courseTrue: 90, speedKnots: 1.0, speedKmh: 1.852, modeIndicator: "A").sentence()
    bytes += NMEAGGA(
        talker: .gn, time: time, latitude: latitude, longitude: -121.3, quality: 1,
        satellitesUsed: satellites, hdop: 1.01, altitudeMSL: 1144.8, geoidSeparation: -21.4
    ).sentence()
    bytes += NMEAGSA(
        talker: .gn, fixType: 3, satelliteIDs: [3, 7, 9, 16, 22, 23, 26, 27], pdop: 1.71, hdop: 1.01, vdop: 1.38
    ).sentence()
    let sats = [
        (3, 21, 174, 29), (7, 46, 259, 26), (9, 67, 312, 39), (16, 47, 64, 35), (22, 8, 167, 29),
        (23, 68, 103, 28), (26, 23, 45, 27), (27, 12, 109, 21), (30, 12, 249, 17),
    ]
    .map { GSVSatellite(id: $0.0, elevation: $0.1, azimuth: $0.2, snr: $0.3) }
    for sentence in NMEAGSV.sentences(talker: .gp, satellites: sats) { bytes += sentence }
    bytes += NMEAGLL(talker: .gn, latitude: latitude, longitude: -121.3, time: time, status: "A", modeIndicator: "A")
        .sentence()
    bytes += NMEAZDA(talker: .gn, time: time, day: 10, month: 1, year: 2017, localZoneHours: 0, localZoneMinutes: 0)
        .sentence()
    return bytes
}

@Suite("EpochAssembler")
struct EpochAssemblerTests {
    @Test("an NMEA cycle becomes one fix; after the first cycle the learned end (ZDA) closes it at once")
    func nmeaCycles() throws {
        var assembler = EpochAssembler()
        var epochs: [Epoch] = []
        for second in 41...44 {
            let new = assemble(messages(nmeaCycle(second: second)), into: &assembler)
            // From the second cycle on, the epoch closes on its own ZDA, not on the next cycle's RMC.
            if second >= 42 {
                #expect(new.count == (second == 42 ? 2 : 1))
                #expect(new.last?.fix?.time?.timeOfDay.second == second)
            }
            epochs += new
        }
        #expect(epochs.compactMap { $0.fix?.time?.timeOfDay.second } == [41, 42, 43, 44])
        let fix = try #require(epochs.last?.fix)
        #expect(fix.mode == .threeD && fix.status == .gps)
        #expect(
            fix.time
                == GNSSTime(
                    date: GNSSDate(year: 2017, month: 1, day: 10), time: TimeOfDay(hour: 0, minute: 9, second: 44)))
        #expect(abs(fix.altitudeHAE! - 1123.4) < 1e-9 && fix.altitudeMSL == 1144.8)
        #expect(abs(fix.speed! - 0.514444) < 1e-5 && fix.track == 90)
        #expect(fix.ept == 0.005)
        // gpsd's error model: eph = hdop x 19 m, epv = vdop x 23 m.
        #expect(abs(fix.eph! - 1.01 * 19) < 1e-9 && abs(fix.epv! - 1.38 * 23) < 1e-9)
        let sky = try #require(epochs.last?.sky)
        #expect(sky.satellitesVisible == 9 && sky.satellitesUsed == 8)
        #expect(sky.satellites.first { $0.prn == 30 }?.used == false)
        #expect(sky.dops.position == 1.71 && sky.dops.geometric != nil)
    }

    @Test("DOPs are complete with all seven known; filling missing ones leaves the known ones as they are")
    func dopCompleteness() {
        var dops = DilutionOfPrecision(x: 1, y: 2, vertical: 3, time: 4, horizontal: 5, geometric: 6)
        #expect(!dops.isComplete && !dops.isEmpty)
        dops.position = 7
        #expect(dops.isComplete)
        dops.fillMissing(from: DilutionOfPrecision(x: 9, y: 9, vertical: 9, time: 9, horizontal: 9, geometric: 9,
                                                   position: 9))
        #expect(dops == DilutionOfPrecision(x: 1, y: 2, vertical: 3, time: 4, horizontal: 5, geometric: 6, position: 7))
    }

    @Test("a wrong learned end reopens the epoch instead of splitting it")
    func reopen() throws {
        var assembler = EpochAssembler()
        // Cycle 1 ends with GLL (no ZDA); cycle 2 adds a ZDA after GLL.
        let time1 = TimeOfDay(hour: 1, minute: 0, second: 0)
        let time2 = TimeOfDay(hour: 1, minute: 0, second: 1)
        func gga(_ t: TimeOfDay) -> [UInt8] {
            NMEAGGA(
                time: t, latitude: 1, longitude: 2, quality: 1, satellitesUsed: 6, hdop: 1, altitudeMSL: 10,
                geoidSeparation: 1
            ).sentence()
        }
        func gll(_ t: TimeOfDay) -> [UInt8] { NMEAGLL(latitude: 1, longitude: 2, time: t, status: "A").sentence() }
        let zda = NMEAZDA(time: time2, day: 2, month: 3, year: 2020).sentence()
        var epochs = assemble(messages(gga(time1) + gll(time1) + gga(time2) + gll(time2)), into: &assembler)
        #expect(epochs.count == 2)  // cycle 1 at GGA(time2), cycle 2 early at its GLL
        #expect(epochs.last?.fix?.time == nil)  // no date yet
        epochs = assemble(messages(zda), into: &assembler)
        // ZDA carries time2 again: the epoch reopens and closes again with the date.
        epochs += [assembler.finish()].compactMap { $0 }
        #expect(epochs.last?.fix?.time == GNSSTime(date: GNSSDate(year: 2020, month: 3, day: 2), time: time2))
    }

    @Test("UBX epochs group by iTOW and end at NAV-EOE")
    func ubx() throws {
        var assembler = EpochAssembler()
        let time = GNSSTime(
            date: GNSSDate(year: 2024, month: 1, day: 1), time: TimeOfDay(hour: 0, minute: 0, second: 1))
        let pvt = UBXNavPVT(
            iTOW: 1000, time: time, fixType: 3, numSV: 12, latitude: 10, longitude: 20, altitudeHAE: 5,
            altitudeMSL: 2, groundSpeed: 0.5, headingOfMotion: 180, velocityDown: -0.25)
        let sat = UBXNavSAT(
            iTOW: 1000, satellites: [.init(gnssId: 2, svId: 7, cno: 35, elev: 40, azim: 100, flags: 0x08)])
        let dop = UBXNavDOP(iTOW: 1000, gDOP: 200, pDOP: 150, tDOP: 100, vDOP: 120, hDOP: 90, nDOP: 60, eDOP: 70)
        let eoe = UBX.frame(.navEOE, payload: [0xE8, 0x03, 0, 0])
        let epochs = assemble(messages(pvt.frame + sat.frame + dop.frame + eoe), into: &assembler)
        #expect(epochs.count == 1)
        let fix = try #require(epochs.first?.fix)
        #expect(fix.time == time && fix.mode == .threeD && fix.latitude == 10 && fix.altitudeHAE == 5)
        #expect(fix.climb == 0.25 && fix.eph == 1 && fix.eps == 0.1 && abs(fix.ept! - 20e-9) < 1e-15)
        #expect(abs(fix.epx! - 0.7 * 15) < 1e-9)  // xdop (east DOP) x 15 m
        let sky = try #require(epochs.first?.sky)
        #expect(
            sky.satellites
                == [
                    SatelliteInView(
                        system: .galileo, svid: 7, prn: 307, elevation: 40, azimuth: 100,
                        signalStrength: 35, used: true)
                ].map {
                    var s = $0; s.pseudorangeResidual = 0; s.quality = 0; s.health = 0; return s
                })
        #expect(abs(sky.dops.x! - 0.7) < 1e-12 && abs(sky.dops.y! - 0.6) < 1e-12)
    }

    @Test("u-blox satellite numbers become gpsd's PRNs (SBAS 120 is 33); numbers u-blox does not give are none")
    func ubloxPRNs() {
        let cases: [(GNSSSystem, Int, Int?)] = [
            (.gps, 1, 1), (.gps, 32, 32), (.gps, 33, nil), (.gps, 0, nil),
            (.sbas, 120, 33), (.sbas, 136, 49), (.sbas, 151, 64), (.sbas, 152, 152), (.sbas, 158, 158),
            (.sbas, 119, nil), (.sbas, 159, nil),
            (.galileo, 1, 301), (.galileo, 36, 336), (.galileo, 211, 301), (.galileo, 246, 336), (.galileo, 37, nil),
            (.beidou, 1, 401), (.beidou, 60, 460), (.beidou, 63, 463), (.beidou, 159, 401), (.beidou, 163, 405),
            (.beidou, 64, nil),
            (.imes, 1, 173), (.imes, 182, 182), (.imes, 11, nil),
            (.qzss, 1, 193), (.qzss, 10, 202), (.qzss, 197, 197), (.qzss, 11, nil),
            (.glonass, 1, 65), (.glonass, 32, 96), (.glonass, 65, 65), (.glonass, 96, 96), (.glonass, 255, nil),
            (.navic, 1, 501), (.navic, 15, nil),
        ]
        for (system, svid, prn) in cases {
            #expect(SatelliteNumbering.prn(system: system, svid: svid) == prn, "\(system) \(svid)")
        }
    }

    /// u-blox's single numbers (NAV-SVINFO) at every edge of gpsd's `ubx_to_prn` ranges: (number, system,
    /// svid, gpsd PRN), nil where gpsd returns 0.
    static let singleNumbers: [(Int, GNSSSystem?, Int, Int)] = [
        (0, nil, 0, 0), (1, .gps, 1, 1), (32, .gps, 32, 32),
        (33, .beidou, 6, 406), (64, .beidou, 37, 437),
        (65, .glonass, 1, 65), (96, .glonass, 32, 96),
        (97, nil, 0, 0), (119, nil, 0, 0),
        (120, .sbas, 120, 33), (133, .sbas, 133, 46), (151, .sbas, 151, 64), (152, .sbas, 152, 152),
        (158, .sbas, 158, 158),
        (159, .beidou, 1, 401), (163, .beidou, 5, 405),
        (164, nil, 0, 0), (172, nil, 0, 0),
        (173, .imes, 1, 173), (182, .imes, 10, 182),
        (183, nil, 0, 0), (192, nil, 0, 0),
        (193, .qzss, 1, 193), (194, .qzss, 2, 194), (199, .qzss, 7, 199),
        (200, nil, 0, 0), (202, nil, 0, 0), (210, nil, 0, 0),
        (211, .galileo, 1, 301), (246, .galileo, 36, 336),
        (247, nil, 0, 0), (254, nil, 0, 0), (255, nil, 0, 0), (-1, nil, 0, 0), (300, nil, 0, 0),
    ]

    @Test("u-blox single satellite numbers (NAV-SVINFO) become system, svid and gpsd PRN", arguments: singleNumbers)
    func ubloxSingleNumbers(number: Int, system: GNSSSystem?, svid: Int, prn: Int) {
        let mapped = SatelliteNumbering.fromUBX(number)
        #expect(mapped?.system == system, "\(number)")
        if let mapped {
            #expect(mapped.svid == svid && mapped.prn == prn, "\(number): \(mapped)")
            // The same satellite named the NAV-SAT way gets the same PRN.
            #expect(SatelliteNumbering.prn(system: mapped.system, svid: mapped.svid) == prn)
        }
    }

    @Test("NAV-SAT: SBAS by gpsd's PRN, a GLONASS satellite with no slot left out, C/N0 0 reported as 0")
    func navSATNumbering() throws {
        var assembler = EpochAssembler()
        let sat = UBXNavSAT(iTOW: 2000, satellites: [
            .init(gnssId: 1, svId: 123, cno: 0, elev: 32, azim: 161, flags: 0),
            .init(gnssId: 6, svId: 255, cno: 20, elev: 10, azim: 10, flags: 0),
            .init(gnssId: 0, svId: 5, cno: 41, elev: 19, azim: 85, flags: 0x08),
        ])
        let eoe = UBX.frame(.navEOE, payload: [0xD0, 0x07, 0, 0])
        let sky = try #require(assemble(messages(sat.frame + eoe), into: &assembler).first?.sky)
        let byPRN = Dictionary(uniqueKeysWithValues: sky.satellites.map { ($0.prn, $0) })
        #expect(byPRN.keys.sorted() == [5, 36])
        #expect(byPRN[36]?.svid == 123 && byPRN[36]?.system == .sbas && byPRN[36]?.signalStrength == 0)
        #expect(byPRN[5]?.signalStrength == 41 && byPRN[5]?.used == true)
    }

    @Test("NAV-SVINFO: the satellites of a u-blox 7 epoch, as gpsd's ubx_msg_nav_svinfo gives them")
    func navSVINFO() throws {
        var assembler = EpochAssembler()
        let svinfo = UBXNavSVINFO(
            iTOW: 3000, globalFlags: 3,
            channels: [
                .init(chn: 2, svid: 8, flags: 0x0D, quality: 4, cno: 16, elev: 36, azim: 57, prRes: -1021),
                .init(chn: 10, svid: 133, flags: 0x14, quality: 1, cno: 0, elev: 35, azim: 197),
                .init(chn: 18, svid: 194, flags: 0x10, quality: 1, cno: 0, elev: -91, azim: 0),
                .init(chn: 3, svid: 70, flags: 0x05, quality: 0x27, cno: 30, elev: 90, azim: 359, prRes: 250),
                .init(chn: 4, svid: 71, flags: 0x04, quality: 4, cno: 28, elev: -90, azim: 360),
                .init(chn: 5, svid: 72, flags: 0x04, quality: 4, cno: 28, elev: 91, azim: -1),
                .init(chn: 255, svid: 255, flags: 0x01, quality: 4, cno: 40, elev: 10, azim: 10),
                .init(chn: 6, svid: 0, flags: 0x01, quality: 4, cno: 40, elev: 10, azim: 10),
                .init(chn: 7, svid: 110, flags: 0x01, quality: 4, cno: 40, elev: 10, azim: 10),
            ])
        let dop = UBXNavDOP(iTOW: 3000, gDOP: 200, pDOP: 150, tDOP: 100, vDOP: 120, hDOP: 90, nDOP: 60, eDOP: 70)
        let eoe = UBX.frame(.navEOE, payload: [0xB8, 0x0B, 0, 0])
        let epochs = assemble(messages(svinfo.frame + dop.frame + eoe), into: &assembler)
        #expect(epochs.count == 1)
        let sky = try #require(epochs.first?.sky)
        // GLONASS 255 (no slot yet), 0 and 110 (no satellite of u-blox's scheme) are left out.
        #expect(sky.satellites.map(\.prn) == [8, 46, 194, 70, 71, 72])
        func expected(
            _ system: GNSSSystem, _ svid: Int, _ prn: Int, _ el: Double?, _ az: Double?, _ ss: Double, _ used: Bool,
            prRes: Double, quality: Int, health: Int
        ) -> SatelliteInView {
            var s = SatelliteInView(
                system: system, svid: svid, prn: prn, elevation: el, azimuth: az, signalStrength: ss, used: used)
            s.pseudorangeResidual = prRes
            s.quality = quality
            s.health = health
            return s
        }
        #expect(
            sky.satellites == [
                expected(.gps, 8, 8, 36, 57, 16, true, prRes: -10.21, quality: 4, health: 1),
                expected(.sbas, 133, 46, 35, 197, 0, false, prRes: 0, quality: 1, health: 2),
                expected(.qzss, 2, 194, nil, 0, 0, false, prRes: 0, quality: 1, health: 2),
                expected(.glonass, 6, 70, 90, 359, 30, true, prRes: 2.5, quality: 7, health: 1),
                expected(.glonass, 7, 71, -90, nil, 28, false, prRes: 0, quality: 4, health: 1),
                expected(.glonass, 8, 72, nil, nil, 28, false, prRes: 0, quality: 4, health: 1),
            ])
        #expect(sky.satellitesUsed == 2 && sky.dops.position == 1.5)
        // The SKY report carries gpsd's fields for them, health 2 for the unhealthy ones.
        let report = GPSDReport.sky(sky)
        #expect(
            report.contains(
                #"{"PRN":46,"gnssid":1,"svid":133,"az":197.0,"el":35.0,"prRes":0.0,"qual":1,"ss":0.0,"#
                    + #""used":false,"health":2}"#))
        #expect(
            report.contains(
                #"{"PRN":8,"gnssid":0,"svid":8,"az":57.0,"el":36.0,"prRes":-10.2,"qual":4,"ss":16.0,"#
                    + #""used":true,"health":1}"#))
    }

    @Test(
        "NAV-SAT and NAV-SVINFO in one epoch: NAV-SAT's satellites, in either order; NAV-SVINFO once NAV-SAT stops",
        arguments: [true, false])
    func navSATOverSVINFO(satFirst: Bool) throws {
        var assembler = EpochAssembler(options: .init(satelliteExpiryEpochs: 2))
        func epoch(_ second: UInt32, sat: Bool) -> [UInt8] {
            let iTOW = second * 1000
            let svinfo = UBXNavSVINFO(
                iTOW: iTOW, channels: [.init(chn: 0, svid: 5, flags: 0x01, cno: 30, elev: 40, azim: 50)])
            let navSAT = UBXNavSAT(
                iTOW: iTOW, satellites: [.init(gnssId: 2, svId: 7, cno: 35, elev: 40, azim: 100, flags: 0x08)])
            let eoe = UBX.frame(.navEOE, payload: Array(withUnsafeBytes(of: iTOW.littleEndian, Array.init)))
            guard sat else { return svinfo.frame + eoe }
            return (satFirst ? navSAT.frame + svinfo.frame : svinfo.frame + navSAT.frame) + eoe
        }
        var bytes: [UInt8] = []
        for second in 1...6 { bytes += epoch(UInt32(second), sat: second <= 2) }
        let skies = assemble(messages(bytes), into: &assembler).compactMap(\.sky)
        // Epochs 1 and 2 have both: Galileo 7 from NAV-SAT. With an expiry of 2 epochs NAV-SAT is still
        // current in epoch 3; from epoch 4 on NAV-SVINFO's GPS 5 takes over.
        #expect(skies.map { $0.satellites.map(\.prn) } == [[307], [307], [307], [5], [5], [5]])
    }

    @Test("GPS week times: a week too large for nanoseconds costs the time, not the process")
    func gpsWeekOutOfRange() throws {
        // Found by the fuzzer: NAV-TIMEGPS with week 0x7FFF trapped on Int64 overflow.
        for week: Int16 in [.max, 15_251, .min] {
            var assembler = EpochAssembler()
            let timeGPS = UBXNavTimeGPS(iTOW: 1000, fTOW: 0, week: week, leapS: 18, valid: 0x07, tAcc: 20)
            let sol = UBXNavSOL(
                iTOW: 1000, fTOW: 0, week: week, gpsFix: 3, flags: 0x0D, ecefX: 0, ecefY: 0, ecefZ: 637_813_700,
                pAcc: 100, ecefVX: 0, ecefVY: 0, ecefVZ: 0, sAcc: 10, pDOP: 150, numSV: 9)
            let eoe = UBX.frame(.navEOE, payload: [0xE8, 0x03, 0, 0])
            let epochs = assemble(messages(timeGPS.frame + sol.frame + eoe), into: &assembler)
            let fix = try #require(epochs.first?.fix)
            #expect(fix.mode == .threeD)
            #expect(fix.time == nil, "week \(week) does not fit in nanoseconds")
        }
        // The largest week that fits still gives a time.
        #expect(gpsWeekTime(week: 15_250) != nil)
        // And a current week gives the right one: week 2300 began 2024-02-04 00:00:00 GPS time;
        // 1 s into it less 18 leap seconds is 23:59:43 UTC the day before.
        #expect(
            gpsWeekTime(week: 2300)
                == GNSSTime(
                    date: GNSSDate(year: 2024, month: 2, day: 3), time: TimeOfDay(hour: 23, minute: 59, second: 43)))
    }

    @Test("RMC date rolls over at midnight for GGA-only epochs")
    func midnight() {
        var assembler = EpochAssembler()
        let date = GNSSDate(year: 2024, month: 12, day: 31)
        var bytes = NMEARMC(
            time: TimeOfDay(hour: 23, minute: 59, second: 59), status: "A", latitude: 1, longitude: 1,
            speedKnots: 0, course: nil, date: date
        ).sentence()
        bytes += NMEAGGA(
            time: TimeOfDay(hour: 0, minute: 0, second: 0), latitude: 1, longitude: 1, quality: 1,
            satellitesUsed: 5, hdop: 1, altitudeMSL: 1, geoidSeparation: 0
        ).sentence()
        var epochs = assemble(messages(bytes), into: &assembler)
        epochs += [assembler.finish()].compactMap { $0 }
        #expect(
            epochs.compactMap { $0.fix?.time?.iso8601 } == ["2024-12-31T23:59:59.000Z", "2025-01-01T00:00:00.000Z"])
    }

    @Test("an invalid RMC and GGA quality 0 give no fix, without a position")
    func noFix() {
        var assembler = EpochAssembler()
        var bytes = NMEARMC(
            time: TimeOfDay(hour: 1, minute: 0, second: 0), status: "V", latitude: 89.99, longitude: 0,
            speedKnots: 0, course: 0, date: GNSSDate(year: 1980, month: 1, day: 5)
        ).sentence()
        bytes += NMEAGGA(
            time: TimeOfDay(hour: 1, minute: 0, second: 0), latitude: 89.99, longitude: 0, quality: 0,
            satellitesUsed: 0, hdop: nil, altitudeMSL: 137, geoidSeparation: 13
        ).sentence()
        let epochs = assemble(messages(bytes), into: &assembler) + [assembler.finish()].compactMap { $0 }
        #expect(epochs.count == 1)
        #expect(
            epochs.first?.fix?.mode == .noFix && epochs.first?.fix?.latitude == nil && epochs.first?.fix?.time == nil)
    }

    @Test("gpsd report: TPV and SKY fields and formats")
    func report() throws {
        var assembler = EpochAssembler()
        var epochs: [Epoch] = []
        for second in 41...42 { epochs += assemble(messages(nmeaCycle(second: second)), into: &assembler) }
        let fix = try #require(epochs.last?.fix)
        let tpv = GPSDReport.tpv(fix, device: "/dev/ttyAMA0")
        let expectedStart = #"{"class":"TPV","device":"/dev/ttyAMA0","mode":3,"time":"2017-01-10T00:09:42.000Z","#
            + #""ept":0.005,"lat":44.068900000,"lon":-121.300000000,"altHAE":1123.4000,"altMSL":1144.8000,"#
            + #""alt":1144.8000,"#
        #expect(tpv.hasPrefix(expectedStart))
        #expect(tpv.hasSuffix("}\r\n") && !tpv.contains("null"))
        #expect(
            tpv.contains(#""track":90.0000,"#) && tpv.contains(#""speed":0.514,"#) && tpv.contains(#""eph":19.190"#))
        let sky = GPSDReport.sky(try #require(epochs.last?.sky))
        #expect(
            sky.contains(
                #""nSat":9,"uSat":8,"satellites":[{"PRN":3,"gnssid":0,"svid":3,"az":174.0,"el":21.0,"ss":29.0,"#
                    + #""used":true}"#))
        #expect(sky.contains(#"{"PRN":30,"gnssid":0,"svid":30,"az":249.0,"el":12.0,"ss":17.0,"used":false}"#))
        // No fix: only class, mode (and time when known); never null.
        #expect(GPSDReport.tpv(Fix()) == "{\"class\":\"TPV\",\"mode\":0}\r\n")
    }
}

/// The time of a UBX epoch whose only time is NAV-TIMEGPS at 1 s into `week`.
private func gpsWeekTime(week: Int16) -> GNSSTime? {
    var assembler = EpochAssembler()
    let timeGPS = UBXNavTimeGPS(iTOW: 1000, fTOW: 0, week: week, leapS: 18, valid: 0x07, tAcc: 20)
    let eoe = UBX.frame(.navEOE, payload: [0xE8, 0x03, 0, 0])
    return assemble(messages(timeGPS.frame + eoe), into: &assembler).first?.fix?.time
}
