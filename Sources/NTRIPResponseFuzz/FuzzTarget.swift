// libFuzzer entry point over a caster's answer: NTRIP's NTRIPResponseParser (status line, header
// fields, ICY preamble, length, chunked and close-delimited bodies) and the sourcetable parser. Built
// only by scripts/fuzz.sh (GNSSHAT_FUZZ=1).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - the answer fed whole, in two parts (the split point taken from the input) and, for one input in
//   eight, one byte at a time gives the same head, the same body bytes, the same end and the same
//   typed error;
// - the parts come in order: at most one head, first; body parts never empty; nothing after the end;
//   after an error, asking again throws the same error;
// - a length-delimited body is never longer than its Content-Length;
// - the body is read as a sourcetable; for one input in eight, its records and skipped lines add up to
//   its non-blank lines before ENDSOURCETABLE (a model that takes the lines apart as strings: a quarter
//   of the time when run on every input).

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
    if sampled(input) {
        guard parse(input, split: 0, bytewise: true) == whole else {
            fatalError("an answer fed one byte at a time parsed differently")
        }
    }
    if let head = whole.head, !head.isChunked, let length = head.contentLength, case .http = head.status {
        guard whole.body.count <= length else { fatalError("a body longer than its Content-Length") }
    }
    let table = Sourcetable(parsing: whole.body)
    if sampled(input) { checkSourcetable(whole.body, table) }
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

/// Every non-blank line before ENDSOURCETABLE is a stream, a caster, a network or a skipped line.
private func checkSourcetable(_ body: [UInt8], _ table: Sourcetable) {
    var lines = 0
    var ended = false
    for raw in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
        let blank = raw.allSatisfy { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: " ") }
        if blank { continue }
        let scalars = String(decoding: raw, as: UTF8.self).unicodeScalars
        let trimmed = scalars.drop { $0 == "\r" || $0 == " " }.reversed().drop { $0 == "\r" || $0 == " " }
        if String(String.UnicodeScalarView(trimmed.reversed())).uppercased() == "ENDSOURCETABLE" {
            ended = true
            break
        }
        lines += 1
    }
    guard table.isComplete == ended else { fatalError("ENDSOURCETABLE seen differently") }
    let counted = table.streams.count + table.casters.count + table.networks.count + table.skippedLines
    guard counted == lines else { fatalError("sourcetable lines lost: \(counted) of \(lines)") }
}

/// One input in eight, by an FNV-1a hash of its bytes (a saved crash replays the same way).
private func sampled(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
    var hash: UInt32 = 2_166_136_261
    for byte in input.prefix(64) { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    hash = (hash ^ UInt32(truncatingIfNeeded: input.count)) &* 16_777_619
    return hash & 7 == 0
}
