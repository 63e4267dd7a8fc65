// The receiver streams of the `service` benchmark: 10 Hz epochs (the decode benchmark's multi-GNSS
// receiver), in NMEA or UBX, cut into the sentences or frames a receiver sends one after another.

import GNSSProtocol

enum ServiceStream: String, CaseIterable {
    case nmea
    case ubx

    /// Epoch `index` as the messages of its output, in order; the first carries the position
    /// (RMC, NAV-PVT), the last ends the epoch (GLL, NAV-TIMEUTC).
    func messages(epoch index: Int, random: inout BenchRandom) -> [[UInt8]] {
        let epoch = DecodeStreams.epoch(index, &random)
        var bytes: [UInt8] = []
        switch self {
        case .nmea:
            DecodeStreams.appendNMEA(epoch, to: &bytes)
            return Self.sentences(bytes)
        case .ubx:
            DecodeStreams.appendUBX(epoch, to: &bytes)
            return Self.frames(bytes)
        }
    }

    /// The epoch index of a TPV's time (10 Hz from the streams' start).
    static func epochIndex(time: Substring) -> Int? {
        // 2024-05-17T00:00:12.300Z
        let parts = time.split(separator: "T")
        guard parts.count == 2 else { return nil }
        let clock = parts[1].dropLast()  // Z
        let fields = clock.split(separator: ":")
        guard fields.count == 3, let hours = Int(fields[0]), let minutes = Int(fields[1]),
              let seconds = Double(fields[2])
        else { return nil }
        let sinceStart = Double(hours * 3600 + minutes * 60) + seconds
        return Int((sinceStart * 10).rounded())
    }

    private static func sentences(_ bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            result.append(Array(bytes[start...index]))
            start = index + 1
        }
        return result
    }

    private static func frames(_ bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = 0
        while index + 8 <= bytes.count {
            let length = Int(bytes[index + 4]) | Int(bytes[index + 5]) << 8
            let end = min(index + 8 + length, bytes.count)
            result.append(Array(bytes[index..<end]))
            index = end
        }
        return result
    }
}
