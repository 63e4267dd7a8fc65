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
        JSONWriter.append(to: &bytes, capacity: 1280 + 6 * (device?.utf8.count ?? 0)) { j in
            j.begin(className: "TPV")
            if let device { j.string("device", device) }
            // gpsd leaves out status 0 (unknown) and 1 (plain GPS).
            if fix.status.rawValue >= FixStatus.dgps.rawValue { j.int("status", fix.status.rawValue) }
            j.int("mode", fix.mode.rawValue)
            if let time = fix.time {
                j.time("time", time)
                if let leap = fix.leapSeconds { j.int("leapseconds", leap) }
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
                    // gpsd writes them with a 3D fix, two decimals (centimetres, as UBX gives them).
                    if let position = fix.ecefPosition {
                        j.number("ecefx", position.x, 2)
                        j.number("ecefy", position.y, 2)
                        j.number("ecefz", position.z, 2)
                    }
                    if let velocity = fix.ecefVelocity {
                        j.number("ecefvx", velocity.x, 2)
                        j.number("ecefvy", velocity.y, 2)
                        j.number("ecefvz", velocity.z, 2)
                    }
                    j.number("ecefpAcc", fix.ecefPosition?.accuracy, 2)
                    j.number("ecefvAcc", fix.ecefVelocity?.accuracy, 2)
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
                } else if fix.isDifferential, let age = fix.correctionAge, let station = fix.referenceStation,
                    age > 0.09 || station > 0
                {
                    // No GGA said (a UBX-only stream): NAV-PVT's correction age and RXM-RTCM's station; as gpsd,
                    // not when both are zero (a GGA's empty fields).
                    j.number("dgpsAge", age, 1)
                    j.int("dgpsSta", station)
                }
            }
            j.end(lineEnding: lineEnding)
        }
    }

    /// Appends a SKY object and CR LF to `bytes`.
    public static func appendSKY(_ sky: SkyView, device: String?, to bytes: inout [UInt8], lineEnding: Bool = true) {
        let capacity = 512 + 6 * (device?.utf8.count ?? 0) + 128 * sky.satellites.count
        JSONWriter.append(to: &bytes, capacity: capacity) { j in
            j.begin(className: "SKY")
            if let device { j.string("device", device) }
            if let time = sky.time { j.time("time", time) }
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
                j.byte(UInt8(ascii: "["))
                for (index, satellite) in sky.satellites.enumerated() {
                    if index > 0 { j.byte(UInt8(ascii: ",")) }
                    j.open()
                    j.int("PRN", satellite.prn)
                    j.int("gnssid", Int(satellite.system.rawValue))
                    j.int("svid", satellite.svid)
                    if let signal = satellite.signalID, signal != 0 { j.int("sigid", signal) }
                    j.number("az", satellite.azimuth, 1)
                    j.number("el", satellite.elevation, 1)
                    j.number("prRes", satellite.pseudorangeResidual, 1)
                    if let quality = satellite.quality { j.int("qual", quality) }
                    j.number("ss", satellite.signalStrength, 1)
                    j.bool("used", satellite.used)
                    if let health = satellite.health, health != 0 { j.int("health", health) }
                    j.byte(UInt8(ascii: "}"))
                }
                j.byte(UInt8(ascii: "]"))
            }
            j.end(lineEnding: lineEnding)
        }
    }
}

/// Writes one JSON object into space reserved at the end of a byte array: raw byte stores, and a
/// room check per field. A first capacity that turns out too small is doubled and the object rewritten.
/// `package`: the MQTT bridge writes its OwnTracks, Home Assistant and power objects with it.
package struct JSONWriter {
    let out: UnsafeMutablePointer<UInt8>
    let capacity: Int
    var count = 0
    /// Set when a field did not fit; the object is then written again with more room.
    private(set) var overflowed = false
    private var first = true

    init(out: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.out = out
        self.capacity = capacity
    }

    /// Reserves room at the end of `bytes`, lets `body` write, and keeps what it wrote: written straight
    /// into the array's spare capacity (no zero fill of the room first, nothing to remove after). Swift
    /// 6.2 has no `append(addingCapacity:)`: there it writes into a temporary and appends that.
    package static func append(to bytes: inout [UInt8], capacity: Int, _ body: (inout JSONWriter) -> Void) {
        var capacity = max(capacity, 64)
        /// Writes into `space`; the count written, or nil when it did not fit.
        func write(into space: UnsafeMutableBufferPointer<UInt8>) -> Int? {
            guard let base = space.baseAddress else { return nil }
            var writer = JSONWriter(out: base, capacity: space.count)
            body(&writer)
            return writer.overflowed ? nil : writer.count
        }
        while true {
            var written: Int?
            #if compiler(>=6.3)
            bytes.append(addingCapacity: capacity) { span in
                span.withUnsafeMutableBufferPointer { space, initialized in
                    written = write(into: space)
                    // Bytes written before an overflow are left uninitialized: none are kept then.
                    initialized = written ?? 0
                }
            }
            #else
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { space in
                written = write(into: space)
                if let written { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: space[..<written])) }
            }
            #endif
            if written != nil { return }
            capacity *= 2
        }
    }

    /// Whether `needed` more bytes fit; when not, the writer stops and reports an overflow.
    @inline(__always)
    mutating func room(_ needed: Int) -> Bool {
        if overflowed || count + needed > capacity {
            overflowed = true
            return false
        }
        return true
    }

    package mutating func byte(_ value: UInt8) {
        guard room(1) else { return }
        out[count] = value
        count += 1
    }

    mutating func raw(_ text: StaticString) {
        let length = text.utf8CodeUnitCount
        guard room(length) else { return }
        // A byte loop: these strings are a few bytes long, shorter than a memmove call is worth.
        let source = text.utf8Start
        for index in 0..<length { out[count + index] = source[index] }
        count += length
    }

    package mutating func open() {
        byte(UInt8(ascii: "{"))
        first = true
    }

    mutating func begin(className: StaticString) {
        raw("{\"class\":\"")
        raw(className)
        byte(UInt8(ascii: "\""))
        first = false
    }

    mutating func end(lineEnding: Bool) {
        byte(UInt8(ascii: "}"))
        if lineEnding {
            byte(UInt8(ascii: "\r"))
            byte(UInt8(ascii: "\n"))
        }
    }

    /// Writes `,"name":` (without the comma for the first key).
    package mutating func key(_ name: StaticString) {
        let length = name.utf8CodeUnitCount
        guard room(length &+ 4) else { return }
        var at = out + count
        if !first {
            at.pointee = UInt8(ascii: ",")
            at += 1
        }
        first = false
        at.pointee = UInt8(ascii: "\"")
        // A byte loop: keys are a few bytes long, shorter than a memmove call is worth.
        let source = name.utf8Start
        for index in 0..<length { at[1 &+ index] = source[index] }
        at[1 &+ length] = UInt8(ascii: "\"")
        at[2 &+ length] = UInt8(ascii: ":")
        count = at - out + length &+ 3
    }

    package mutating func int(_ name: StaticString, _ value: Int) {
        key(name)
        guard room(20) else { return }
        count += ASCII.writeInt(value, to: out + count)
    }

    package mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        if value { raw("true") } else { raw("false") }
    }

    /// A number with a fixed count of decimals; left out when `nil` or not finite.
    package mutating func number(_ name: StaticString, _ value: Double?, _ decimals: Int) {
        guard let value, value.isFinite else { return }
        key(name)
        guard room(64) else { return }
        count += ASCII.writeFixed(value, decimals: decimals, to: out + count)
    }

    mutating func time(_ name: StaticString, _ value: GNSSTime) {
        key(name)
        byte(UInt8(ascii: "\""))
        guard room(24) else { return }
        value.writeISO8601(to: out + count)
        count += 24
        byte(UInt8(ascii: "\""))
    }

    package mutating func string(_ name: StaticString, _ value: String) {
        key(name)
        quoted(value)
    }

    /// An array of strings.
    package mutating func strings(_ name: StaticString, _ values: [String]) {
        key(name)
        byte(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { byte(UInt8(ascii: ",")) }
            quoted(value)
        }
        byte(UInt8(ascii: "]"))
    }

    /// An object as a member's value: `body` writes its members.
    package mutating func object(_ name: StaticString, _ body: (inout JSONWriter) -> Void) {
        key(name)
        open()
        body(&self)
        byte(UInt8(ascii: "}"))
        first = false
    }

    /// Ends an object opened with ``open()`` (no line end).
    package mutating func close() {
        byte(UInt8(ascii: "}"))
        first = false
    }

    /// A string value, quoted, with `"`, `\` and control characters escaped.
    private mutating func quoted(_ value: String) {
        byte(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                self.byte(UInt8(ascii: "\\"))
                self.byte(byte)
            case 0..<0x20:
                // Digits worked out, not looked up: a table here was an array allocated per string.
                let low = byte & 0xF
                raw("\\u00")
                self.byte(UInt8(ascii: "0") + (byte >> 4))
                self.byte(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
            default:
                self.byte(byte)
            }
        }
        byte(UInt8(ascii: "\""))
    }
}

/// Turns a raw capture into gpsd TPV and SKY lines: the GNSSDecoder pipeline, then the JSON of each epoch.
/// `gnss-hat decode` and the `decode` benchmark both run this.
public struct GPSDStreamEncoder: Sendable {
    public private(set) var decoder = GNSSDecoder()
    /// Messages decoded, by name (`GGA`, `NAV-PVT`, `RTCM3 1005`, ...).
    public private(set) var messageCounts: [String: Int] = [:]
    public private(set) var fixesByMode: [FixMode: Int] = [:]
    /// Count message names (costs a dictionary update per message; off for pure throughput).
    public var countsMessages: Bool
    public var device: String?

    public init(device: String? = nil, countsMessages: Bool = false) {
        self.device = device
        self.countsMessages = countsMessages
    }

    /// The pipeline's counters: frames, errors, messages, epochs, fixes and sky views.
    public var statistics: GNSSDecoder.Statistics { decoder.statistics }

    /// Feeds bytes and appends the JSON lines of the epochs they complete to `output`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        decoder.append(bytes)
        drain(to: &output)
    }

    /// Ends the stream: flushes the framer and the epoch in progress.
    public mutating func finish(to output: inout [UInt8]) {
        decoder.finish()
        drain(to: &output)
    }

    private mutating func drain(to output: inout [UInt8]) {
        while let next = decoder.next() {
            switch next {
            case .message(let message):
                if countsMessages { messageCounts[GPSDStreamEncoder.name(of: message), default: 0] += 1 }
            case .epoch(let epoch):
                write(epoch, to: &output)
            case .undecodable, .epochStarted, .provisionalFix:
                break
            }
        }
    }

    private mutating func write(_ epoch: Epoch, to output: inout [UInt8]) {
        if let fix = epoch.fix {
            fixesByMode[fix.mode, default: 0] += 1
            GPSDReport.appendTPV(fix, device: device, to: &output, lineEnding: false)
            output.append(UInt8(ascii: "\n"))
        }
        if let sky = epoch.sky {
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
