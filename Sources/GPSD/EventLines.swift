// The lines a gpsd event becomes for a client: its watch policy decides (ClientChannel asks, per
// client). Beside the service's events (GPSDSource), not with the request side of ClientSession
// in GPSDProtocol.

import GPSDProtocol

extension WatchPolicy {
    /// The line `event` becomes under this policy, nil for none: an event is at most one line (a batch,
    /// the lines of its events this client wants, joined: one write, and dropped whole by a full
    /// queue), and a TPV, SKY, sentence or frame is the source's own bytes, shared by every client
    /// that gets it (`pulse`, `timeOffset` and raw-1 hex are encoded here, once per client that wants
    /// them).
    func line(for event: GPSDEvent, path: String) -> [UInt8]? {
        guard enable else { return nil }
        switch event {
        case .tpv(let line), .sky(let line):
            return json ? line : nil
        case .pulse(let offset):
            return json || pps ? GPSDResponse.pps(path: path, offset) : nil
        case .timeOffset(let offset):
            return pps ? GPSDResponse.toff(path: path, offset) : nil
        case .sentence(let bytes):
            return nmea || raw > 0 ? bytes : nil
        case .frame(let bytes):
            switch raw {
            case 2...: return bytes
            case 1: return Self.hexDump(bytes)
            default: return nil
            }
        case .batch(let events):
            // One line after another, as one write: the first line as it is when it is the only one.
            var joined: [UInt8]?
            for event in events {
                guard let line = line(for: event, path: path) else { continue }
                if joined == nil { joined = line } else { joined?.append(contentsOf: line) }
            }
            return joined
        }
    }
}

extension WatchPolicy {
    /// gpsd's raw-1 form of a binary frame: lower-case hex and CR LF.
    static func hexDump(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var line: [UInt8] = []
        line.reserveCapacity(bytes.count * 2 + 2)
        for byte in bytes {
            line.append(digits[Int(byte >> 4)])
            line.append(digits[Int(byte & 0x0F)])
        }
        line.append(contentsOf: [0x0D, 0x0A])
        return line
    }
}
