// gpsd's TPV and SKY reports: field names, units, omissions and number formats as gpsd 3.22+ writes
// them (never `null`: an unknown value is left out).

public import GNSSProtocol

/// Encodes fixes and sky views as gpsd JSON objects, one per line.
public enum GPSDReport {
    /// A TPV object for `fix`, with CR LF (as gpsd sends it); `device` is left out when `nil`.
    public static func tpv(_ fix: Fix, device: String? = nil) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        appendTPV(fix, device: device, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A SKY object for `sky`, with CR LF.
    public static func sky(_ sky: SkyView, device: String? = nil) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + 80 * sky.satellites.count)
        appendSKY(sky, device: device, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a TPV object and CR LF to `bytes` (no allocation beyond the buffer's growth).
    public static func appendTPV(_ fix: Fix, device: String?, to bytes: inout [UInt8], lineEnding: Bool = true) {
        var j = JSONObjectWriter(bytes: bytes)
        bytes = []
        j.begin(className: "TPV")
        if let device { j.string("device", device) }
        // gpsd leaves out status 0 (unknown) and 1 (plain GPS).
        if fix.status.rawValue >= FixStatus.dgps.rawValue { j.int("status", fix.status.rawValue) }
        j.int("mode", fix.mode.rawValue)
        if let time = fix.time {
            j.key("time")
            j.bytes.append(UInt8(ascii: "\""))
            time.appendISO8601(to: &j.bytes)
            j.bytes.append(UInt8(ascii: "\""))
            j.number("ept", fix.ept, 3)
        }
        // Position fields only with a 2D or 3D fix (gpsd suppresses them otherwise).
        if fix.mode >= .twoD {
            j.number("lat", fix.latitude, 9)
            j.number("lon", fix.longitude, 9)
            j.number("altHAE", fix.altitudeHAE, 4)
            j.number("altMSL", fix.altitudeMSL, 4)
            // Deprecated `alt`: MSL when known, else HAE.
            j.number("alt", fix.altitudeMSL ?? fix.altitudeHAE, 4)
            j.number("epx", fix.epx, 3)
            j.number("epy", fix.epy, 3)
            j.number("epv", fix.epv, 3)
            j.number("track", fix.track, 4)
            j.number("magtrack", fix.magneticTrack, 4)
            j.number("magvar", fix.magneticVariation, 1)
            j.number("speed", fix.speed, 3)
            if fix.mode == .threeD { j.number("climb", fix.climb.map { abs($0) < 0.0005 ? 0 : $0 }, 3) }
            j.number("epd", fix.epd, 4)
            j.number("eps", fix.eps, 2)
            if fix.mode == .threeD {
                j.number("epc", fix.epc, 2)
                if let north = fix.velocityNorth, let east = fix.velocityEast {
                    j.number("velN", abs(north) < 0.0005 ? 0 : north, 3)
                    j.number("velE", abs(east) < 0.0005 ? 0 : east, 3)
                    j.number("velD", fix.velocityDown.map { abs($0) < 0.0005 ? 0 : $0 }, 3)
                }
                j.number("geoidSep", fix.geoidSeparation, 3)
            }
            j.number("eph", fix.eph, 3)
            j.number("sep", fix.sep, 3)
            if let age = fix.dgpsAge, let station = fix.dgpsStation {
                j.number("dgpsAge", age, 1)
                j.int("dgpsSta", station)
            }
        }
        j.end(lineEnding: lineEnding)
        bytes = j.bytes
    }

    /// Appends a SKY object and CR LF to `bytes`.
    public static func appendSKY(_ sky: SkyView, device: String?, to bytes: inout [UInt8], lineEnding: Bool = true) {
        var j = JSONObjectWriter(bytes: bytes)
        bytes = []
        j.begin(className: "SKY")
        if let device { j.string("device", device) }
        if let time = sky.time {
            j.key("time")
            j.bytes.append(UInt8(ascii: "\""))
            time.appendISO8601(to: &j.bytes)
            j.bytes.append(UInt8(ascii: "\""))
        }
        j.number("gdop", sky.dops.geometric, 2)
        j.number("hdop", sky.dops.horizontal, 2)
        j.number("pdop", sky.dops.position, 2)
        j.number("tdop", sky.dops.time, 2)
        j.number("xdop", sky.dops.x, 2)
        j.number("ydop", sky.dops.y, 2)
        j.number("vdop", sky.dops.vertical, 2)
        if !sky.satellites.isEmpty {
            j.int("nSat", sky.satellitesVisible)
            j.int("uSat", sky.satellitesUsed)
            j.key("satellites")
            j.bytes.append(UInt8(ascii: "["))
            for (index, satellite) in sky.satellites.enumerated() {
                if index > 0 { j.bytes.append(UInt8(ascii: ",")) }
                var s = JSONObjectWriter(bytes: j.bytes)
                j.bytes = []
                s.open()
                s.int("PRN", satellite.prn)
                s.int("gnssid", Int(satellite.system.rawValue))
                s.int("svid", satellite.svid)
                if let signal = satellite.signalID, signal != 0 { s.int("sigid", signal) }
                s.number("az", satellite.azimuth, 1)
                s.number("el", satellite.elevation, 1)
                s.number("prRes", satellite.pseudorangeResidual, 1)
                if let quality = satellite.quality { s.int("qual", quality) }
                s.number("ss", satellite.signalStrength, 1)
                s.bool("used", satellite.used)
                if let health = satellite.health, health != 0 { s.int("health", health) }
                s.bytes.append(UInt8(ascii: "}"))
                j.bytes = s.bytes
            }
            j.bytes.append(UInt8(ascii: "]"))
        }
        j.end(lineEnding: lineEnding)
        bytes = j.bytes
    }
}

/// Writes one flat JSON object into a byte buffer, comma handling included.
struct JSONObjectWriter {
    var bytes: [UInt8]
    private var first = true

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func begin(className: StaticString) {
        open()
        key("class")
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: className.utf8Start, count: className.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func end(lineEnding: Bool) {
        bytes.append(UInt8(ascii: "}"))
        if lineEnding {
            bytes.append(UInt8(ascii: "\r"))
            bytes.append(UInt8(ascii: "\n"))
        }
    }

    mutating func key(_ name: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func int(_ name: StaticString, _ value: Int) {
        key(name)
        ASCII.appendInt(value, to: &bytes)
    }

    mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    /// A number with a fixed count of decimals; left out when `nil` or not finite.
    mutating func number(_ name: StaticString, _ value: Double?, _ decimals: Int) {
        guard let value, value.isFinite else { return }
        key(name)
        ASCII.appendFixed(value, decimals: decimals, to: &bytes)
    }

    mutating func string(_ name: StaticString, _ value: String) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                ASCII.appendHexByte(byte, to: &bytes)
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Turns a raw capture into gpsd TPV and SKY lines: framer, decoder and epoch assembler in one.
/// `gnss-hat decode` and the `decode` benchmark both run this.
public struct GPSDStreamEncoder: Sendable {
    public private(set) var framer = Framer()
    public private(set) var assembler = EpochAssembler()
    /// Messages decoded, by name (`GGA`, `NAV-PVT`, `RTCM3 1005`, ...), and frames that failed to decode.
    public private(set) var messageCounts: [String: Int] = [:]
    public private(set) var decodeErrors = 0
    public private(set) var fixes = 0
    public private(set) var fixesByMode: [FixMode: Int] = [:]
    public private(set) var skyViews = 0
    /// Count message names (costs a dictionary update per message; off for pure throughput).
    public var countsMessages: Bool
    public var device: String?

    public init(device: String? = nil, countsMessages: Bool = false) {
        self.device = device
        self.countsMessages = countsMessages
    }

    /// Feeds bytes and appends the JSON lines of the epochs they complete to `output`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        framer.append(bytes)
        drain(to: &output)
    }

    /// Ends the stream: flushes the framer and the epoch in progress.
    public mutating func finish(to output: inout [UInt8]) {
        framer.finish()
        drain(to: &output)
        if let epoch = assembler.finish() { write(epoch, to: &output) }
    }

    private mutating func drain(to output: inout [UInt8]) {
        while let frame = framer.next() {
            let message: Message
            do {
                message = try Message(frame: frame)
            } catch {
                decodeErrors += 1
                continue
            }
            if countsMessages { messageCounts[GPSDStreamEncoder.name(of: message), default: 0] += 1 }
            // At most two epochs end per message; collect them so the closure does not touch `self`.
            var first: Epoch?
            var second: Epoch?
            assembler.consume(message) { epoch in
                if first == nil { first = epoch } else { second = epoch }
            }
            if let first { write(first, to: &output) }
            if let second { write(second, to: &output) }
        }
    }

    private mutating func write(_ epoch: Epoch, to output: inout [UInt8]) {
        if let fix = epoch.fix {
            fixes += 1
            fixesByMode[fix.mode, default: 0] += 1
            GPSDReport.appendTPV(fix, device: device, to: &output, lineEnding: false)
            output.append(UInt8(ascii: "\n"))
        }
        if let sky = epoch.sky {
            skyViews += 1
            GPSDReport.appendSKY(sky, device: device, to: &output, lineEnding: false)
            output.append(UInt8(ascii: "\n"))
        }
    }

    /// A short name for a message kind, for summaries.
    public static func name(of message: Message) -> String {
        switch message {
        case .nmea(let sentence):
            switch sentence {
            case .gga: return "GGA"
            case .rmc: return "RMC"
            case .gsa: return "GSA"
            case .gsv: return "GSV"
            case .vtg: return "VTG"
            case .gll: return "GLL"
            case .gns: return "GNS"
            case .gst: return "GST"
            case .zda: return "ZDA"
            case .txt: return "TXT"
            case .pmtk(let m): return "PMTK\(m.number)"
            case .proprietary(let address, _): return address.description
            case .unsupported(let address, _):
                return address.talker == nil ? address.description : String(address.description.dropFirst(2))
            }
        case .ubx(let m): return m.messageID.description
        case .rtcm3(let frame): return "RTCM3 \(frame.messageNumber)"
        }
    }
}
