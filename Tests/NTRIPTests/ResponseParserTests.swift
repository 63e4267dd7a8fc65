// The response parser fed the same answers one byte at a time, all at once and at random split
// points (the FramerTests pattern): the same head, body, end and error every time.
import GNSSProtocol
import Testing

@testable import NTRIP

/// What a whole run of the parser gave, whatever the chunking.
struct ParsedAnswer: Equatable {
    var head: NTRIPResponseHead?
    var body: [UInt8] = []
    var ended = false
    var error: NTRIPResponseError?
    var partsAfterEnd = 0
}

/// Feeds `bytes` in chunks of `split`'s sizes, drains after each, then finishes.
func parseAnswer(
    _ bytes: [UInt8], limits: NTRIPResponseParser.Limits = .init(), seed: UInt64 = 0,
    split: (inout SeededGenerator) -> Int
) -> ParsedAnswer {
    var parser = NTRIPResponseParser(limits: limits)
    var result = ParsedAnswer()
    var random = SeededGenerator(seed: seed)
    func drain() {
        while result.error == nil {
            do {
                guard let part = try parser.next() else { return }
                switch part {
                case .head(let head):
                    #expect(result.head == nil, "a second head")
                    result.head = head
                case .body(let chunk):
                    #expect(!chunk.isEmpty, "an empty body part")
                    if result.ended { result.partsAfterEnd += 1 }
                    result.body += chunk
                case .end:
                    if result.ended { result.partsAfterEnd += 1 }
                    result.ended = true
                }
            } catch {
                result.error = error
            }
        }
    }
    var offset = 0
    while offset < bytes.count {
        let count = min(max(split(&random), 1), bytes.count - offset)
        parser.append(contentsOf: bytes[offset..<offset + count])
        offset += count
        drain()
    }
    parser.finish()
    drain()
    return result
}

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Answers as real casters write them.
enum Answers {
    static let rtcm: [UInt8] = RTCM3Frame.frame(payload: [0x3E, 0xD0, 1, 2, 3, 4, 5, 6])
        + RTCM3Frame.frame(payload: [0x43, 0x50] + [UInt8](repeating: 7, count: 40))
    /// RTKLIB's str2str: `ICY 200 OK` and the data, no empty line.
    static let rtklib = Array("ICY 200 OK\r\n".utf8) + rtcm
    /// pygnssutils' NTRIP 1 answer: with the empty line.
    static let icyWithEmptyLine = Array("ICY 200 OK\r\n\r\n".utf8) + rtcm
    static let icyWithFields = Array("ICY 200 OK\r\nServer: SNIP\r\nDate: today\r\n\r\n".utf8) + rtcm
    /// pygnssutils' NTRIP 2 answer: no CRLF after the status line, not chunked.
    static let pygnssutils = Array(("HTTP/1.1 200 OKNtrip-Version: Ntrip/2.0\r\nServer: PYGNSSUTILS_NTRIP_Caster_1.3.1\r\n"
        + "Date: Sat, 05 Dec 2026 12:00:00 GMT\r\nCache-Control: no-store, no-cache, max-age=0\r\nPragma: no-cache\r\n"
        + "Connection: close\r\nContent-Type: gnss/data\r\n\r\n").utf8) + rtcm
    /// NTRIP 2, chunked, with a chunk extension, an LF-only line and a trailer.
    static let chunked: [UInt8] = {
        var bytes = Array("HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let first = Array(rtcm[..<10]), second = Array(rtcm[10...])
        bytes += Array("a;name=value\r\n".utf8) + first + Array("\r\n".utf8)
        bytes += Array(String(second.count, radix: 16).utf8) + Array("\n".utf8) + second + Array("\n".utf8)
        bytes += Array("0\r\nX-Trailer: yes\r\n\r\n".utf8)
        return bytes
    }()
    static let sourcetableBody = "STR;MNT;Test;RTCM 3.3;1005(10);2;GPS;NET;DEU;52.00;13.00;0;0;RTKLIB;none;B;N;0;\r\n"
        + "ENDSOURCETABLE\r\n"
    /// str2str's sourcetable (NTRIP 1), captured.
    static let rtklibSourcetable = Array(("SOURCETABLE 200 OK\r\nServer: RTKLIB 2.4.3 b34\r\nDate: 2026/12/05 12:28:50 UTC\r\n"
        + "Connection: close\r\nContent-Type: text/plain\r\nContent-Length: \(sourcetableBody.utf8.count)\r\n\r\n"
        + sourcetableBody).utf8)
    static let unauthorized = Array("HTTP/1.0 401 Unauthorized\r\n".utf8)
}

@Suite("NTRIP response parser")
struct ResponseParserTests {
    static let answers: [(String, [UInt8])] = [
        ("rtklib", Answers.rtklib), ("icy-empty-line", Answers.icyWithEmptyLine), ("icy-fields", Answers.icyWithFields),
        ("pygnssutils", Answers.pygnssutils), ("chunked", Answers.chunked), ("sourcetable", Answers.rtklibSourcetable),
        ("401", Answers.unauthorized),
        ("binary", [0xD3, 0x00, 0x13] + Answers.rtcm), ("caster-message", Array("ERROR - Bad Password\r\n".utf8)),
        ("bad-chunk", Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8)),
        ("missing-crlf", Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY".utf8)),
        ("truncated-chunk", Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab".utf8)),
        ("bad-field", Array("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n".utf8)),
    ]

    @Test("one byte at a time, all at once and random splits give the same answer", arguments: 0..<answers.count)
    func splits(index: Int) {
        let bytes = Self.answers[index].1
        let whole = parseAnswer(bytes) { _ in bytes.count }
        let bytewise = parseAnswer(bytes) { _ in 1 }
        #expect(bytewise == whole, "\(Self.answers[index].0)")
        for seed in UInt64(0)..<20 {
            let random = parseAnswer(bytes, seed: seed) { Int.random(in: 1...17, using: &$0) }
            #expect(random == whole, "\(Self.answers[index].0), seed \(seed)")
        }
        #expect(whole.partsAfterEnd == 0)
    }

    @Test("RTKLIB's ICY answer: the head, then the frames with nothing skipped")
    func rtklib() {
        let parsed = parseAnswer(Answers.rtklib) { _ in 1 }
        #expect(parsed.head?.status == .icy(code: 200, reason: "OK"))
        #expect(parsed.body == Answers.rtcm)
        #expect(parsed.ended)
        #expect(parsed.error == nil)
        for bytes in [Answers.icyWithEmptyLine, Answers.icyWithFields] {
            #expect(parseAnswer(bytes) { _ in 3 }.body == Answers.rtcm)
        }
    }

    @Test("the ICY head comes as soon as its line is complete: a VRS caster sends nothing more before the GGA")
    func icyHeadAtOnce() throws {
        var parser = NTRIPResponseParser()
        parser.append(contentsOf: Array("ICY 200 OK\r\n".utf8))
        #expect(try parser.next() == .head(NTRIPResponseHead(status: .icy(code: 200, reason: "OK"))))
        #expect(try parser.next() == nil)
    }

    @Test("pygnssutils' NTRIP 2 status line runs into its first field: still a 200, not chunked")
    func pygnssutils() {
        let parsed = parseAnswer(Answers.pygnssutils) { _ in 5 }
        #expect(parsed.head?.code == 200)
        #expect(parsed.head?.isChunked == false)
        #expect(parsed.head?.field("content-type") == "gnss/data")
        #expect(parsed.body == Answers.rtcm)
    }

    @Test("chunked: extensions, LF-only lines and trailers; the body is the chunks' data")
    func chunked() {
        let parsed = parseAnswer(Answers.chunked) { _ in 4 }
        #expect(parsed.head?.isChunked == true)
        #expect(parsed.body == Answers.rtcm)
        #expect(parsed.ended)
        #expect(parsed.error == nil)
    }

    @Test("the sourcetable answer: its length, then the end")
    func sourcetable() {
        let parsed = parseAnswer(Answers.rtklibSourcetable) { _ in 7 }
        #expect(parsed.head?.isSourcetable == true)
        #expect(parsed.head?.contentLength == Answers.sourcetableBody.utf8.count)
        #expect(parsed.body == Array(Answers.sourcetableBody.utf8))
        #expect(parsed.ended)
    }

    @Test("garbage and broken answers give typed errors")
    func errors() {
        #expect(parseAnswer([0xD3, 0x00, 0x13] + Answers.rtcm) { _ in 2 }.error == .unrecognisedStatusLine("\\xD3"))
        #expect(parseAnswer(Array("ERROR - Bad Password\r\n".utf8)) { _ in 2 }.error
            == .unrecognisedStatusLine("ERROR - Bad Password"))
        #expect(parseAnswer(Self.answers[7 + 2].1) { _ in 3 }.error == .malformedChunkSize("zz"))
        #expect(parseAnswer(Self.answers[7 + 3].1) { _ in 3 }.error == .missingChunkTerminator)
        #expect(parseAnswer(Self.answers[7 + 4].1) { _ in 3 }.error == .truncated(part: "chunked body"))
        #expect(parseAnswer(Array("HTTP/1.1 20".utf8)) { _ in 3 }.error == .truncated(part: "status line"))
        // A head cut short by the close is the head that came.
        let cut = parseAnswer(Array("HTTP/1.1 200 OK\r\nServer: x\r\nDa".utf8)) { _ in 3 }
        #expect(cut.head?.fields == [NTRIPHeaderField(name: "Server", value: "x")])
        #expect(cut.ended && cut.error == nil)
        #expect(parseAnswer(Self.answers[7 + 5].1) { _ in 3 }.error == .malformedField("no colon here"))
        let long = Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 5000) + "\r\n\r\n").utf8)
        #expect(parseAnswer(long) { _ in 100 }.error == .lineTooLong(limit: 4096))
        // str2str's 401: the status line, then the close.
        let unauthorized = parseAnswer(Answers.unauthorized) { _ in 1 }
        #expect(unauthorized.head?.status == .http(version: "HTTP/1.0", code: 401, reason: "Unauthorized"))
        #expect(unauthorized.error == nil)
    }

    @Test("after an error, next() throws it again", arguments: [UInt64(1), 2, 3])
    func errorSticks(seed: UInt64) {
        var parser = NTRIPResponseParser()
        parser.append(contentsOf: [0x00, 0x01])
        #expect(throws: NTRIPResponseError.self) { try parser.next() }
        parser.append(contentsOf: Array("ICY 200 OK\r\n".utf8))
        #expect(throws: NTRIPResponseError.self) { try parser.next() }
    }
}


@Suite("The response parser at its line limit")
struct ResponseParserLineLimitTests {
    // Found by the NTRIP fuzz target: a status line whose byte at the limit was a CR followed by another byte
    // was "not an NTRIP answer" when it came whole and "too long" when it came byte by byte (the CR, last in the
    // buffer, might still have been the CR of a CRLF). Now the limit comes first: too long either way.
    @Test("a byte past the limit makes the line too long, whatever the byte and whatever follows it",
          arguments: [[0x0D, 0x4D, 0x0A], [0x0D, 0x0A], [0x01, 0x0A], [0x41]] as [[UInt8]])
    func limitFirst(after: [UInt8]) {
        let limits = NTRIPResponseParser.Limits(maxLineLength: 16)
        let bytes = Array("ICY 200 OKxxxxxx".utf8) + after
        let whole = parseAnswer(bytes, limits: limits) { _ in bytes.count }
        let bytewise = parseAnswer(bytes, limits: limits) { _ in 1 }
        #expect(whole.error == .lineTooLong(limit: 16))
        #expect(bytewise == whole)
    }

    @Test("the CR of a line's CR LF counts toward the limit, its LF does not, fed whole or byte by byte")
    func crCounts() {
        let limits = NTRIPResponseParser.Limits(maxLineLength: 16)
        for (text, fits) in [("ICY 200 OKxxxxx\r\n", true), ("ICY 200 OKxxxxxx\n", true), ("ICY 200 OKxxxxxx\r\n", false)] {
            let bytes = Array(text.utf8)
            let whole = parseAnswer(bytes, limits: limits) { _ in bytes.count }
            #expect(fits ? whole.error == nil && whole.head != nil : whole.error == .lineTooLong(limit: 16), "\(text)")
            #expect(parseAnswer(bytes, limits: limits) { _ in 1 } == whole, "\(text)")
        }
    }
}
