@testable import GPSDProtocol
import GNSSProtocol
import Testing

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

private func scan(_ chunks: [[UInt8]]) -> [String] {
    var scanner = RequestScanner()
    var items: [String] = []
    for chunk in chunks {
        scanner.append(chunk)
        while let item = scanner.next() {
            switch item {
            case .request(let bytes): items.append(String(decoding: bytes, as: UTF8.self))
            case .tooLong: items.append("<too long>")
            }
        }
    }
    return items
}

/// A deterministic generator for split points (no global randomness in tests).
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Request scanning")
struct RequestScannerTests {
    static let cases: [(String, [String])] = [
        ("?VERSION;", ["?VERSION"]),
        ("?WATCH={\"enable\":true,\"json\":true};\n", ["?WATCH={\"enable\":true,\"json\":true}"]),
        ("?WATCH={\"enable\":true}\n?POLL;", ["?WATCH={\"enable\":true}", "?POLL"]),
        ("?VERSION;?DEVICES;\r\n?POLL;", ["?VERSION", "?DEVICES", "?POLL"]),
        ("?POLL\r\n", ["?POLL"]),
        ("  \n;?WATCH;", ["?WATCH"]),
        ("garbage;\n?POLL;", ["?POLL"]),
        ("?WATCH={\"device\":\"/dev/x;y\"};", ["?WATCH={\"device\":\"/dev/x;y\"}"]),
        ("?WATCH={\"a\":[1,{\"b\":2}]};", ["?WATCH={\"a\":[1,{\"b\":2}]}"]),
        ("?FOO;", ["?FOO"]),
        ("?" + String(repeating: "A", count: 100) + ";?POLL;", ["<too long>", "?POLL"]),
        ("?WATCH={\"enable\":true,\"json\":true,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"pps\":1};",
         ["<too long>"]),
        ("?" + String(repeating: "B", count: 200) + "\n?VERSION;", ["<too long>", "?VERSION"]),
    ]

    @Test("requests split at ;, at line ends and after their JSON object", arguments: cases)
    func whole(input: String, expected: [String]) {
        #expect(scan([Array(input.utf8)]) == expected)
    }

    @Test("any split of the same bytes gives the same requests", arguments: cases)
    func splits(input: String, expected: [String]) {
        let bytes = Array(input.utf8)
        #expect(scan(bytes.map { [$0] }) == expected)
        var random = SplitMix(state: UInt64(bytes.count))
        for _ in 0..<50 {
            var chunks: [[UInt8]] = []
            var index = 0
            while index < bytes.count {
                let size = Int.random(in: 1...max(1, bytes.count - index), using: &random)
                chunks.append(Array(bytes[index..<index + size]))
                index += size
            }
            #expect(scan(chunks) == expected)
        }
    }

    @Test("an unterminated request waits; an unterminated long one is dropped to the line end")
    func waiting() {
        var scanner = RequestScanner()
        scanner.append(Array("?POLL".utf8))
        #expect(scanner.next() == nil)
        #expect(scanner.pendingCount == 5)
        scanner.append(Array(";".utf8))
        #expect(scanner.next() == .request(Array("?POLL".utf8)[...]))
        scanner.append([UInt8](repeating: UInt8(ascii: "x"), count: 10_000).map { _ in UInt8(ascii: "?") })
        #expect(scanner.next() == .tooLong)
        #expect(scanner.next() == nil)
        #expect(scanner.pendingCount == 0)
        scanner.append(Array("more junk\n?VERSION;".utf8))
        #expect(scanner.next() == .request(Array("?VERSION".utf8)[...]))
    }
}

@Suite("Request parsing")
struct RequestParseTests {
    static let good: [(String, GPSDRequest)] = [
        ("?VERSION", .version), ("?DEVICES", .devices), ("?POLL", .poll), ("?WATCH", .watch(nil)),
        ("?DEVICE", .device(nil)),
        ("?WATCH={}", .watch([])),
        ("?WATCH={\"enable\":true,\"json\":true}", .watch([("enable", .token("true")), ("json", .token("true"))])),
        ("?WATCH={\"device\":\"/dev/tty\\u0053\"}", .watch([("device", .string("/dev/ttyS"))])),
        ("?WATCH={ \"raw\" : 2 }", .watch([("raw", .token("2"))])),
        ("?DEVICE={\"path\":\"/dev/ttyS0\",\"cycle\":0.5,\"bps\":9600}",
         .device(DeviceChange(path: "/dev/ttyS0", bps: 9600, cycle: 0.5))),
    ]

    @Test("requests gpsd knows", arguments: good)
    func parses(input: String, expected: GPSDRequest) throws {
        #expect(try GPSDRequest.parse(Array(input.utf8)[...]).get() == expected)
    }

    static let bad: [(String, String)] = [
        ("?FOO", "Unrecognized request '?FOO'"),
        ("?version", "Unrecognized request '?version'"),
        ("?VERSION={}", "Unrecognized request '?VERSION={}'"),
        ("?POLLX", "Unrecognized request '?POLLX'"),
        ("?WATCH = {}", "Unrecognized request '?WATCH = {}'"),
        ("?WATCH=[1]", "Invalid WATCH: non-whitespace when expecting object start"),
        ("?WATCH={\"enable\":tru", "Invalid WATCH: garbage while expecting comma or } or ]"),
        ("?WATCH={enable:true}", "Invalid WATCH: non-whitespace when expecting attribute start"),
        ("?WATCH={\"a\":1}x", "Invalid WATCH: garbage while expecting comma or } or ]"),
        ("?WATCH={\"device\":\"bad\\q\"}", "Invalid WATCH: error while string parsing"),
        ("?WATCH=", "Invalid WATCH: input was empty or white-space only"),
        ("?DEVICE={\"path\":7}", "Invalid DEVICE: didn't see quoted value when expecting string"),
        ("?DEVICE={\"bps\":\"9600\"}", "Invalid DEVICE: saw quoted value when expecting nonstring"),
        ("?DEVICE={\"cycle\":[1]}", "Invalid DEVICE: saw [ when not expecting array"),
    ]

    @Test("errors carry gpsd's messages", arguments: bad)
    func refuses(input: String, message: String) {
        switch GPSDRequest.parse(Array(input.utf8)[...]) {
        case .success(let request): Issue.record("\(input) parsed as \(request)")
        case .failure(let error): #expect(error.message == message)
        }
    }
}

@Suite("Watch policy")
struct WatchPolicyTests {
    /// A session of ?WATCH requests and the WATCH objects real gpsd 3.22 answered (recorded against
    /// `gpsd -N -n -b` on a pseudo-terminal): omitted `enable` means true, `json`/`nmea`/`raw` keep
    /// their values, the other flags and `device` reset.
    static let gpsdSession: [(String, String)] = [
        ("{\"json\":true}",
         "{\"class\":\"WATCH\",\"enable\":true,\"json\":true,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}"),
        ("{\"enable\":false,\"pps\":true,\"scaled\":true,\"nmea\":true,\"raw\":1}",
         "{\"class\":\"WATCH\",\"enable\":false,\"json\":true,\"nmea\":true,\"raw\":1,\"scaled\":true,\"timing\":false,\"split24\":false,\"pps\":true}"),
        ("{\"json\":false}",
         "{\"class\":\"WATCH\",\"enable\":true,\"json\":false,\"nmea\":true,\"raw\":1,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}"),
        ("{\"enable\":true,\"device\":\"/dev/pts/0\"}",
         "{\"class\":\"WATCH\",\"enable\":true,\"json\":false,\"nmea\":true,\"raw\":1,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false,\"device\":\"/dev/pts/0\"}"),
        ("{\"enable\":false}",
         "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":true,\"raw\":1,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}"),
        ("{\"bogus\":1,\"enable\":1}",
         "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":true,\"raw\":1,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}"),
    ]

    @Test("a sequence of ?WATCH requests gives the WATCH objects gpsd 3.22 gave")
    func gpsdDefaults() throws {
        var policy = WatchPolicy()
        for (request, expected) in Self.gpsdSession {
            guard case .watch(let attributes?) = try GPSDRequest.parse(Array(("?WATCH=" + request).utf8)[...]).get()
            else {
                Issue.record("not a WATCH: \(request)")
                return
            }
            policy = try policy.applying(attributes)
            #expect(text(GPSDResponse.watch(policy)) == expected + "\r\n")
        }
    }

    @Test("\"interval\" (GNSSHat's extension): kept, echoed, reset by a WATCH without it; unknown to gpsd's defaults")
    func interval() throws {
        func watch(_ json: String, from policy: WatchPolicy = WatchPolicy()) throws -> WatchPolicy {
            guard case .watch(let attributes?) = try GPSDRequest.parse(Array(("?WATCH=" + json).utf8)[...]).get()
            else { throw CancellationError() }
            return try policy.applying(attributes)
        }
        let scheduled = try watch(#"{"enable":true,"json":true,"interval":600}"#)
        #expect(scheduled.interval == .seconds(600))
        #expect(text(GPSDResponse.watch(scheduled)).hasSuffix(#""pps":false,"interval":600}"# + "\r\n"))
        #expect(try watch(#"{"interval":2.5}"#).interval == .milliseconds(2500))
        #expect(try watch(#"{"interval":0}"#).interval == nil, "0: every epoch")
        #expect(try watch(#"{"interval":1e9}"#).interval == .seconds(86_400), "at most a day")
        let rtk = try watch(#"{"enable":true,"json":true,"accuracy":0.02}"#)
        #expect(rtk.accuracy == 0.02 && rtk.interval == nil)
        #expect(text(GPSDResponse.watch(rtk)).hasSuffix(#""pps":false,"accuracy":0.02}"# + "\r\n"))
        #expect(try watch(#"{"accuracy":0}"#).accuracy == nil, "0: none asked")
        let plain = try watch(#"{"enable":true,"json":true}"#, from: scheduled)
        #expect(plain.interval == nil)
        #expect(!text(GPSDResponse.watch(plain)).contains("interval"), "a client that never sends it sees gpsd's WATCH")
        #expect(throws: RequestJSONError.quotedWhereNonString) { try watch(#"{"interval":"600"}"#) }
    }

    @Test("a wrongly typed attribute changes nothing")
    func atomic() throws {
        let policy = WatchPolicy()
        #expect(throws: RequestJSONError.quotedWhereNonString) {
            try policy.applying([("enable", .token("true")), ("json", .string("true"))])
        }
        #expect(policy == WatchPolicy())
    }
}

@Suite("Response objects")
struct ResponseTests {
    static let device = GPSDDevice(path: "/dev/pts/0", driver: "NMEA0183", bps: 38400, cycle: 1)
    /// 2026-11-29T16:25:21.005Z
    static let activated: Int64 = 1_795_969_521_005_000_000

    @Test("VERSION, DEVICE, DEVICES, POLL and ERROR are byte for byte what gpsd 3.22 writes")
    func gpsdBytes() {
        #expect(text(GPSDResponse.version(release: "3.22", revision: "3.22"))
            == "{\"class\":\"VERSION\",\"release\":\"3.22\",\"rev\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}\r\n")
        #expect(text(GPSDResponse.device(Self.device, activated: Self.activated, sawData: true))
            == "{\"class\":\"DEVICE\",\"path\":\"/dev/pts/0\",\"driver\":\"NMEA0183\",\"activated\":\"2026-11-29T16:25:21.005Z\","
            + "\"flags\":1,\"native\":0,\"bps\":38400,\"parity\":\"N\",\"stopbits\":1,\"cycle\":1.00}\r\n")
        #expect(text(GPSDResponse.devices(Self.device, activated: Self.activated, sawData: false))
            == "{\"class\":\"DEVICES\",\"devices\":[{\"class\":\"DEVICE\",\"path\":\"/dev/pts/0\",\"driver\":\"NMEA0183\","
            + "\"activated\":\"2026-11-29T16:25:21.005Z\",\"native\":0,\"bps\":38400,\"parity\":\"N\",\"stopbits\":1,"
            + "\"cycle\":1.00}]}\r\n")
        #expect(text(GPSDResponse.deviceClosed(path: "/dev/pts/0"))
            == "{\"class\":\"DEVICE\",\"path\":\"/dev/pts/0\",\"activated\":0}\r\n")
        #expect(text(GPSDResponse.error("Unrecognized request '?FOO'"))
            == "{\"class\":\"ERROR\",\"message\":\"Unrecognized request '?FOO'\"}\r\n")
        #expect(text(GPSDResponse.poll(time: 1_795_969_522_017_999_999, active: 0, tpv: nil, sky: nil))
            == "{\"class\":\"POLL\",\"time\":\"2026-11-29T16:25:22.017Z\",\"active\":0,\"tpv\":[],\"gst\":[],\"sky\":[]}\r\n")
    }

    @Test("an inactive device has only its path and driver; POLL nests TPV and SKY without line ends")
    func inactiveAndPoll() {
        #expect(text(GPSDResponse.device(Self.device, activated: nil, sawData: false))
            == "{\"class\":\"DEVICE\",\"path\":\"/dev/pts/0\",\"driver\":\"NMEA0183\"}\r\n")
        let tpv = Array("{\"class\":\"TPV\",\"mode\":3}\r\n".utf8)
        let sky = Array("{\"class\":\"SKY\"}\r\n".utf8)
        #expect(text(GPSDResponse.poll(time: 0, active: 1, tpv: tpv, sky: sky))
            == "{\"class\":\"POLL\",\"time\":\"1970-01-01T00:00:00.000Z\",\"active\":1,\"tpv\":[{\"class\":\"TPV\",\"mode\":3}],"
            + "\"gst\":[],\"sky\":[{\"class\":\"SKY\"}]}\r\n")
    }

    @Test("PPS and TOFF carry real and clock seconds and nanoseconds")
    func timing() {
        let offset = TimeOffset(real: 1_700_000_001_000_000_000, clock: 1_700_000_000_999_876_543)
        #expect(text(GPSDResponse.pps(path: "/dev/ttyS0", offset))
            == "{\"class\":\"PPS\",\"device\":\"/dev/ttyS0\",\"real_sec\":1700000001,\"real_nsec\":0,"
            + "\"clock_sec\":1700000000,\"clock_nsec\":999876543,\"precision\":-20}\r\n")
        #expect(text(GPSDResponse.toff(path: "/dev/ttyS0", offset)).hasPrefix("{\"class\":\"TOFF\",\"device\":\"/dev/ttyS0\""))
    }

    @Test("ISO 8601 times across leap years, centuries and before 1970", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (951_782_400_000_000_000, "2000-02-29T00:00:00.000Z"),
        (4_107_542_399_999_000_000, "2100-02-28T23:59:59.999Z"),
        (-1_000_000, "1969-12-31T23:59:59.999Z"),
        (1_483_996_181_000_000_000, "2017-01-09T21:09:41.000Z"),
    ])
    func iso8601(nanoseconds: Int64, expected: String) {
        #expect(ISO8601.milliseconds(nanoseconds) == expected)
    }

    @Test("fixed decimals round like C's printf", arguments: [
        (1.0, 2, "1.00"), (0.1, 2, "0.10"), (0.125, 2, "0.13"), (-0.0004, 3, "0.000"), (-1.5, 0, "-2"), (12.3456, 1, "12.3"),
    ])
    func fixed(value: Double, decimals: Int, expected: String) {
        #expect(ResponseWriter.fixed(value, decimals: decimals) == expected)
    }

    @Test("strings are escaped")
    func escaping() {
        #expect(text(GPSDResponse.error("a\"b\\c\nd\u{1}")) == "{\"class\":\"ERROR\",\"message\":\"a\\\"b\\\\c\\nd\\u0001\"}\r\n")
    }

    @Test("escapes at either end and one after another, the text between them as it is", arguments: [
        ("", #""""#), ("plain", #""plain""#), ("\r\t", #""\r\t""#), ("\"x\"", #""\"x\"""#),
        ("\u{1f}ab\u{0}", #""\u001fab\u0000""#), ("°é ?WATCH\\", #""°é ?WATCH\\""#),
    ])
    func escapingRuns(value: String, expected: String) {
        #expect(text(GPSDResponse.error(value)) == "{\"class\":\"ERROR\",\"message\":" + expected + "}\r\n")
    }

    @Test("a report's strings escape quotes, backslashes and control characters as \\u00XX")
    func reportStringEscaping() {
        let line = GPSDReport.tpv(Fix(), device: "/dev/a\"b\\c\u{1}\u{1f}\n")
        #expect(line.contains(#""device":"/dev/a\"b\\c\u0001\u001f\u000a""#))
    }

    @Test("an RTK fix: gpsd's status 3 (RTK fixed) / 4 (float), dgpsAge and dgpsSta from NAV-PVT and RXM-RTCM")
    func rtkStatus() {
        var fix = Fix()
        fix.mode = .threeD
        fix.latitude = 51.5
        fix.longitude = -0.1
        fix.status = .rtkFixed
        fix.correctionAge = 2
        fix.referenceStation = 2003
        let fixed = GPSDReport.tpv(fix, device: "sim")
        #expect(fixed.contains(#""status":3"#), "\(fixed)")
        #expect(fixed.contains(#""dgpsAge":2.0"#) && fixed.contains(#""dgpsSta":2003"#), "\(fixed)")
        fix.status = .rtkFloat
        #expect(GPSDReport.tpv(fix, device: "sim").contains(#""status":4"#))
        // Without corrections used, no dgps fields even if an age was left over.
        fix.status = .gps
        #expect(!GPSDReport.tpv(fix, device: "sim").contains("dgpsAge"))
    }

    @Test("an object that outgrows the room reserved for it is written again with more, after what was there")
    func writerOutgrowsItsRoom() {
        func write(_ bytes: inout [UInt8], capacity: Int) {
            JSONWriter.append(to: &bytes, capacity: capacity) { j in
                j.begin(className: "TPV")
                j.string("device", "/dev/ttyAMA0")
                j.number("lat", 44.068897833, 9)
                j.int("mode", 3)
                j.end(lineEnding: true)
            }
        }
        var roomy = Array("before ".utf8)
        write(&roomy, capacity: 4096)
        var tight = Array("before ".utf8)
        write(&tight, capacity: 3)
        #expect(String(decoding: roomy, as: UTF8.self)
            == #"before {"class":"TPV","device":"/dev/ttyAMA0","lat":44.068897833,"mode":3}"# + "\r\n")
        #expect(tight == roomy)
    }
}
