// Differential tests against pyubx2 1.4.0 and pynmeagps 1.1.8 (in .build/venv, from scripts/setup.sh):
// seeded random valid messages of every supported type, in both directions, every field equal.
// The count per type is 10,000 (GNSSHAT_DIFFERENTIAL_COUNT overrides it for quick runs).
// MTK (PMTK) sentences are not covered: neither oracle implements them (see TestVectorTests).

import Foundation
import GNSSProtocol
import Testing
import TestSupport

@Suite("Differential vs pyubx2 / pynmeagps", .serialized)
struct DifferentialTests {
    static let count = Int(ProcessInfo.processInfo.environment["GNSSHAT_DIFFERENTIAL_COUNT"] ?? "") ?? 10_000
    static let seed: UInt64 = 20_240_517

    @discardableResult
    static func runOracle(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let run = try CommandRun.run(
            executable: TestPaths.oraclePython(),
            [TestPaths.oracles.appendingPathComponent("differential.py").path] + arguments
        )
        return (run.status, run.out + run.err)
    }

    static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-\(getpid())-\(name)")
    }

    @Test("the oracles encode, we decode: every field equal")
    func oracleEncodesWeDecode() throws {
        let file = Self.temporaryFile("oracle.jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try Self.runOracle([
            "generate", "--seed", "\(Self.seed)", "--count", "\(Self.count)", "--out", file.path,
        ])
        try #require(run.status == 0, "oracle generate failed: \(run.output)")
        let text = try String(contentsOf: file, encoding: .utf8)
        var counts: [String: Int] = [:]
        var failures: [String: Int] = [:]
        var examples: [String] = []
        for line in text.split(separator: "\n") {
            let item = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let type = try #require(item["type"] as? String)
            let hex = try #require(item["hex"] as? String)
            let expected = try #require(item["fields"] as? [String: Any])
            counts[type, default: 0] += 1
            let bytes = Self.bytes(hex: hex)
            var problem: String?
            var framer = Framer()
            framer.append(contentsOf: bytes)
            if let frame = framer.next(), frame.bytes.count == bytes.count {
                do {
                    let ours: (String, [String: Any])?
                    switch try Message(frame: frame) {
                    case .ubx(let m): ours = OracleFields.ubx(m)
                    case .nmea(let s): ours = OracleFields.nmea(s)
                    case .rtcm3: ours = nil
                    }
                    if let (ourType, fields) = ours, ourType == type {
                        let bad = expected.keys.filter { !Self.same(fields[$0], expected[$0]) }.sorted()
                        if !bad.isEmpty {
                            problem = bad.prefix(4).map {
                                "\($0) ours=\(fields[$0] ?? "missing") oracle=\(expected[$0]!)"
                            }
                            .joined(separator: ", ")
                        }
                    } else {
                        problem = "decoded as \(ours?.0 ?? "an untyped message")"
                    }
                } catch {
                    problem = "decode error: \(error)"
                }
            } else {
                problem = "framer did not return the frame"
            }
            if let problem {
                failures[type, default: 0] += 1
                if examples.count < 20 { examples.append("\(type) \(hex.prefix(80)): \(problem)") }
            }
        }
        for type in counts.keys.sorted() {
            print("differential oracle->ours \(type): \(counts[type]!) messages, \(failures[type] ?? 0) differ")
        }
        for example in examples { print("  " + example) }
        let total = counts.values.reduce(0, +)
        print("differential oracle->ours total: \(total) messages, \(failures.values.reduce(0, +)) differ")
        #expect(failures.isEmpty)
        #expect(counts.count >= 50 && counts.values.allSatisfy { $0 == Self.count })
    }

    @Test("we encode, the oracles decode: every field equal")
    func weEncodeOracleDecodes() throws {
        var random = SeededGenerator(seed: Self.seed)
        var lines: [String] = []
        var types = Set<String>()
        func add(_ bytes: [UInt8], _ type: String, _ fields: [String: Any], proto: String) throws {
            let object: [String: Any] = [
                "proto": proto, "type": type, "hex": Self.hex(bytes),
                "fields": fields,
            ]
            lines.append(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
            types.insert(type)
        }
        for _ in 0..<Self.count {
            for message in RandomMessages.ubx(&random) {
                let (type, fields) = try #require(OracleFields.ubx(message))
                try add(message.frame, type, fields, proto: "ubx")
            }
            for sentence in RandomMessages.nmea(&random) {
                let (type, fields) = try #require(OracleFields.nmea(sentence))
                try add(sentence.sentence(), type, fields, proto: "nmea")
            }
        }
        let file = Self.temporaryFile("ours.jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let run = try Self.runOracle(["check", "--in", file.path])
        print(run.output.split(separator: "\n").map { "differential ours->oracle " + $0 }.joined(separator: "\n"))
        #expect(run.status == 0, "the oracles disagree with our encoding (see above)")
        #expect(types.count >= 50)
    }

    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        func value(_ c: UInt8) -> UInt8 {
            c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : (c | 0x20) - UInt8(ascii: "a") + 10
        }
        return stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func same(_ ours: Any?, _ theirs: Any?) -> Bool {
        if theirs is NSNull || theirs == nil { return ours == nil || ours is NSNull }
        if ours is NSNull || ours == nil { return false }
        if let a = ours as? String, let b = theirs as? String { return a == b }
        if let b = theirs as? NSNumber {
            let a: Double
            switch ours {
            case let v as Int: a = Double(v)
            case let v as Double: a = v
            case let v as NSNumber: a = v.doubleValue
            default: return false
            }
            if b.objCType.pointee == UInt8(ascii: "d") || b.objCType.pointee == UInt8(ascii: "f") || ours is Double {
                return abs(a - b.doubleValue) <= 1e-9 * max(1, abs(b.doubleValue))
            }
            return ours as? Int == b.intValue
        }
        return false
    }
}

/// Seeded random valid messages of every supported type, from our encoders' typed values.
enum RandomMessages {
    static func ubx(_ r: inout SeededGenerator) -> [UBXMessage] {
        func u8() -> UInt8 { UInt8.random(in: .min ... .max, using: &r) }
        func i8() -> Int8 { Int8.random(in: .min ... .max, using: &r) }
        func u16() -> UInt16 { UInt16.random(in: .min ... .max, using: &r) }
        func i16() -> Int16 { Int16.random(in: .min ... .max, using: &r) }
        func u32() -> UInt32 { UInt32.random(in: .min ... .max, using: &r) }
        func i32() -> Int32 { Int32.random(in: .min ... .max, using: &r) }
        func text(_ maximum: Int) -> String {
            String(
                (0..<Int.random(in: 1...maximum, using: &r)).map { _ in
                    Character(Unicode.Scalar(UInt8.random(in: 0x21...0x7E, using: &r)))
                })
        }
        var pvt = UBXNavPVT()
        pvt.iTOW = u32(); pvt.year = u16(); pvt.month = u8(); pvt.day = u8(); pvt.hour = u8(); pvt.minute = u8()
        pvt.second = u8(); pvt.valid = u8(); pvt.tAcc = u32(); pvt.nano = i32(); pvt.fixType = u8(); pvt.flags = u8()
        pvt.flags2 = u8(); pvt.numSV = u8(); pvt.lon = i32(); pvt.lat = i32(); pvt.height = i32(); pvt.hMSL = i32()
        pvt.hAcc = u32(); pvt.vAcc = u32(); pvt.velN = i32(); pvt.velE = i32(); pvt.velD = i32(); pvt.gSpeed = i32()
        pvt.headMot = i32(); pvt.sAcc = u32(); pvt.headAcc = u32(); pvt.pDOP = u16(); pvt.flags3 = u16()
        pvt.headVeh = i32(); pvt.magDec = i16(); pvt.magAcc = u16()
        let satellites = (0..<Int.random(in: 0...16, using: &r)).map { _ in
            UBXNavSAT.Satellite(
                gnssId: u8(), svId: u8(), cno: u8(), elev: i8(), azim: i16(), prRes: i16(), flags: u32())
        }
        let keys: [UInt32] = [
            UBXConfigItem.rateMeas, UBXConfigItem.msgoutNavPVTI2C, UBXConfigItem.msgoutNavPVTUART1,
            UBXConfigItem.msgoutNavSATI2C, UBXConfigItem.uart1Baudrate, UBXConfigItem.pmOperateMode,
            UBXConfigItem.hwAntCfgPwrdown, 0x2011_0021, 0x3021_0002, 0x1052_0005, 0x2051_0001,
            0x2011_00A4, 0x40D0_0002, 0x4011_00C1,
            UBXConfigItem.pmAcqPeriod, UBXConfigItem.pmOnTime,
            UBXConfigItem.pmMaxAcqTime, UBXConfigItem.pmDoNotEnterOff, UBXConfigItem.pmUpdateEph,
            UBXConfigItem.pmExtintSel, UBXConfigItem.pmLimitPeakCurr, UBXConfigItem.navspgAckAiding,
        ]
        func items() -> [UBXConfigItem] {
            var chosen = keys
            chosen.shuffle(using: &r)
            return chosen.prefix(Int.random(in: 1...8, using: &r)).map { key in
                let size = UBXConfigItem.valueSize(key: key)!
                let bits = (key >> 28) & 7 == 1 ? 1 : size * 8
                return UBXConfigItem(
                    key: key, value: UInt64.random(in: 0...(bits == 64 ? .max : (1 << bits) - 1), using: &r))
            }
        }
        let level = UBXInf.Level(rawValue: UInt8.random(in: 0...4, using: &r))!
        return [
            .navPVT(pvt),
            .navSAT(UBXNavSAT(iTOW: u32(), version: u8(), satellites: satellites)),
            .navStatus(
                UBXNavStatus(
                    iTOW: u32(), gpsFix: u8(), flags: u8(), fixStat: u8(), flags2: u8(), ttff: u32(), msss: u32())),
            .navDOP(
                UBXNavDOP(
                    iTOW: u32(), gDOP: u16(), pDOP: u16(), tDOP: u16(), vDOP: u16(), hDOP: u16(), nDOP: u16(),
                    eDOP: u16())),
            .navTimeUTC(
                UBXNavTimeUTC(
                    iTOW: u32(), tAcc: u32(), nano: i32(), year: u16(), month: u8(), day: u8(), hour: u8(),
                    minute: u8(), second: u8(), valid: u8())),
            .navSOL(
                UBXNavSOL(
                    iTOW: u32(), fTOW: i32(), week: i16(), gpsFix: u8(), flags: u8(), ecefX: i32(), ecefY: i32(),
                    ecefZ: i32(), pAcc: u32(), ecefVX: i32(), ecefVY: i32(), ecefVZ: i32(), sAcc: u32(), pDOP: u16(),
                    numSV: u8())),
            .navPOSLLH(
                UBXNavPOSLLH(
                    iTOW: u32(), lon: i32(), lat: i32(), height: i32(), hMSL: i32(), hAcc: u32(), vAcc: u32())),
            .navVELNED(
                UBXNavVELNED(
                    iTOW: u32(), velN: i32(), velE: i32(), velD: i32(), speed: u32(), gSpeed: u32(),
                    heading: i32(), sAcc: u32(), cAcc: u32())),
            .navTimeGPS(UBXNavTimeGPS(iTOW: u32(), fTOW: i32(), week: i16(), leapS: i8(), valid: u8(), tAcc: u32())),
            .navHPPOSLLH(
                UBXNavHPPOSLLH(
                    version: u8(), flags: u8(), iTOW: u32(), lon: i32(), lat: i32(), height: i32(),
                    hMSL: i32(), lonHp: i8(), latHp: i8(), heightHp: i8(), hMSLHp: i8(), hAcc: u32(), vAcc: u32())),
            .hnrPVT(
                UBXHnrPVT(
                    iTOW: u32(), year: u16(), month: u8(), day: u8(), hour: u8(), minute: u8(), second: u8(),
                    valid: u8(), nano: i32(), gpsFix: u8(), flags: u8(), lon: i32(), lat: i32(), height: i32(),
                    hMSL: i32(), gSpeed: i32(), speed: i32(), headMot: i32(), headVeh: i32(), hAcc: u32(),
                    vAcc: u32(), sAcc: u32(), headAcc: u32())),
            .monVER(
                UBXMonVER(
                    softwareVersion: text(29), hardwareVersion: text(9),
                    extensions: (0..<Int.random(in: 0...4, using: &r)).map { _ in text(29) })),
            .ack(UBXAck(UBX.MessageID(u8(), u8()))),
            .nak(UBXAck(UBX.MessageID(u8(), u8()))),
            .inf(UBXInf(level: level, text: text(80))),
            .cfgValGet(.response(layer: UInt8.random(in: 0...2, using: &r), position: u16(), items: items())),
            .cfgValGet(.request(layer: UInt8.random(in: 0...2, using: &r), position: u16(), keys: items().map(\.key))),
            .cfgValSet(
                UBXCfgValSet(layers: UBXConfigLayers(rawValue: UInt8.random(in: 1...7, using: &r)), items: items())),
            .cfgMsg(UBXCfgMsg(message: UBX.MessageID(u8(), u8()), rates: [u8(), u8(), u8(), u8(), u8(), 0])),
            .cfgPrt(
                UBXCfgPrt(
                    portID: u8(), baudRate: u32(), inProtocols: u16(), outProtocols: u16(), mode: u32(),
                    txReady: u16(), flags: u16())),
            .cfgRate(UBXCfgRate(measRate: u16(), navRate: u16(), timeRef: u16())),
            .cfgRst(UBXCfgRst(navBbrMask: u16(), resetMode: u8())),
            .rxmPMREQ(
                UBXRxmPmReq(duration: u32(), flags: u32(), wakeupSources: UBXRxmPmReq.WakeSources(rawValue: u32()))),
            .rxmPMREQ(UBXRxmPmReq(duration: u32(), flags: u32(), wakeupSources: nil)),
            .poll(.navPVT),
            .poll(.monVER),
            .navSVINFO(
                UBXNavSVINFO(
                    iTOW: u32(), globalFlags: u8(),
                    channels: (0..<Int.random(in: 0...16, using: &r)).map { _ in
                        UBXNavSVINFO.Channel(
                            chn: u8(), svid: u8(), flags: u8(), quality: u8(), cno: u8(), elev: i8(), azim: i16(),
                            prRes: i32())
                    })),
        ] + aidingAndPowerSave(&r)
    }

    /// The messages of issue 16 (UBXAiding.swift, UBXPowerSave.swift), in the forms pyubx2 1.4.0 knows.
    static func aidingAndPowerSave(_ r: inout SeededGenerator) -> [UBXMessage] {
        func u8() -> UInt8 { UInt8.random(in: .min ... .max, using: &r) }
        func u16() -> UInt16 { UInt16.random(in: .min ... .max, using: &r) }
        func u32() -> UInt32 { UInt32.random(in: .min ... .max, using: &r) }
        func i32() -> Int32 { Int32.random(in: .min ... .max, using: &r) }
        let record = (0..<Int.random(in: 12...164, using: &r)).map { _ in u8() }
        return [
            .mgaDBD(UBXMgaDBD(payload: record)),
            .poll(.mgaDBD),
            .mgaAck(UBXMgaAck(type: 1, version: u8(), infoCode: u8(), msgId: u8(), msgPayloadStart: u32())),
            .mgaAck(UBXMgaAck(type: 0, version: u8(), infoCode: u8(), msgId: u8(), msgPayloadStart: u32())),
            .mgaIniTimeUTC(
                UBXMgaIniTimeUTC(
                    version: u8(), reference: .init(rawValue: u8()), leapSeconds: Int8(bitPattern: u8()), year: u16(),
                    month: u8(), day: u8(), hour: u8(), minute: u8(), second: u8(), nanoseconds: u32(),
                    accuracySeconds: u16(), accuracyNanoseconds: u32())),
            .mgaIniPosLLH(UBXMgaIniPosLLH(version: u8(), lat: i32(), lon: i32(), alt: i32(), posAcc: u32())),
            .secUniqID(UBXSecUniqID(version: u8(), uniqueID: (0..<5).map { _ in u8() })),
            .poll(.secUNIQID),
            .cfgPM2(
                UBXCfgPM2(
                    version: u8(), maxStartupStateDur: u8(), flags: u32(), updatePeriod: u32(), searchPeriod: u32(),
                    gridOffset: u32(), onTime: u16(), minAcqTime: u16(), extintInactivity: u32())),
            .cfgRXM(UBXCfgRXM(lpMode: u8(), reserved: u8())),
            .cfgPMS(UBXCfgPMS(version: u8(), preset: .init(rawValue: u8()), period: u16(), onTime: u16())),
            .cfgNavX5(
                UBXCfgNavX5(
                    version: u16(), mask1: u16(), mask2: u32(), minSVs: u8(), maxSVs: u8(), minCNO: u8(),
                    iniFix3D: u8(), ackAiding: u8(), wknRollover: u16(), sigAttenCompMode: u8(), usePPP: u8(),
                    aopCfg: u8(), aopOrbMaxErr: u16(), useAdr: u8())),
        ]
    }

    static let talkers: [NMEATalker] = [.gp, .gl, .ga, .gb, .bd, .gq, .qz, .gi, .gn]

    static func nmea(_ r: inout SeededGenerator) -> [NMEASentence] {
        func maybe<T>(_ value: T, _ empty: Double = 0.15) -> T? {
            Double.random(in: 0..<1, using: &r) < empty ? nil : value
        }
        func decimal(_ range: ClosedRange<Int>, _ decimals: Int) -> Double {
            Double(Int.random(in: range, using: &r)) / [1.0, 10, 100, 1000][decimals]
        }
        func time() -> TimeOfDay {
            TimeOfDay(
                hour: .random(in: 0..<24, using: &r), minute: .random(in: 0..<60, using: &r),
                second: .random(in: 0..<60, using: &r), nanosecond: Int.random(in: 0..<100, using: &r) * 10_000_000)
        }
        func coordinate(_ degrees: Int) -> Double {
            let value =
                Double(Int.random(in: 0..<degrees, using: &r)) + Double(Int.random(in: 0..<6_000_000, using: &r)) / 6e6
            return Bool.random(using: &r) ? value : -value
        }
        func scalar(_ options: String) -> Unicode.Scalar { options.unicodeScalars.randomElement(using: &r)! }
        let talker = talkers.randomElement(using: &r)!
        let lat = maybe(coordinate(90), 0.1)
        let lon = lat == nil ? nil : coordinate(180)
        let age = maybe(decimal(0...990, 1), 0.6)
        let ids = NMEASatelliteIDs(
            (0..<Int.random(in: 0...12, using: &r)).map { _ in Int.random(in: 1...99, using: &r) })
        let gsv = GSVSatellites(
            (0..<Int.random(in: 0...4, using: &r)).map { _ in
                GSVSatellite(
                    id: .random(in: 1...299, using: &r), elevation: maybe(.random(in: 0...90, using: &r)),
                    azimuth: maybe(.random(in: 0...359, using: &r)), snr: maybe(.random(in: 0...99, using: &r)))
            })
        let textCharacters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .=-_:/"
        var text = String((0..<Int.random(in: 1...50, using: &r)).map { _ in textCharacters.randomElement(using: &r)! })
        text = text.trimmingCharacters(in: .whitespaces)
        if text.isEmpty { text = "X" }
        let mode = maybe(scalar("ADEFMNPRS"), 0.3)
        return [
            .gga(
                NMEAGGA(
                    talker: talker, time: maybe(time()), latitude: lat, longitude: lon,
                    quality: .random(in: 0...8, using: &r),
                    satellitesUsed: .random(in: 0...40, using: &r), hdop: maybe(decimal(0...9999, 2)),
                    altitudeMSL: maybe(decimal(-4000...90000, 1)), geoidSeparation: maybe(decimal(-1000...1000, 1)),
                    dgpsAge: age, dgpsStation: age == nil ? nil : .random(in: 0...1023, using: &r))),
            .rmc(
                NMEARMC(
                    talker: talker, time: time(), status: scalar("AV"), latitude: lat, longitude: lon,
                    speedKnots: maybe(decimal(0...500_000, 3)), course: maybe(decimal(0...35999, 2)),
                    date: GNSSDate(
                        year: .random(in: 1980...2068, using: &r), month: .random(in: 1...12, using: &r),
                        day: .random(in: 1...28, using: &r)),
                    magneticVariation: maybe(decimal(-300...300, 1).nonZero ?? 1.5, 0.5),
                    modeIndicator: mode, navigationStatus: mode == nil ? nil : maybe(scalar("SCUV"), 0.3))),
            .gsa(
                NMEAGSA(
                    talker: talker, selectionMode: scalar("AM"), fixType: .random(in: 1...3, using: &r),
                    satelliteIDs: ids,
                    pdop: decimal(50...9900, 2), hdop: decimal(50...9900, 2), vdop: decimal(50...9900, 2),
                    systemID: maybe(.random(in: 1...6, using: &r), 0.3))),
            .gsv(
                NMEAGSV(
                    talker: talker, sentenceCount: .random(in: 1...9, using: &r),
                    sentenceNumber: .random(in: 1...9, using: &r),
                    satellitesInView: .random(in: 0...99, using: &r), satellites: gsv,
                    signalID: maybe(.random(in: 0...15, using: &r), 0.3))),
            .vtg(
                NMEAVTG(
                    talker: talker, courseTrue: maybe(decimal(0...35999, 2)),
                    courseMagnetic: maybe(decimal(0...35999, 2)),
                    speedKnots: decimal(0...500_000, 3), speedKmh: decimal(0...900_000, 3),
                    modeIndicator: maybe(scalar("ADEN")))),
            .gll(
                NMEAGLL(
                    talker: talker, latitude: lat, longitude: lon, time: time(), status: scalar("AV"),
                    modeIndicator: maybe(scalar("ADEN")))),
            .gns(
                NMEAGNS(
                    talker: talker, time: time(), latitude: lat, longitude: lon,
                    modeIndicators: String(
                        (0..<Int.random(in: 1...6, using: &r)).map { _ in Character(scalar("ADEFMNPRS")) }),
                    satellitesUsed: .random(in: 0...60, using: &r), hdop: decimal(30...9900, 2),
                    altitudeMSL: decimal(-4000...90000, 1), geoidSeparation: decimal(-1000...1000, 1), dgpsAge: age,
                    dgpsStation: age == nil ? nil : .random(in: 0...1023, using: &r),
                    navigationStatus: maybe(scalar("SCUV"), 0.3))),
            .gst(
                NMEAGST(
                    talker: talker, time: time(), rangeRMS: maybe(decimal(0...9990, 1)),
                    semiMajor: maybe(decimal(0...9990, 1)),
                    semiMinor: maybe(decimal(0...9990, 1)), orientation: maybe(decimal(0...3599, 1)),
                    latitudeError: maybe(decimal(0...9990, 1)), longitudeError: maybe(decimal(0...9990, 1)),
                    altitudeError: maybe(decimal(0...9990, 1)))),
            .zda(
                NMEAZDA(
                    talker: talker, time: time(), day: .random(in: 1...28, using: &r),
                    month: .random(in: 1...12, using: &r),
                    year: .random(in: 1980...2079, using: &r), localZoneHours: .random(in: 0...13, using: &r),
                    localZoneMinutes: .random(in: 0...59, using: &r))),
            .txt(
                NMEATXT(
                    talker: talker, sentenceCount: .random(in: 1...9, using: &r),
                    sentenceNumber: .random(in: 1...9, using: &r),
                    textID: .random(in: 0...7, using: &r), text: text)),
        ]
    }
}

extension Double {
    var nonZero: Double? { self == 0 ? nil : self }
}
