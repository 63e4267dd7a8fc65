// The objects the service writes besides TPV and SKY (which come encoded from the source): VERSION,
// DEVICES, DEVICE, WATCH, POLL, ERROR, PPS and TOFF, with gpsd 3.22's field names, order and number
// formats, one object per line ending in CR LF.

/// gpsd's protocol version this service speaks (gpsd 3.22: 3.14).
public let gpsdProtocolMajor = 3
public let gpsdProtocolMinor = 14

/// Encoders for the service's own objects.
package enum GPSDResponse {
    /// `{"class":"VERSION","release":...,"rev":...,"proto_major":3,"proto_minor":14}`.
    package static func version(release: String, revision: String) -> [UInt8] {
        var w = ResponseWriter(className: "VERSION")
        w.string("release", release)
        w.string("rev", revision)
        w.int("proto_major", gpsdProtocolMajor)
        w.int("proto_minor", gpsdProtocolMinor)
        return w.line()
    }

    /// A DEVICE object; `activated` (ns since the epoch) while the device is active. As gpsd, the
    /// serial settings and cycle are given only while active.
    package static func device(_ device: GPSDDevice, activated: Int64?, sawData: Bool) -> [UInt8] {
        var w = ResponseWriter(className: "DEVICE")
        w.deviceFields(device, activated: activated, sawData: sawData)
        return w.line()
    }

    /// `{"class":"DEVICE","path":...,"activated":0}`: the device closed (gpsd's deactivation notice).
    package static func deviceClosed(path: String) -> [UInt8] {
        var w = ResponseWriter(className: "DEVICE")
        w.string("path", path)
        w.int("activated", 0)
        return w.line()
    }

    /// `{"class":"DEVICES","devices":[DEVICE...]}`.
    package static func devices(_ device: GPSDDevice, activated: Int64?, sawData: Bool) -> [UInt8] {
        var w = ResponseWriter(className: "DEVICES")
        w.key("devices")
        w.raw("[")
        var inner = ResponseWriter(className: "DEVICE")
        inner.deviceFields(device, activated: activated, sawData: sawData)
        w.raw(inner.object())
        w.raw("]")
        return w.line()
    }

    /// The WATCH object: the client's policy after a `?WATCH`.
    package static func watch(_ policy: WatchPolicy) -> [UInt8] {
        var w = ResponseWriter(className: "WATCH")
        w.bool("enable", policy.enable)
        w.bool("json", policy.json)
        w.bool("nmea", policy.nmea)
        w.int("raw", policy.raw)
        w.bool("scaled", policy.scaled)
        w.bool("timing", policy.timing)
        w.bool("split24", policy.split24)
        w.bool("pps", policy.pps)
        if let device = policy.device { w.string("device", device) }
        if let interval = policy.interval {
            let (seconds, attoseconds) = interval.components
            let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            w.key("interval")
            w.raw(milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)")
        }
        if let accuracy = policy.accuracy {
            w.key("accuracy")
            w.raw("\(accuracy)")
        }
        return w.line()
    }

    /// `{"class":"ERROR","message":...}`.
    package static func error(_ message: String) -> [UInt8] {
        var w = ResponseWriter(className: "ERROR")
        w.string("message", message)
        return w.line()
    }

    /// The POLL object: `time` now, `active` devices, and the latest TPV and SKY (each a JSON line).
    /// gpsd also lists a GST object per active device; this service has none to give.
    package static func poll(time: Int64, active: Int, tpv: [UInt8]?, sky: [UInt8]?) -> [UInt8] {
        var w = ResponseWriter(className: "POLL")
        w.time("time", time)
        w.int("active", active)
        w.key("tpv")
        w.raw("[")
        if let tpv { w.raw(ResponseWriter.strippingLineEnd(tpv)) }
        w.raw("]")
        w.key("gst")
        w.raw("[]")
        w.key("sky")
        w.raw("[")
        if let sky { w.raw(ResponseWriter.strippingLineEnd(sky)) }
        w.raw("]")
        return w.line()
    }

    /// A PPS object: the second the pulse marks and the system time of the edge.
    package static func pps(path: String, _ offset: TimeOffset, precision: Int = -20) -> [UInt8] {
        var w = ResponseWriter(className: "PPS")
        w.string("device", path)
        w.timeOffset(offset)
        w.int("precision", precision)
        return w.line()
    }

    /// A TOFF object: an epoch's in-band time and the system time it arrived.
    package static func toff(path: String, _ offset: TimeOffset) -> [UInt8] {
        var w = ResponseWriter(className: "TOFF")
        w.string("device", path)
        w.timeOffset(offset)
        return w.line()
    }
}

/// Writes one flat JSON object in gpsd's style: no spaces, `class` first.
struct ResponseWriter {
    private var bytes: [UInt8] = []
    private var first = true

    init(className: String) {
        bytes.reserveCapacity(256)
        bytes.append(UInt8(ascii: "{"))
        string("class", className)
    }

    /// The object with `}` and CR LF.
    consuming func line() -> [UInt8] {
        bytes.append(contentsOf: [UInt8(ascii: "}"), 0x0D, 0x0A])
        return bytes
    }

    /// The object with `}` and no line end (to nest it).
    consuming func object() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func raw(_ text: some Collection<UInt8>) {
        bytes.append(contentsOf: text)
    }

    /// `"name":"value"`, the value's quotes, backslashes and control characters escaped. The runs between
    /// them are copied whole: an ERROR reply quotes the client's request, and answering garbage one byte
    /// at a time (with an array made for each escape) was most of its cost.
    mutating func string(_ name: String, _ value: String) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        var value = value
        // A table, not three comparisons a byte: the ERROR reply to garbage is the gpsd fuzz target's
        // hottest loop, and the fuzzer's instrumentation traces every comparison.
        Self.escaped.withUnsafeBufferPointer { escaped in
            value.withUTF8 { utf8 in
                var run = 0
                for index in utf8.indices where escaped[Int(utf8[index])] {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                    escape(utf8[index])
                    run = index + 1
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The bytes a JSON string escapes: the quote, the backslash and the control characters.
    private static let escaped: [Bool] = (0...255).map { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }

    /// A quote, backslash or control character as JSON writes it in a string.
    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0..<0x20:
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(ResponseWriter.hexDigit(byte >> 4))
            bytes.append(ResponseWriter.hexDigit(byte & 0xF))
        default:
            bytes.append(byte)
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    mutating func int(_ name: String, _ value: Int) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func int64(_ name: String, _ value: Int64) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A number with exactly `decimals` digits after the point (C's `%.Nf`, rounded half away from 0).
    mutating func fixed(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        bytes.append(contentsOf: ResponseWriter.fixed(value, decimals: decimals).utf8)
    }

    /// ISO 8601 UTC with milliseconds, as gpsd writes times: `2026-11-29T16:25:22.017Z`.
    mutating func time(_ name: String, _ nanoseconds: Int64) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: ISO8601.milliseconds(nanoseconds).utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func timeOffset(_ offset: TimeOffset) {
        let (realSeconds, realNanos) = ISO8601.split(offset.real)
        let (clockSeconds, clockNanos) = ISO8601.split(offset.clock)
        int64("real_sec", realSeconds)
        int64("real_nsec", realNanos)
        int64("clock_sec", clockSeconds)
        int64("clock_nsec", clockNanos)
    }

    mutating func deviceFields(_ device: GPSDDevice, activated: Int64?, sawData: Bool) {
        string("path", device.path)
        if let driver = device.driver { string("driver", driver) }
        if let subtype = device.subtype { string("subtype", subtype) }
        guard let activated else { return }
        time("activated", activated)
        if sawData { int("flags", 1) }
        int("native", device.native)
        if let bps = device.bps {
            int("bps", bps)
            string("parity", device.parity)
            int("stopbits", device.stopbits)
        }
        fixed("cycle", device.cycle, decimals: 2)
        if let minimum = device.minimumCycle { fixed("mincycle", minimum, decimals: 2) }
    }

    static func strippingLineEnd(_ line: [UInt8]) -> ArraySlice<UInt8> {
        var end = line.endIndex
        while end > line.startIndex, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        return line[..<end]
    }

    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else { return String(value) }
        let units = Int64(scaled)
        let whole = units / Int64(scale)
        var text = (value < 0 && units != 0 ? "-" : "") + String(whole)
        if decimals > 0 {
            let fraction = String(units % Int64(scale))
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }
}

/// UTC calendar times from nanoseconds since the Unix epoch (no Foundation).
enum ISO8601 {
    /// Whole seconds and the nanoseconds after them (floored, so a negative time still has
    /// 0 ≤ nanoseconds < 1e9).
    static func split(_ nanoseconds: Int64) -> (seconds: Int64, nanoseconds: Int64) {
        var seconds = nanoseconds / 1_000_000_000
        var rest = nanoseconds % 1_000_000_000
        if rest < 0 {
            seconds -= 1
            rest += 1_000_000_000
        }
        return (seconds, rest)
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (milliseconds truncated, as gpsd's `%03ld` of ns / 1e6).
    static func milliseconds(_ nanoseconds: Int64) -> String {
        let (seconds, nanos) = split(nanoseconds)
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(days: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2) + ":"
            + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2) + "." + pad(nanos / 1_000_000, 3) + "Z"
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
