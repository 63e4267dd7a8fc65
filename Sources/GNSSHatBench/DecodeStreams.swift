// Deterministic receiver streams for the decode benchmark, built with GNSSProtocol's encoders:
// a multi-GNSS u-blox at 10 Hz in NMEA 4.10, the same in UBX, and both mixed with 1 % bad bytes.

import GNSSProtocol

/// SplitMix64: the same bytes on every run and machine.
struct BenchRandom {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

enum DecodeStreams {
    struct Satellite {
        var system: GNSSSystem
        var svid: Int
        var elevation: Double
        var azimuth: Double
        var cno: Int
        var used: Bool
    }

    /// The receiver's state at epoch `index` (10 Hz from 2024-05-17T00:00:00Z), moving on a circle.
    struct Epoch {
        var time: GNSSTime
        var latitude: Double
        var longitude: Double
        var altitude: Double
        var speed: Double
        var course: Double
        var satellites: [Satellite]
        var iTOW: UInt32
    }

    static let start = GNSSTime(
        date: GNSSDate(year: 2024, month: 5, day: 17), time: TimeOfDay(hour: 0, minute: 0, second: 0))

    static func epoch(_ index: Int, _ random: inout BenchRandom) -> Epoch {
        let t = Double(index) / 10
        let angle = t / 600 * 2 * .pi
        var satellites: [Satellite] = []
        for (system, count) in [(GNSSSystem.gps, 12), (.glonass, 8), (.galileo, 8)] {
            for n in 0..<count {
                let phase = Double(n) * 0.7 + Double(system.rawValue)
                satellites.append(
                    Satellite(
                        system: system, svid: n + 1,
                        elevation: (5 + 80 * abs(sine(phase + t / 3000))).rounded(),
                        azimuth: ((phase * 57.3 + t / 20).truncatingRemainder(dividingBy: 360)).rounded(),
                        cno: 20 + random.below(30), used: n % 3 != 2))
            }
        }
        return Epoch(
            time: GNSSTime(nanosecondsSinceEpoch: start.nanosecondsSinceEpoch + Int64(index) * 100_000_000),
            latitude: 44.0689 + 0.001 * sine(angle), longitude: -121.3143 + 0.001 * cosine(angle),
            altitude: 1140 + 5 * sine(angle * 3), speed: 0.5 + random.unit(),
            course: (angle * 57.3 + 90).truncatingRemainder(dividingBy: 360),
            satellites: satellites, iTOW: UInt32((345_600 + index * 100) % 604_800_000))
    }

    static func appendNMEA(_ e: Epoch, to bytes: inout [UInt8]) {
        let tod = e.time.timeOfDay
        let knots = e.speed / metresPerSecondPerKnot
        let used = e.satellites.filter(\.used).count
        bytes += NMEARMC(
            talker: .gn, time: tod, status: "A", latitude: e.latitude, longitude: e.longitude,
            speedKnots: knots, course: e.course, date: e.time.date, modeIndicator: "A",
            navigationStatus: "V"
        ).sentence()
        bytes += NMEAVTG(
            talker: .gn, courseTrue: e.course, speedKnots: knots, speedKmh: e.speed * 3.6,
            modeIndicator: "A"
        ).sentence()
        bytes += NMEAGGA(
            talker: .gn, time: tod, latitude: e.latitude, longitude: e.longitude, quality: 1,
            satellitesUsed: used, hdop: 0.78, altitudeMSL: e.altitude, geoidSeparation: -21.4
        ).sentence()
        for (system, systemID) in [(GNSSSystem.gps, 1), (.glonass, 2), (.galileo, 3)] {
            let ids = e.satellites.filter { $0.system == system && $0.used }.map {
                system == .glonass ? $0.svid + 64 : $0.svid
            }
            bytes += NMEAGSA(
                talker: .gn, fixType: 3, satelliteIDs: NMEASatelliteIDs(ids), pdop: 1.31, hdop: 0.78,
                vdop: 1.05, systemID: systemID
            ).sentence()
        }
        for (system, talker, signal) in [(GNSSSystem.gps, NMEATalker.gp, 1), (.glonass, .gl, 1), (.galileo, .ga, 7)] {
            let satellites = e.satellites.filter { $0.system == system }.map {
                GSVSatellite(
                    id: system == .glonass ? $0.svid + 64 : $0.svid, elevation: Int($0.elevation),
                    azimuth: Int($0.azimuth), snr: $0.cno)
            }
            for sentence in NMEAGSV.sentences(talker: talker, satellites: satellites, signalID: signal) {
                bytes += sentence
            }
        }
        bytes += NMEAGLL(
            talker: .gn, latitude: e.latitude, longitude: e.longitude, time: tod, status: "A",
            modeIndicator: "A"
        ).sentence()
    }

    static func appendUBX(_ e: Epoch, to bytes: inout [UInt8]) {
        let used = e.satellites.filter(\.used).count
        bytes +=
            UBXNavPVT(
                iTOW: e.iTOW, time: e.time, fixType: 3, numSV: UInt8(used), latitude: e.latitude,
                longitude: e.longitude, altitudeHAE: e.altitude - 21.4, altitudeMSL: e.altitude,
                groundSpeed: e.speed, headingOfMotion: e.course
            ).frame
        let satellites = e.satellites.map {
            UBXNavSAT.Satellite(
                gnssId: $0.system.rawValue, svId: UInt8($0.svid), cno: UInt8($0.cno),
                elev: Int8($0.elevation), azim: Int16($0.azimuth), prRes: 12,
                flags: $0.used ? 0x1F : 0x04)
        }
        bytes += UBXNavSAT(iTOW: e.iTOW, satellites: satellites).frame
        bytes += UBXNavDOP(iTOW: e.iTOW, gDOP: 150, pDOP: 131, tDOP: 80, vDOP: 105, hDOP: 78, nDOP: 55, eDOP: 56).frame
        bytes +=
            UBXNavStatus(
                iTOW: e.iTOW, gpsFix: 3, flags: 0x0D, fixStat: 0, flags2: 0, ttff: 28_000,
                msss: e.iTOW
            ).frame
        bytes += UBXNavTimeUTC(iTOW: e.iTOW, time: e.time).frame
    }

    static func nmea(bytes target: Int) -> [UInt8] {
        var random = BenchRandom(state: 1)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(target + 4096)
        var index = 0
        while bytes.count < target {
            appendNMEA(epoch(index, &random), to: &bytes)
            index += 1
        }
        return bytes
    }

    static func ubx(bytes target: Int) -> [UInt8] {
        var random = BenchRandom(state: 2)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(target + 4096)
        var index = 0
        while bytes.count < target {
            appendUBX(epoch(index, &random), to: &bytes)
            index += 1
        }
        return bytes
    }

    /// NMEA and UBX of the same epochs (a u-blox with both outputs on), then about 1 % of the bytes
    /// replaced by random ones.
    static func mixed(bytes target: Int, corruption: Double = 0.01) -> [UInt8] {
        var random = BenchRandom(state: 3)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(target + 8192)
        var index = 0
        while bytes.count < target {
            let e = epoch(index, &random)
            appendUBX(e, to: &bytes)
            appendNMEA(e, to: &bytes)
            index += 1
        }
        for position in bytes.indices where random.unit() < corruption {
            bytes[position] = UInt8(truncatingIfNeeded: random.next())
        }
        return bytes
    }
}
