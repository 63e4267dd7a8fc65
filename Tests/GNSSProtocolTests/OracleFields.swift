// Our messages as the oracles' field dictionaries (pyubx2 / pynmeagps names, normalised as
// Oracles/differential.py describes), so both sides can be compared field by field.

import GNSSProtocol

enum OracleFields {
    typealias Fields = [String: Any]

    static func n(_ i: Int) -> String { i < 9 ? "0\(i + 1)" : "\(i + 1)" }

    /// The oracle's type key (`NAV-PVT/GET`) and fields of a UBX message.
    static func ubx(_ message: UBXMessage) -> (String, Fields)? {
        switch message {
        case .navPVT(let m):
            return (
                "NAV-PVT/GET",
                [
                    "iTOW": m.iTOW, "year": m.year, "month": m.month, "day": m.day, "hour": m.hour, "min": m.minute,
                    "second": m.second, "valid": m.valid, "tAcc": m.tAcc, "nano": m.nano, "fixType": m.fixType,
                    "flags": m.flags, "flags2": m.flags2, "numSV": m.numSV, "lon": m.lon, "lat": m.lat,
                    "height": m.height,
                    "hMSL": m.hMSL, "hAcc": m.hAcc, "vAcc": m.vAcc, "velN": m.velN, "velE": m.velE, "velD": m.velD,
                    "gSpeed": m.gSpeed, "headMot": m.headMot, "sAcc": m.sAcc, "headAcc": m.headAcc, "pDOP": m.pDOP,
                    "flags3": m.flags3, "headVeh": m.headVeh, "magDec": m.magDec, "magAcc": m.magAcc,
                ].mapValues(int)
            )
        case .navSAT(let m):
            var f: Fields = ["iTOW": int(m.iTOW), "version": int(m.version), "numSvs": m.satellites.count]
            for (i, s) in m.satellites.enumerated() {
                f["gnssId_" + n(i)] = int(s.gnssId)
                f["svId_" + n(i)] = int(s.svId)
                f["cno_" + n(i)] = int(s.cno)
                f["elev_" + n(i)] = int(s.elev)
                f["azim_" + n(i)] = int(s.azim)
                f["prRes_" + n(i)] = int(s.prRes)
                f["flags_" + n(i)] = int(s.flags)
            }
            return ("NAV-SAT/GET", f)
        case .navSVINFO(let m):
            var f: Fields = ["iTOW": int(m.iTOW), "numCh": m.channels.count, "globalFlags": int(m.globalFlags)]
            for (i, c) in m.channels.enumerated() {
                f["chn_" + n(i)] = int(c.chn)
                f["svid_" + n(i)] = int(c.svid)
                f["flags_" + n(i)] = int(c.flags)
                f["quality_" + n(i)] = int(c.quality)
                f["cno_" + n(i)] = int(c.cno)
                f["elev_" + n(i)] = int(c.elev)
                f["azim_" + n(i)] = int(c.azim)
                f["prRes_" + n(i)] = int(c.prRes)
            }
            return ("NAV-SVINFO/GET", f)
        case .navStatus(let m):
            return (
                "NAV-STATUS/GET",
                [
                    "iTOW": m.iTOW, "gpsFix": m.gpsFix, "flags": m.flags, "fixStat": m.fixStat,
                    "flags2": m.flags2, "ttff": m.ttff, "msss": m.msss,
                ].mapValues(int)
            )
        case .navDOP(let m):
            return (
                "NAV-DOP/GET",
                [
                    "iTOW": m.iTOW, "gDOP": m.gDOP, "pDOP": m.pDOP, "tDOP": m.tDOP, "vDOP": m.vDOP,
                    "hDOP": m.hDOP, "nDOP": m.nDOP, "eDOP": m.eDOP,
                ].mapValues(int)
            )
        case .navTimeUTC(let m):
            return (
                "NAV-TIMEUTC/GET",
                [
                    "iTOW": m.iTOW, "tAcc": m.tAcc, "nano": m.nano, "year": m.year,
                    "month": m.month, "day": m.day, "hour": m.hour, "min": m.minute,
                    "sec": m.second, "validflags": m.valid,
                ].mapValues(int)
            )
        case .navSOL(let m):
            return (
                "NAV-SOL/GET",
                [
                    "iTOW": m.iTOW, "fTOW": m.fTOW, "week": m.week, "gpsFix": m.gpsFix,
                    "flags": m.flags, "ecefX": m.ecefX, "ecefY": m.ecefY, "ecefZ": m.ecefZ,
                    "pAcc": m.pAcc, "ecefVX": m.ecefVX, "ecefVY": m.ecefVY, "ecefVZ": m.ecefVZ,
                    "sAcc": m.sAcc, "pDOP": m.pDOP, "numSV": m.numSV,
                ].mapValues(int)
            )
        case .navPOSLLH(let m):
            return (
                "NAV-POSLLH/GET",
                [
                    "iTOW": m.iTOW, "lon": m.lon, "lat": m.lat, "height": m.height,
                    "hMSL": m.hMSL, "hAcc": m.hAcc, "vAcc": m.vAcc,
                ].mapValues(int)
            )
        case .navVELNED(let m):
            return (
                "NAV-VELNED/GET",
                [
                    "iTOW": m.iTOW, "velN": m.velN, "velE": m.velE, "velD": m.velD,
                    "speed": m.speed, "gSpeed": m.gSpeed, "heading": m.heading, "sAcc": m.sAcc,
                    "cAcc": m.cAcc,
                ].mapValues(int)
            )
        case .navTimeGPS(let m):
            return (
                "NAV-TIMEGPS/GET",
                [
                    "iTOW": m.iTOW, "fTOW": m.fTOW, "week": m.week, "leapS": m.leapS,
                    "valid": m.valid, "tAcc": m.tAcc,
                ].mapValues(int)
            )
        case .navHPPOSLLH(let m):
            // pyubx2 folds the high-precision parts in: 1e-9 degree and 0.1 mm.
            return (
                "NAV-HPPOSLLH/GET",
                [
                    "version": int(m.version), "flags": int(m.flags), "iTOW": int(m.iTOW),
                    "lon": Int(m.lon) * 100 + Int(m.lonHp), "lat": Int(m.lat) * 100 + Int(m.latHp),
                    "height": Int(m.height) * 10 + Int(m.heightHp),
                    "hMSL": Int(m.hMSL) * 10 + Int(m.hMSLHp), "hAcc": int(m.hAcc), "vAcc": int(m.vAcc),
                ]
            )
        case .hnrPVT(let m):
            return (
                "HNR-PVT/GET",
                [
                    "iTOW": m.iTOW, "year": m.year, "month": m.month, "day": m.day, "hour": m.hour,
                    "min": m.minute, "second": m.second, "valid": m.valid, "nano": m.nano,
                    "gpsFix": m.gpsFix, "flags": m.flags, "lon": m.lon, "lat": m.lat,
                    "height": m.height, "hMSL": m.hMSL, "gSpeed": m.gSpeed, "speed": m.speed,
                    "headMot": m.headMot, "headVeh": m.headVeh, "hAcc": m.hAcc, "vAcc": m.vAcc,
                    "sAcc": m.sAcc, "headAcc": m.headAcc,
                ].mapValues(int)
            )
        case .monVER(let m):
            var f: Fields = ["swVersion": m.softwareVersion, "hwVersion": m.hardwareVersion]
            for (i, e) in m.extensions.enumerated() { f["extension_" + n(i)] = e }
            return ("MON-VER/GET", f)
        case .ack(let m):
            return ("ACK-ACK/GET", ["clsID": int(m.acknowledged.messageClass), "msgID": int(m.acknowledged.id)])
        case .nak(let m):
            return ("ACK-NAK/GET", ["clsID": int(m.acknowledged.messageClass), "msgID": int(m.acknowledged.id)])
        case .inf(let m):
            let name = ["INF-ERROR", "INF-WARNING", "INF-NOTICE", "INF-TEST", "INF-DEBUG"][Int(m.level.rawValue)]
            return (name + "/GET", ["message": m.text])
        case .cfgValGet(.response(let layer, let position, let items)):
            var f: Fields = ["version": 1, "layer": int(layer), "position": int(position)]
            for item in items { f[configName(item.key)] = int(item.value) }
            return ("CFG-VALGET/GET", f)
        case .cfgValGet(.request(let layer, let position, let keys)):
            var f: Fields = ["version": 0, "layer": int(layer), "position": int(position)]
            for (i, key) in keys.enumerated() { f["keys_" + n(i)] = int(key) }
            return ("CFG-VALGET/POLL", f)
        case .cfgValSet(let m):
            var f: Fields = [
                "version": int(m.version), "layers": int(m.layers.rawValue), "transaction": int(m.transaction),
            ]
            for item in m.items { f[configName(item.key)] = int(item.value) }
            return ("CFG-VALSET/SET", f)
        case .cfgMsg(let m) where m.rates.count == 6:
            return (
                "CFG-MSG/SET",
                [
                    "msgClass": int(m.message.messageClass), "msgID": int(m.message.id),
                    "rateDDC": int(m.rates[0]), "rateUART1": int(m.rates[1]), "rateUART2": int(m.rates[2]),
                    "rateUSB": int(m.rates[3]), "rateSPI": int(m.rates[4]),
                ]
            )
        case .cfgPrt(let m):
            return (
                "CFG-PRT/SET",
                [
                    "portID": m.portID, "txReady": m.txReady, "UARTmode": m.mode,
                    "baudRate": m.baudRate, "inProtoMask": m.inProtocols,
                    "outProtoMask": m.outProtocols, "flags": m.flags,
                ].mapValues(int)
            )
        case .cfgRate(let m):
            return (
                "CFG-RATE/SET", ["measRate": int(m.measRate), "navRate": int(m.navRate), "timeRef": int(m.timeRef)]
            )
        case .cfgRst(let m):
            return ("CFG-RST/SET", ["navBbrMask": int(m.navBbrMask), "resetMode": int(m.resetMode)])
        case .rxmPMREQ(let m):
            if let sources = m.wakeupSources {
                return (
                    "RXM-PMREQ/SET",
                    [
                        "version": 0, "duration": int(m.duration), "flags": int(m.flags),
                        "wakeupSources": int(sources.rawValue),
                    ]
                )
            }
            return ("RXM-PMREQ-S/SET", ["duration": int(m.duration), "flags": int(m.flags)])
        case .poll(let id):
            return ("\(id)/POLL", [:])
        // Aiding and power save (issue 16).
        case .mgaDBD(let m):
            // pyubx2 decodes the bytes after the 12 reserved ones, one field each.
            var f: Fields = [:]
            for (i, byte) in m.payload.dropFirst(12).enumerated() { f["data_" + n(i)] = int(byte) }
            return ("MGA-DBD/GET", f)
        case .mgaAck(let m) where m.type <= 1:
            return (
                m.type == 1 ? "MGA-ACK-DATA0/GET" : "MGA-NAK-DATA0/GET",
                [
                    "type": m.type, "version": m.version, "infoCode": m.infoCode, "msgId": m.msgId,
                    "msgPayloadStart": m.msgPayloadStart,
                ].mapValues(int)
            )
        case .mgaIniTimeUTC(let m):
            return (
                "MGA-INI-TIME-UTC/SET",
                [
                    "type": int(UBXMgaIniTimeUTC.type), "version": int(m.version), "ref": int(m.reference.rawValue),
                    "leapSecs": int(m.leapSeconds), "year": int(m.year), "month": int(m.month), "day": int(m.day),
                    "hour": int(m.hour), "minute": int(m.minute), "second": int(m.second), "ns": int(m.nanoseconds),
                    "tAccS": int(m.accuracySeconds), "tAccNs": int(m.accuracyNanoseconds),
                ]
            )
        case .mgaIniPosLLH(let m):
            return (
                "MGA-INI-POS-LLH/SET",
                [
                    "type": int(UBXMgaIniPosLLH.type), "version": int(m.version), "lat": int(m.lat), "lon": int(m.lon),
                    "alt": int(m.alt), "posAcc": int(m.posAcc),
                ]
            )
        case .secUniqID(let m) where m.uniqueID.count == 5:
            // pyubx2 1.4.0 reads the id as one little-endian integer (U5), and knows only this form.
            let id = m.uniqueID.enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            return ("SEC-UNIQID/GET", ["version": int(m.version), "uniqueId": id])
        case .cfgPM2(let m) where m.extintInactivity != nil:
            // pyubx2 1.4.0 knows the 48-byte form only.
            return (
                "CFG-PM2/SET",
                [
                    "version": int(m.version), "maxStartupStateDur": int(m.maxStartupStateDur), "flags": int(m.flags),
                    "updatePeriod": int(m.updatePeriod), "searchPeriod": int(m.searchPeriod),
                    "gridOffset": int(m.gridOffset), "onTime": int(m.onTime), "minAcqTime": int(m.minAcqTime),
                    "extintInactivityMs": int(m.extintInactivity ?? 0),
                ]
            )
        case .cfgRXM(let m):
            return ("CFG-RXM/SET", ["lpMode": int(m.lpMode)])
        case .cfgPMS(let m):
            return (
                "CFG-PMS/SET",
                [
                    "version": int(m.version), "powerSetupValue": int(m.powerSetupValue), "period": int(m.period),
                    "onTime": int(m.onTime),
                ]
            )
        case .cfgNavX5(let m):
            return (
                "CFG-NAVX5/SET",
                [
                    "version": int(m.version), "mask1": int(m.mask1), "mask2": int(m.mask2), "minSVs": int(m.minSVs),
                    "maxSVs": int(m.maxSVs), "minCNO": int(m.minCNO), "iniFix3D": int(m.iniFix3D),
                    "ackAiding": int(m.ackAiding), "wknRollover": int(m.wknRollover),
                    "sigAttenCompMode": int(m.sigAttenCompMode), "usePPP": int(m.usePPP), "aopCfg": int(m.aopCfg),
                    "aopOrbMaxErr": int(m.aopOrbMaxErr), "useAdr": int(m.useAdr),
                ]
            )
        default:
            return nil
        }
    }

    static func configName(_ key: UInt32) -> String {
        let hex = String(key, radix: 16)
        return "cfg_" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    static func int(_ value: some BinaryInteger) -> Int { Int(truncatingIfNeeded: value) }
    static func int(_ value: Any) -> Any {
        switch value {
        case let v as UInt8: return Int(v)
        case let v as Int8: return Int(v)
        case let v as UInt16: return Int(v)
        case let v as Int16: return Int(v)
        case let v as UInt32: return Int(v)
        case let v as Int32: return Int(v)
        case let v as UInt64: return Int(truncatingIfNeeded: v)
        default: return value
        }
    }

    // MARK: NMEA

    static func time(_ t: TimeOfDay?) -> Any {
        guard let t else { return NSNull() }
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let micro = String(t.nanosecond / 1000)
        return
            "\(two(t.hour)):\(two(t.minute)):\(two(t.second)).\(String(repeating: "0", count: 6 - micro.count) + micro)"
    }

    static func opt(_ v: Any?) -> Any { v ?? NSNull() }
    static func ch(_ v: Unicode.Scalar?) -> Any { v.map { String($0) } ?? NSNull() }
    static func hemisphere(_ v: Double?, _ positive: String, _ negative: String) -> Any {
        v.map { $0 < 0 ? negative : positive } ?? NSNull()
    }

    static func nmea(_ sentence: NMEASentence) -> (String, Fields)? {
        switch sentence {
        case .gga(let s):
            return (
                "GGA",
                [
                    "time": time(s.time), "lat": opt(s.latitude), "NS": hemisphere(s.latitude, "N", "S"),
                    "lon": opt(s.longitude), "EW": hemisphere(s.longitude, "E", "W"), "quality": opt(s.quality),
                    "numSV": opt(s.satellitesUsed), "HDOP": opt(s.hdop), "alt": opt(s.altitudeMSL),
                    "altUnit": s.altitudeMSL == nil ? NSNull() : "M", "sep": opt(s.geoidSeparation),
                    "sepUnit": s.geoidSeparation == nil ? NSNull() : "M", "diffAge": opt(s.dgpsAge),
                    "diffStation": opt(s.dgpsStation),
                ]
            )
        case .rmc(let s):
            return (
                "RMC",
                [
                    "time": time(s.time), "status": ch(s.status), "lat": opt(s.latitude),
                    "NS": hemisphere(s.latitude, "N", "S"), "lon": opt(s.longitude),
                    "EW": hemisphere(s.longitude, "E", "W"), "spd": opt(s.speedKnots), "cog": opt(s.course),
                    "date": s.date.map { $0.description } ?? NSNull(),
                    "mv": opt(s.magneticVariation.map { abs($0) }),
                    "mvEW": hemisphere(s.magneticVariation, "E", "W"), "posMode": ch(s.modeIndicator),
                    "navStatus": ch(s.navigationStatus),
                ]
            )
        case .gsa(let s):
            var f: Fields = [
                "opMode": ch(s.selectionMode), "navMode": opt(s.fixType), "PDOP": opt(s.pdop),
                "HDOP": opt(s.hdop), "VDOP": opt(s.vdop), "systemId": opt(s.systemID),
            ]
            for i in 0..<12 { f["svid_" + n(i)] = i < s.satelliteIDs.count ? s.satelliteIDs[i] : NSNull() }
            return ("GSA", f)
        case .gsv(let s):
            var f: Fields = [
                "numMsg": s.sentenceCount, "msgNum": s.sentenceNumber, "numSV": opt(s.satellitesInView),
                "signalID": opt(s.signalID),
            ]
            for (i, sat) in s.satellites.enumerated() {
                f["svid_" + n(i)] = sat.id
                f["elv_" + n(i)] = opt(sat.elevation)
                f["az_" + n(i)] = opt(sat.azimuth)
                f["cno_" + n(i)] = opt(sat.snr)
            }
            return ("GSV", f)
        case .vtg(let s):
            return (
                "VTG",
                [
                    "cogt": opt(s.courseTrue), "cogtUnit": "T", "cogm": opt(s.courseMagnetic), "cogmUnit": "M",
                    "sogn": opt(s.speedKnots), "sognUnit": "N", "sogk": opt(s.speedKmh), "sogkUnit": "K",
                    "posMode": ch(s.modeIndicator),
                ]
            )
        case .gll(let s):
            return (
                "GLL",
                [
                    "lat": opt(s.latitude), "NS": hemisphere(s.latitude, "N", "S"), "lon": opt(s.longitude),
                    "EW": hemisphere(s.longitude, "E", "W"), "time": time(s.time), "status": ch(s.status),
                    "posMode": ch(s.modeIndicator),
                ]
            )
        case .gns(let s):
            return (
                "GNS",
                [
                    "time": time(s.time), "lat": opt(s.latitude), "NS": hemisphere(s.latitude, "N", "S"),
                    "lon": opt(s.longitude), "EW": hemisphere(s.longitude, "E", "W"),
                    "posMode": opt(s.modeIndicators), "numSV": opt(s.satellitesUsed), "HDOP": opt(s.hdop),
                    "alt": opt(s.altitudeMSL), "sep": opt(s.geoidSeparation), "diffAge": opt(s.dgpsAge),
                    "diffStation": opt(s.dgpsStation), "navStatus": ch(s.navigationStatus),
                ]
            )
        case .gst(let s):
            return (
                "GST",
                [
                    "time": time(s.time), "rangeRms": opt(s.rangeRMS), "stdMajor": opt(s.semiMajor),
                    "stdMinor": opt(s.semiMinor), "orient": opt(s.orientation), "stdLat": opt(s.latitudeError),
                    "stdLong": opt(s.longitudeError), "stdAlt": opt(s.altitudeError),
                ]
            )
        case .zda(let s):
            func two(_ v: Int?) -> Any { v.map { $0 < 10 && $0 >= 0 ? "0\($0)" : "\($0)" } ?? NSNull() }
            return (
                "ZDA",
                [
                    "time": time(s.time), "day": opt(s.day), "month": opt(s.month), "year": opt(s.year),
                    "ltzh": two(s.localZoneHours), "ltzn": two(s.localZoneMinutes),
                ]
            )
        case .txt(let s):
            return (
                "TXT",
                [
                    "numMsg": opt(s.sentenceCount), "msgNum": opt(s.sentenceNumber), "msgType": opt(s.textID),
                    "text": s.text,
                ]
            )
        default:
            return nil
        }
    }
}

import Foundation
