// UBX: every typed message round-trips; lengths are checked; units come out right.

import GNSSProtocol
import Testing

@Suite("UBX")
struct UBXTests {
    static let time = GNSSTime(
        date: GNSSDate(year: 2024, month: 2, day: 29),
        time: TimeOfDay(hour: 23, minute: 59, second: 58, nanosecond: 123_456_789))

    static let messages: [UBXMessage] = [
        .navPVT(
            UBXNavPVT(
                iTOW: 345_600_000, time: time, fixType: 3, numSV: 17, latitude: -45.877525, longitude: 170.500133,
                altitudeHAE: 29.338, altitudeMSL: 27.548, groundSpeed: 1.234, headingOfMotion: 271.5)),
        .navSAT(
            UBXNavSAT(
                iTOW: 1,
                satellites: [
                    .init(gnssId: 0, svId: 12, cno: 44, elev: 45, azim: 359, prRes: -15, flags: 0x1F),
                    .init(gnssId: 6, svId: 3, cno: 0, elev: -91, azim: 0, prRes: 0, flags: 0),
                ])),
        .navStatus(UBXNavStatus(iTOW: 2, gpsFix: 3, flags: 0x0D, fixStat: 0x02, flags2: 0, ttff: 28_000, msss: 60_000)),
        .navDOP(UBXNavDOP(iTOW: 3, gDOP: 253, pDOP: 171, tDOP: 127, vDOP: 138, hDOP: 101, nDOP: 89, eDOP: 91)),
        .navTimeUTC(UBXNavTimeUTC(iTOW: 4, time: time)),
        .navSOL(
            UBXNavSOL(
                iTOW: 5, fTOW: -1234, week: 2300, gpsFix: 3, flags: 0x0D, ecefX: -238_607_106, ecefY: -392_219_051,
                ecefZ: 441_436_073, pAcc: 165, ecefVX: 1, ecefVY: -1, ecefVZ: 0, sAcc: 20, pDOP: 173, numSV: 9)),
        .navPOSLLH(
            UBXNavPOSLLH(
                iTOW: 6, lon: -1_213_143_092, lat: 440_688_096, height: 1_110_675, hMSL: 1_132_830, hAcc: 1500,
                vAcc: 2500)),
        .navVELNED(
            UBXNavVELNED(
                iTOW: 7, velN: -1, velE: 2, velD: 3, speed: 4, gSpeed: 3, heading: 5_466_800, sAcc: 12, cAcc: 18_000_000
            )),
        .navTimeGPS(UBXNavTimeGPS(iTOW: 8, fTOW: 100, week: 2300, leapS: 18, valid: 7, tAcc: 30)),
        .navHPPOSLLH(
            UBXNavHPPOSLLH(
                iTOW: 9, lon: 1_705_001_328, lat: -458_775_252, height: 29338, hMSL: 27548,
                lonHp: -3, latHp: 21, heightHp: 4, hMSLHp: -3, hAcc: 140, vAcc: 200)),
        .hnrPVT(
            UBXHnrPVT(
                iTOW: 10, year: 2024, month: 1, day: 30, hour: 15, minute: 32, second: 0, valid: 7, nano: 3,
                gpsFix: 4, flags: 0x0D, lon: 93_117_308, lat: 487_410_002, height: 315_424, hMSL: 267_813,
                gSpeed: 805, speed: 810, headMot: 18_397_720, headVeh: 18_397_720, hAcc: 5099, vAcc: 11285,
                sAcc: 280, headAcc: 484_860)),
        .monVER(
            UBXMonVER(
                softwareVersion: "ROM CORE 3.01 (107888)", hardwareVersion: "00080000",
                extensions: ["FWVER=SPG 3.01", "PROTVER=18.00", "MOD=NEO-M8N"])),
        .ack(UBXAck(.cfgVALSET)),
        .nak(UBXAck(.cfgPRT)),
        .inf(UBXInf(level: .notice, text: "ANTSUPERV=AC SD PDoS SR")),
        .cfgValGet(.request(layer: 0, position: 0, keys: [UBXConfigItem.rateMeas, UBXConfigItem.uart1Baudrate])),
        .cfgValGet(
            .response(
                layer: 0, position: 0,
                items: [
                    UBXConfigItem(key: UBXConfigItem.rateMeas, value: 100),
                    UBXConfigItem(key: UBXConfigItem.uart1Baudrate, value: 115_200),
                    UBXConfigItem(key: UBXConfigItem.hwAntCfgPwrdown, value: 1),
                ])),
        .cfgValSet(
            UBXCfgValSet(layers: [.ram, .bbr], items: [UBXConfigItem(key: UBXConfigItem.msgoutNavSATI2C, value: 5)])),
        .cfgMsg(UBXCfgMsg(message: .navPVT, rateOnAllPorts: 1)),
        .cfgMsg(UBXCfgMsg(message: .navSAT, rates: [1])),
        .cfgPrt(UBXCfgPrt.uart(baudRate: 115_200, inProtocols: 0x03, outProtocols: 0x01)),
        .cfgRate(UBXCfgRate(measRate: 100, navRate: 1, timeRef: 1)),
        .cfgRst(.gnssStop),
        .rxmPMREQ(.backup(wakeupSources: [.uartRX, .extint0])),
        .rxmPMREQ(.backupUntilWoken),
        .rxmRTCM(UBXRxmRTCM(msgType: 1077, refStation: 2003, use: .used)),
        .rxmRTCM(UBXRxmRTCM(msgType: 0, refStation: 0, use: .notUsed, crcFailed: true)),
        .poll(.navSAT),
        .navSVINFO(
            UBXNavSVINFO(
                iTOW: 11, globalFlags: 0x03,
                channels: [
                    .init(chn: 2, svid: 8, flags: 0x0D, quality: 4, cno: 16, elev: 36, azim: 57, prRes: -1021),
                    .init(chn: 255, svid: 255, flags: 0xFF, quality: 0xFF, cno: 255, elev: -128, azim: -1, prRes: .min),
                ])),
        .navSVINFO(UBXNavSVINFO(iTOW: 12, channels: [])),
        .other(UBX.MessageID(0x0A, 0x09), payload: [1, 2, 3, 4]),
    ]

    @Test("typed messages round-trip through frame, framer and decoder", arguments: messages)
    func roundTrip(message: UBXMessage) throws {
        var framer = Framer()
        framer.append(contentsOf: message.frame)
        let next = framer.next()
        let frame = try #require(next)
        let decoded = try UBXMessage(frame: frame.bytes)
        #expect(decoded == message)
        #expect(decoded.frame == message.frame)
    }

    @Test("the round trip covers every case of UBXMessage")
    func everyCase() {
        // `caseName` switches over every case, so a new case does not build here until it is named; the count
        // then fails until `messages` (or AidingMessageTests' messages, for issue 16's) has an example of it.
        #expect(Set((Self.messages + AidingMessageTests.messages).map(Self.caseName)).count == 35)
    }

    static func caseName(_ message: UBXMessage) -> String {
        switch message {
        case .navPVT: "NAV-PVT"
        case .navSAT: "NAV-SAT"
        case .navSVINFO: "NAV-SVINFO"
        case .navStatus: "NAV-STATUS"
        case .navDOP: "NAV-DOP"
        case .navTimeUTC: "NAV-TIMEUTC"
        case .navSOL: "NAV-SOL"
        case .navPOSLLH: "NAV-POSLLH"
        case .navVELNED: "NAV-VELNED"
        case .navTimeGPS: "NAV-TIMEGPS"
        case .navHPPOSLLH: "NAV-HPPOSLLH"
        case .hnrPVT: "HNR-PVT"
        case .monVER: "MON-VER"
        case .ack: "ACK-ACK"
        case .nak: "ACK-NAK"
        case .inf: "INF"
        case .cfgValGet: "CFG-VALGET"
        case .cfgValSet: "CFG-VALSET"
        case .cfgMsg: "CFG-MSG"
        case .cfgPrt: "CFG-PRT"
        case .cfgRate: "CFG-RATE"
        case .cfgRst: "CFG-RST"
        case .rxmPMREQ: "RXM-PMREQ"
        case .rxmRTCM: "RXM-RTCM"
        case .mgaDBD: "MGA-DBD"
        case .mgaAck: "MGA-ACK"
        case .mgaIniTimeUTC: "MGA-INI-TIME_UTC"
        case .mgaIniPosLLH: "MGA-INI-POS_LLH"
        case .secUniqID: "SEC-UNIQID"
        case .cfgRXM: "CFG-RXM"
        case .cfgPM2: "CFG-PM2"
        case .cfgPMS: "CFG-PMS"
        case .cfgNavX5: "CFG-NAVX5"
        case .poll: "poll"
        case .other: "other"
        }
    }

    @Test("units: NAV-PVT in degrees, metres, m/s; time with nanoseconds")
    func units() throws {
        let pvt = try #require(Self.messages.lazy.compactMap { if case .navPVT(let m) = $0 { m } else { nil } }.first)
        #expect(pvt.time == Self.time)
        #expect(abs(pvt.latitude + 45.877525) < 1e-9 && abs(pvt.altitudeMSL - 27.548) < 1e-9)
        #expect(abs(pvt.groundSpeed - 1.234) < 1e-9 && abs(pvt.headingOfMotion - 271.5) < 1e-9)
        let version = try #require(
            Self.messages.lazy.compactMap { if case .monVER(let m) = $0 { m } else { nil } }.first)
        #expect(version.protocolVersion == 18.0)
    }

    /// Three channels of the first NAV-SVINFO of gpsd's navisys-gr701w.log capture (u-blox 7), cut out with
    /// pyubx2 (which reads them as below): GPS 8 used, SBAS 133 and QZSS 194 unhealthy.
    static let svinfoFrame = TestVectorTests.hex(
        "B5 62 01 30 2C 00 98 94 DE 17 03 03 00 00 02 08 0D 04 10 24 39 00 03 FC FF FF 0A 85 14 01 00 23 C5 00 "
            + "00 00 00 00 12 C2 10 01 00 A5 00 00 00 00 00 00 1F C6")

    @Test("NAV-SVINFO: a u-blox 7 frame decodes field by field and encodes to the same bytes")
    func navSVINFO() throws {
        let message = try UBXMessage(frame: ArraySlice(Self.svinfoFrame))
        guard case .navSVINFO(let m) = message else {
            Issue.record("decoded as \(message.messageID)")
            return
        }
        #expect(m.iTOW == 400_463_000 && m.chipGeneration == 3 && m.channels.count == 3)
        let gps = m.channels[0]
        #expect(gps.chn == 2 && gps.svid == 8 && gps.cno == 16 && gps.elev == 36 && gps.azim == 57)
        #expect(gps.used && gps.orbitAvailable && gps.orbitIsEphemeris && !gps.unhealthy && !gps.smoothed)
        #expect(gps.qualityIndicator == 4 && gps.prRes == -1021 && gps.pseudorangeResidual == -10.21)
        let sbas = m.channels[1]
        #expect(sbas.svid == 133 && sbas.unhealthy && !sbas.used && sbas.qualityIndicator == 1 && sbas.azim == 197)
        let qzss = m.channels[2]
        #expect(qzss.svid == 194 && qzss.elev == -91 && qzss.unhealthy && !qzss.orbitAvailable)
        #expect(m.channels.map { $0.satellite?.prn } == [8, 46, 194])
        #expect(m.channels.map { $0.satellite?.system } == [.gps, .sbas, .qzss])
        #expect(message.messageID == .navSVINFO && message.messageID.description == "NAV-SVINFO")
        #expect(m.frame == Self.svinfoFrame)
        // qualityInd is the low nibble; the high one is reserved.
        #expect(UBXNavSVINFO.Channel(chn: 0, svid: 1, quality: 0xF7, cno: 0, elev: 0, azim: 0).qualityIndicator == 7)
    }

    @Test(
        "NAV-SVINFO: a payload that is not 8 + 12 x numCh bytes is a typed error",
        arguments: [
            (numCh: 3, blocks: 2), (numCh: 1, blocks: 2), (numCh: 0, blocks: 1), (numCh: 255, blocks: 3),
        ])
    func navSVINFOLength(numCh: UInt8, blocks: Int) {
        var payload: [UInt8] = [1, 0, 0, 0, numCh, 0, 0, 0]
        payload += [UInt8](repeating: 7, count: 12 * blocks)
        #expect(throws: DecodeError.ubxLength(messageClass: 1, id: 0x30, length: payload.count)) {
            try UBXMessage(frame: ArraySlice(UBX.frame(.navSVINFO, payload: payload)))
        }
        // A header shorter than 8 bytes.
        #expect(throws: DecodeError.ubxLength(messageClass: 1, id: 0x30, length: 5)) {
            try UBXMessage(frame: ArraySlice(UBX.frame(.navSVINFO, payload: [1, 2, 3, 4, 0])))
        }
    }

    @Test("NAV-SVINFO: a frame whose numCh disagrees with its length costs that frame only")
    func navSVINFOCorruptFrame() {
        var bad: [UInt8] = [1, 0, 0, 0, 2, 0, 0, 0]
        bad += [UInt8](repeating: 0, count: 12)
        let good = UBXNavSVINFO(iTOW: 2, channels: [.init(chn: 0, svid: 5, cno: 30, elev: 10, azim: 20)])
        let empty = UBXNavSVINFO(iTOW: 3, channels: [])
        let result = runPipeline(UBX.frame(.navSVINFO, payload: bad) + good.frame + empty.frame)
        #expect(result.decodeErrors == [.ubxLength(messageClass: 1, id: 0x30, length: 20)])
        #expect(result.messages == [.ubx(.navSVINFO(good)), .ubx(.navSVINFO(empty))])
    }

    @Test("a wrong payload length is a typed error")
    func wrongLength() {
        let frame = UBX.frame(.navPVT, payload: [UInt8](repeating: 0, count: 91))
        #expect(throws: DecodeError.ubxLength(messageClass: 1, id: 7, length: 91)) {
            try UBXMessage(frame: ArraySlice(frame))
        }
    }
}

@Suite("UBX fixed-width strings")
struct UBXFixedStringTests {
    // Found by the receiver fuzz target: a MON-VER extension of bytes that are no UTF-8 decoded to more
    // U+FFFD (three bytes each) than its 30 bytes hold, so the message encoded to other bytes and decoded
    // to another message. Now the decoded string is cut at a character to fit its field.
    @Test("a MON-VER field of bytes that are no UTF-8 decodes to a string that fits, and round-trips")
    func invalidUTF8() throws {
        var payload = Array("ROM CORE 1.00".utf8) + [UInt8](repeating: 0, count: 17)
        payload += Array("00190000".utf8) + [UInt8](repeating: 0, count: 2)
        payload += Array("$GL`".utf8) + [UInt8](repeating: 0xFF, count: 26)
        let frame = UBX.frame(.monVER, payload: payload)
        guard case .monVER(let version) = try UBXMessage(frame: ArraySlice(frame)) else {
            Issue.record("not a MON-VER")
            return
        }
        let field = try #require(version.extensions.first)
        #expect(field.hasPrefix("$GL`") && field.utf8.count <= 30, "\(field)")
        let again = try UBXMessage(frame: ArraySlice(UBXMessage.monVER(version).frame))
        #expect(again == .monVER(version))
    }

    @Test("a string longer than its field is cut at a character, never inside one")
    func cutAtACharacter() throws {
        let version = UBXMonVER(softwareVersion: "a" + String(repeating: "é", count: 20), hardwareVersion: "0019")
        let again = try UBXMessage(frame: ArraySlice(UBXMessage.monVER(version).frame))
        guard case .monVER(let decoded) = again else {
            Issue.record("not a MON-VER")
            return
        }
        // 30 bytes end inside the 15th é (two bytes each, after the a): it is left out whole.
        #expect(decoded.softwareVersion == "a" + String(repeating: "é", count: 14))
    }
}
