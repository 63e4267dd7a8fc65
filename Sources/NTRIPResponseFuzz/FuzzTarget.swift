// libFuzzer entry point over a caster's answer: NTRIP's NTRIPResponseParser (status line, header
// fields, ICY preamble, length, chunked and close-delimited bodies) and the sourcetable parser. Built
// only by scripts/fuzz.sh (GNSSHAT_FUZZ=1).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - the answer fed whole, in two parts (the split point taken from the input) and, for one input in
//   eight (chosen by a hash of the input, so a saved crash replays it), one byte at a time gives the same
//   head, the same body bytes, the same end and the same typed error;
// - the parts come in order: at most one head, first; body parts never empty; nothing after the end;
//   after an error, asking again throws the same error;
// - a length-delimited body is never longer than its Content-Length;
// - the body is read as a sourcetable: its records and skipped lines add up to its non-blank lines
//   before ENDSOURCETABLE (a model that walks the bytes; it took the lines apart as strings, a quarter of
//   the time, and ran on one input in eight).

import NTRIP

private let limits = NTRIPResponseParser.Limits(maxLineLength: 256, maxFields: 16, maxChunkSize: 1 << 16)

/// What a parser made of a whole answer.
private struct Answer: Equatable {
    var head: NTRIPResponseHead?
    var body: [UInt8] = []
    var ended = false
    var error: NTRIPResponseError?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let whole = parse(input, split: size)
    let split = size == 0 ? 0 : Int(input[0]) % (size + 1)
    guard parse(input, split: split) == whole else { fatalError("an answer split in two parsed differently") }
    if sampleHash(input) & 7 == 0 {
        guard parse(input, split: 0, bytewise: true) == whole else {
            fatalError("an answer fed one byte at a time parsed differently")
        }
    }
    if let head = whole.head, !head.isChunked, let length = head.contentLength, case .http = head.status {
        guard whole.body.count <= length else { fatalError("a body longer than its Content-Length") }
    }
    checkSourcetable(whole.body, Sourcetable(parsing: whole.body))
    return 0
}

/// Parses `input` fed as `input[..<split]` then the rest (or one byte at a time), then closed.
private func parse(_ input: UnsafeBufferPointer<UInt8>, split: Int, bytewise: Bool = false) -> Answer {
    var parser = NTRIPResponseParser(limits: limits)
    var answer = Answer()
    func drain() {
        do throws(NTRIPResponseError) {
            while let part = try parser.next() {
                guard !answer.ended else { fatalError("a part after the end") }
                switch part {
                case .head(let head):
                    guard answer.head == nil, answer.body.isEmpty else { fatalError("a head after the first part") }
                    answer.head = head
                case .body(let bytes):
                    guard answer.head != nil, !bytes.isEmpty else { fatalError("a body part before a head, or empty") }
                    answer.body += bytes
                case .end:
                    guard answer.head != nil else { fatalError("the end before a head") }
                    answer.ended = true
                }
            }
        } catch {
            if answer.error == nil { answer.error = error }
            do throws(NTRIPResponseError) {
                _ = try parser.next()
                fatalError("a parser that failed went on")
            } catch let again {
                guard again == error else { fatalError("a parser that failed threw another error") }
            }
        }
    }
    if bytewise {
        for index in input.indices {
            parser.append(contentsOf: UnsafeBufferPointer(rebasing: input[index..<(index + 1)]))
            drain()
        }
    } else {
        parser.append(contentsOf: UnsafeBufferPointer(rebasing: input[..<split]))
        drain()
        parser.append(contentsOf: UnsafeBufferPointer(rebasing: input[split...]))
        drain()
    }
    parser.finish()
    drain()
    return answer
}

/// Every non-blank line before ENDSOURCETABLE is a stream, a caster, a network or a skipped line. The
/// model walks the bytes by index (the parser splits them into lines): a line's end is the next LF, CR and
/// space at either end are not part of it, and the keyword's letters match in either case (`byte | 0x20`).
private func checkSourcetable(_ body: [UInt8], _ table: Sourcetable) {
    var lines = 0
    var ended = false
    var start = 0
    while start <= body.count {
        let end = body[start...].firstIndex(of: UInt8(ascii: "\n")) ?? body.count
        var first = start
        var last = end
        while first < last, body[first] == UInt8(ascii: "\r") || body[first] == UInt8(ascii: " ") { first += 1 }
        while last > first, body[last - 1] == UInt8(ascii: "\r") || body[last - 1] == UInt8(ascii: " ") { last -= 1 }
        if first < last {
            if last - first == endKeyword.count, zip(body[first..<last], endKeyword).allSatisfy({ $0 | 0x20 == $1 }) {
                ended = true
                break
            }
            lines += 1
        }
        start = end + 1
    }
    guard table.isComplete == ended else { fatalError("ENDSOURCETABLE seen differently") }
    let counted = table.streams.count + table.casters.count + table.networks.count + table.skippedLines
    guard counted == lines else { fatalError("sourcetable lines lost: \(counted) of \(lines)") }
}

private let endKeyword = Array("endsourcetable".utf8)

/// A hash of the whole input (FNV-1a, then murmur3's finaliser, so that every bit of every byte moves its
/// low bits), whose low bits pick the samples: a saved crash replays its checks, and a mutant that changed
/// any byte is drawn afresh.
private func sampleHash(_ input: UnsafeBufferPointer<UInt8>) -> UInt32 {
    var hash: UInt32 = 2_166_136_261
    for byte in input { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    hash = (hash ^ (hash >> 16)) &* 0x85EB_CA6B
    hash = (hash ^ (hash >> 13)) &* 0xC2B2_AE35
    return hash ^ (hash >> 16)
}
