// NMEA 4.10+ GSV of multi-band receivers: one SKY entry per satellite and signal, as gpsd lists them.

import GNSSProtocol
import GPSDProtocol
import Testing

/// A GSV satellite: NMEA number, elevation, azimuth, SNR.
private func gsv(_ id: Int, _ el: Int?, _ az: Int?, _ snr: Int?) -> GSVSatellite {
    GSVSatellite(id: id, elevation: el, azimuth: az, snr: snr)
}

/// One multi-band NMEA cycle, u-blox ZED-F9P style: GGA, GSA per system, GSV per talker and signal, RMC last.
/// `gsv` is (talker, NMEA signal id, satellites) in the order sent.
private func multiBandCycle(
    second: Int, used: [(systemID: Int, ids: [Int])],
    gsv sets: [(talker: NMEATalker, signal: Int?, satellites: [GSVSatellite])]
) -> [UInt8] {
    var sentences: [UInt8] = []
    for set in sets {
        for sentence in NMEAGSV.sentences(talker: set.talker, satellites: set.satellites, signalID: set.signal) {
            sentences += sentence
        }
    }
    return multiBandCycle(second: second, used: used, gsvSentences: sentences)
}

/// The same cycle with the GSV sentences given as bytes.
private func multiBandCycle(second: Int, used: [(systemID: Int, ids: [Int])], gsvSentences: [UInt8]) -> [UInt8] {
    let time = TimeOfDay(hour: 12, minute: 0, second: second)
    var bytes = NMEAGGA(
        talker: .gn, time: time, latitude: 44.0689, longitude: -121.3, quality: 1, satellitesUsed: 8, hdop: 0.9,
        altitudeMSL: 1130, geoidSeparation: -21.4
    ).sentence()
    for (systemID, ids) in used {
        bytes += NMEAGSA(
            talker: .gn, fixType: 3, satelliteIDs: NMEASatelliteIDs(ids), pdop: 1.5, hdop: 0.9, vdop: 1.2,
            systemID: systemID
        ).sentence()
    }
    bytes += gsvSentences
    bytes += NMEARMC(
        talker: .gn, time: time, status: "A", latitude: 44.0689, longitude: -121.3, speedKnots: 0, course: nil,
        date: GNSSDate(year: 2024, month: 6, day: 9), modeIndicator: "A"
    ).sentence()
    return bytes
}

/// The SKY views of `bytes`, the stream closed at its end.
private func skies(_ bytes: [UInt8], options: EpochAssembler.Options = .init()) -> [SkyView] {
    var assembler = EpochAssembler(options: options)
    var epochs = assemble(messages(bytes), into: &assembler)
    if let last = assembler.finish() { epochs.append(last) }
    return epochs.compactMap(\.sky)
}

/// (PRN, sigid, used) of each entry, in order.
private func entries(_ sky: SkyView) -> [String] {
    sky.satellites.map { "\($0.prn)/\($0.signalID.map(String.init) ?? "-")/\($0.used ? "u" : "-")" }
}

@Suite("Multi-band NMEA sky")
struct MultiSignalSkyTests {
    static let gpsL1 = [gsv(3, 40, 100, 45), gsv(7, 60, 200, 42), gsv(9, 20, 300, 30), gsv(16, 70, 10, 44)]
    static let gpsL2 = [gsv(3, 40, 100, 38), gsv(7, 60, 200, nil), gsv(16, 70, 10, 36)]
    static let galileoE1 = [gsv(11, 30, 150, 40), gsv(12, 50, 250, 41)]
    static let galileoE5b = [gsv(11, 30, 150, 37)]

    @Test("one entry per satellite and signal, in the order sent, with its u-blox sigid; used needs an SNR")
    func perSignal() throws {
        let cycle = multiBandCycle(
            second: 0, used: [(1, [3, 7, 16]), (3, [11, 12])],
            gsv: [(.gp, 1, Self.gpsL1), (.gp, 6, Self.gpsL2), (.ga, 7, Self.galileoE1), (.ga, 2, Self.galileoE5b)])
        let sky = try #require(skies(cycle).last)
        // GPS L2 CL is u-blox 3, Galileo E5b 5; L1 C/A and E1 are 0. GPS 7 has no L2 SNR: not used there
        // (gpsd marks a signal used only with an SNR), though its GSA lists it.
        #expect(
            entries(sky) == [
                "3/0/u", "7/0/u", "9/0/-", "16/0/u", "3/3/u", "7/3/-", "16/3/u", "311/0/u", "312/0/u", "311/5/u",
            ])
        // gpsd's nSat and uSat count entries; the satellites are six, five of them used.
        #expect(sky.satellitesVisible == 10 && sky.satellitesUsed == 8)
        #expect(sky.distinctSatellites == (visible: 6, used: 5))
        // Every entry keeps its system, svid and the GSV's elevation and azimuth.
        let l2 = try #require(sky.satellites.first { $0.prn == 16 && $0.signalID == 3 })
        #expect(l2.system == .gps && l2.svid == 16 && l2.elevation == 70 && l2.azimuth == 10 && l2.signalStrength == 36)
        // The SKY report: sigid where it is not 0, as gpsd writes it.
        let report = GPSDReport.sky(sky)
        #expect(report.contains(#"{"PRN":3,"gnssid":0,"svid":3,"az":100.0,"el":40.0,"ss":45.0,"used":true}"#))
        #expect(report.contains(#"{"PRN":3,"gnssid":0,"svid":3,"sigid":3,"az":100.0,"el":40.0,"ss":38.0,"used":true}"#))
        #expect(report.contains(#"{"PRN":7,"gnssid":0,"svid":7,"sigid":3,"az":200.0,"el":60.0,"used":false}"#))
        #expect(report.contains(#""nSat":10,"uSat":8,"#))
    }

    @Test("DOPs count a satellite once, however many of its signals are listed")
    func dopsOncePerSatellite() throws {
        let used = [(1, [3, 7, 16]), (3, [11, 12])]
        let single = try #require(
            skies(multiBandCycle(second: 0, used: used, gsv: [(.gp, 1, Self.gpsL1), (.ga, 7, Self.galileoE1)])).last)
        let dual = try #require(
            skies(
                multiBandCycle(
                    second: 0, used: used,
                    gsv: [
                        (.gp, 1, Self.gpsL1), (.gp, 6, Self.gpsL2), (.ga, 7, Self.galileoE1),
                        (.ga, 2, Self.galileoE5b),
                    ])
            ).last)
        #expect(dual.satellitesUsed > single.satellitesUsed)
        // GSA gives PDOP, HDOP and VDOP; the geometry fills the others: the same five lines of sight.
        let x = try #require(single.dops.x)
        let g = try #require(single.dops.geometric)
        #expect(dual.dops.x == x && dual.dops.y == single.dops.y && dual.dops.time == single.dops.time)
        #expect(dual.dops.geometric == g)
    }

    /// (talker, NMEA signal id, u-blox sigid): gpsd's nmea_sigid_to_ubx table, but Galileo 7 (E1).
    static let signals: [(NMEATalker, Int, Int?)] = [
        (.gp, 1, 0), (.gp, 5, 4), (.gp, 6, 3), (.gp, 7, 6), (.gp, 8, 7), (.gp, 2, nil), (.gp, 0, nil),
        (.gl, 1, 0), (.gl, 3, 2), (.gl, 2, nil),
        (.ga, 1, 3), (.ga, 2, 5), (.ga, 4, 10), (.ga, 5, 8), (.ga, 6, 0), (.ga, 7, 0), (.ga, 3, nil),
        (.gb, 1, 0), (.gb, 2, 2), (.gb, 3, 5), (.gb, 4, 0), (.gb, 5, 7), (.gb, 8, 4), (.gb, 11, 2), (.gb, 6, nil),
        (.bd, 5, 7),
        (.gq, 1, 0), (.gq, 4, 1), (.gq, 5, 4), (.gq, 6, 5), (.gq, 7, 8), (.gq, 8, 9), (.qz, 8, 9), (.gq, 2, nil),
        (.gi, 1, 0), (.gi, 5, nil),
    ]

    @Test("NMEA signal ids become u-blox sigids by the talker's system", arguments: signals)
    func signalIDs(talker: NMEATalker, nmea: Int, ubx: Int?) throws {
        let id = talker == .gl ? 70 : 5
        let sky = try #require(
            skies(multiBandCycle(second: 0, used: [], gsv: [(talker, nmea, [gsv(id, 40, 100, 40)])])).last)
        let satellite = try #require(sky.satellites.first)
        #expect(satellite.signalID == ubx, "\(talker) \(nmea)")
        // Without a signal id in the sentence there is none in the entry.
        let old = try #require(
            skies(multiBandCycle(second: 0, used: [], gsv: [(talker, nil, [gsv(id, 40, 100, 40)])])).last)
        #expect(old.satellites.first?.signalID == nil)
    }

    @Test("a set whose sentence 1 has no signal id and sentence 2 has one (Quectel LC79D) does not pile up")
    func mixedSignalIDs() throws {
        // $GAGSV,2,1,04,102,28,167,40,103,69,097,33*61 / $GAGSV,2,2,04,102,,,40,103,,,29,1*7F
        func cycle(_ second: Int) -> [UInt8] {
            let part1 = NMEAGSV(
                talker: .ga, sentenceCount: 2, sentenceNumber: 1, satellitesInView: 4,
                satellites: GSVSatellites([gsv(102, 28, 167, 40), gsv(103, 69, 97, 33)])
            ).sentence()
            let part2 = NMEAGSV(
                talker: .ga, sentenceCount: 2, sentenceNumber: 2, satellitesInView: 4,
                satellites: GSVSatellites([gsv(102, nil, nil, 40), gsv(103, nil, nil, 29)]), signalID: 1
            ).sentence()
            return multiBandCycle(second: second, used: [], gsvSentences: part1 + part2)
        }
        var bytes: [UInt8] = []
        for second in 0..<5 { bytes += cycle(second) }
        let views = skies(bytes)
        #expect(views.count == 5)
        for view in views {
            // Galileo 102 in a GA sentence is E02 (gpsd's reading of the Quectel numbers), once without a
            // signal and once as E5a (u-blox 3).
            #expect(entries(view) == ["302/-/-", "303/-/-", "302/3/-", "303/3/-"])
        }
    }

    @Test("a run of GSV sentences replaces the sets of the run before: a set no longer sent is gone")
    func setNotRepeated() throws {
        let first = multiBandCycle(
            second: 0, used: [],
            gsv: [(.gp, 1, Self.gpsL1), (.bd, nil, [gsv(219, 30, 40, 47)]), (.ga, 7, Self.galileoE1)])
        let second = multiBandCycle(second: 1, used: [], gsv: [(.gp, 1, Self.gpsL1), (.ga, 7, Self.galileoE1)])
        let views = skies(first + second)
        #expect(views.count == 2)
        #expect(views.first?.satellites.contains { $0.prn == 419 } == true)
        #expect(views.last?.satellites.map(\.prn) == [3, 7, 9, 16, 311, 312])
    }

    @Test("entries come in the order sent, also when a set first comes in a later cycle, between two others")
    func orderSent() throws {
        let qzss = [gsv(2, 5, 42, 28)]
        let first = multiBandCycle(second: 0, used: [], gsv: [(.gp, 1, Self.gpsL1), (.ga, 7, Self.galileoE1)])
        let second = multiBandCycle(
            second: 1, used: [], gsv: [(.gp, 1, Self.gpsL1), (.qz, 1, qzss), (.qz, 8, qzss), (.ga, 7, Self.galileoE1)])
        let views = skies(first + second + second)
        #expect(views.map { $0.satellites.map(\.prn) } == [
            [3, 7, 9, 16, 311, 312], [3, 7, 9, 16, 194, 194, 311, 312], [3, 7, 9, 16, 194, 194, 311, 312],
        ])
        #expect(views.last?.satellites.map(\.signalID) == [0, 0, 0, 0, 0, 9, 0, 0])
    }

    @Test("a set cut short (a receiver dropping output) is not shown half; the epoch still ends at its learned end")
    func setCutShort() throws {
        let glonass = [gsv(65, 10, 20, 30), gsv(66, 20, 30, 31), gsv(67, 30, 40, 32), gsv(68, 40, 50, 33),
                       gsv(69, 50, 60, 34)]
        let full = multiBandCycle(second: 0, used: [], gsv: [(.gp, 1, Self.gpsL1), (.gl, 1, glonass)])
        // The next cycle loses the GLGSV's second sentence.
        var cut = multiBandCycle(second: 1, used: [], gsv: [(.gp, 1, Self.gpsL1), (.gl, 1, glonass)])
        let secondGL = NMEAGSV.sentences(talker: .gl, satellites: glonass, signalID: 1)[1]
        let range = try #require(cut.firstRange(of: secondGL))
        cut.removeSubrange(range)
        let after = multiBandCycle(second: 2, used: [], gsv: [(.gp, 1, Self.gpsL1), (.gl, 1, glonass)])
        let views = skies(full + cut + after + full)
        let counts = views.map(\.satellitesVisible)
        // Cycle 1 shows GPS only: its GLONASS set never completed. The others show both.
        #expect(counts == [9, 4, 9, 9])
    }
}
