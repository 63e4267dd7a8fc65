// Deterministic mixed streams for the framer tests: NMEA, UBX and RTCM3 frames from the encoders.

import GNSSProtocol

enum StreamFixtures {
    /// A list of frames of all three protocols, as a receiver might interleave them.
    static func frames(count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SeededGenerator(seed: seed)
        let start = GNSSTime(
            date: GNSSDate(year: 2024, month: 5, day: 17), time: TimeOfDay(hour: 12, minute: 0, second: 0))
        var frames: [[UInt8]] = []
        for index in 0..<count {
            let time = GNSSTime(nanosecondsSinceEpoch: start.nanosecondsSinceEpoch + Int64(index) * 100_000_000)
            let tod = time.timeOfDay
            let lat = Double.random(in: -89...89, using: &random)
            let lon = Double.random(in: -179...179, using: &random)
            switch Int.random(in: 0..<9, using: &random) {
            case 0:
                frames.append(
                    NMEAGGA(
                        talker: .gn, time: tod, latitude: lat, longitude: lon, quality: 1, satellitesUsed: 12,
                        hdop: 0.9,
                        altitudeMSL: 123.4, geoidSeparation: -21.3
                    ).sentence())
            case 1:
                frames.append(
                    NMEARMC(
                        talker: .gn, time: tod, status: "A", latitude: lat, longitude: lon, speedKnots: 0.123,
                        course: 45.5,
                        date: time.date, modeIndicator: "A"
                    ).sentence())
            case 2:
                let satellites = (0..<Int.random(in: 1...4, using: &random)).map {
                    GSVSatellite(id: $0 * 5 + 1, elevation: 45, azimuth: 180, snr: $0 == 2 ? nil : 40)
                }
                frames.append(
                    NMEAGSV(
                        talker: .gp, sentenceCount: 1, sentenceNumber: 1, satellitesInView: satellites.count,
                        satellites: GSVSatellites(satellites), signalID: 1
                    ).sentence())
            case 3:
                frames.append(
                    UBXNavPVT(
                        iTOW: UInt32(index * 100), time: time, fixType: 3, numSV: 14, latitude: lat, longitude: lon,
                        altitudeHAE: 100, altitudeMSL: 121
                    ).frame)
            case 4:
                let satellites = (0..<Int.random(in: 0...30, using: &random)).map { n in
                    UBXNavSAT.Satellite(
                        gnssId: UInt8(n % 7), svId: UInt8(n + 1), cno: 40, elev: 30, azim: 200, flags: 0x0F)
                }
                frames.append(UBXNavSAT(iTOW: UInt32(index * 100), satellites: satellites).frame)
            case 5:
                frames.append(
                    UBXNavDOP(
                        iTOW: UInt32(index), gDOP: 150, pDOP: 130, tDOP: 80, vDOP: 100, hDOP: 90, nDOP: 60, eDOP: 70
                    ).frame)
            case 6:
                var payload = [UInt8](repeating: 0, count: Int.random(in: 2...200, using: &random))
                for i in payload.indices { payload[i] = UInt8.random(in: 0...255, using: &random) }
                payload[0] = UInt8(1077 >> 4)
                payload[1] = UInt8((1077 & 0xF) << 4) | (payload[1] & 0x0F)
                frames.append(RTCM3Frame.frame(payload: payload))
            case 7:
                frames.append(
                    NMEAGSA(
                        talker: .gn, fixType: 3, satelliteIDs: [1, 5, 9, 12, 65, 70], pdop: 1.5, hdop: 0.9, vdop: 1.2,
                        systemID: 1
                    ).sentence())
            default:
                frames.append(PMTKMessage.ack(command: 220, flag: 3).sentence())
            }
        }
        return frames
    }

    /// Frames concatenated, with optional garbage and I2C filler between them.
    static func stream(_ frames: [[UInt8]], garbageSeed: UInt64? = nil) -> [UInt8] {
        guard let garbageSeed else { return frames.flatMap { $0 } }
        var random = SeededGenerator(seed: garbageSeed)
        var bytes: [UInt8] = []
        for frame in frames {
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                bytes += [UInt8](repeating: 0xFF, count: Int.random(in: 1...40, using: &random))
            case 1:
                // Printable garbage without any frame start.
                bytes += (0..<Int.random(in: 1...30, using: &random)).map { _ in
                    UInt8.random(in: 0x41...0x5A, using: &random)
                }
            default:
                break
            }
            bytes += frame
        }
        return bytes
    }
}

/// Feeds `bytes` in chunks cut by `split` and returns the frames (copied) and the statistics.
func frameAll(
    _ bytes: [UInt8], split: (inout SeededGenerator) -> Int, seed: UInt64 = 1
) -> ([[UInt8]], FramerStatistics) {
    var framer = Framer()
    var random = SeededGenerator(seed: seed)
    var frames: [[UInt8]] = []
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + max(1, split(&random)))
        framer.append(contentsOf: bytes[offset..<end])
        while let frame = framer.next() { frames.append(Array(frame.bytes)) }
        offset = end
    }
    framer.finish()
    while let frame = framer.next() { frames.append(Array(frame.bytes)) }
    return (frames, framer.statistics)
}
