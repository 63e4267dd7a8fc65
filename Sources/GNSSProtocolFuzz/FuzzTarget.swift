// libFuzzer entry point over the framer and the GNSSDecoder pipeline (decoders, epoch assembler).
// Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1 swift build --sanitize=fuzzer,address): libFuzzer
// supplies `main`, so a normal build leaves this target out (see Package.swift).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - feeding the input in chunks (sizes from the input itself) gives the same frames as feeding it whole,
//   and the same pipeline outputs (messages, epoch starts, provisional fixes, epochs) and counters;
// - every byte is accounted for: in a frame, discarded, or I2C filler;
// - a typed UBX or NMEA message re-encodes and decodes to itself (kept-whole messages excepted).

import GNSSProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let wholeChunk: (Int) -> Int = { _ in size }
    let splitChunk: (Int) -> Int = { index in size == 0 ? 1 : Int(input[index % size] % 37) + 1 }
    let whole = frames(input, chunk: wholeChunk)
    let split = frames(input, chunk: splitChunk)
    guard whole.frames == split.frames, whole.statistics == split.statistics else {
        fatalError("chunking changed the frames")
    }
    let s = whole.statistics
    let inFrames = whole.frames.reduce(0) { $0 + $1.count }
    guard inFrames + s.bytesDiscarded + s.fillerBytes == s.bytesReceived else {
        fatalError("bytes not accounted for")
    }
    let decoded = decode(input, chunk: wholeChunk)
    let decodedInChunks = decode(input, chunk: splitChunk)
    // A NaN a fuzzed value may produce is unequal to itself; the descriptions tell such outputs apart.
    guard decoded.outputs == decodedInChunks.outputs || "\(decoded.outputs)" == "\(decodedInChunks.outputs)",
        decoded.statistics == decodedInChunks.statistics
    else {
        fatalError("chunking changed the pipeline's outputs")
    }
    guard decoded.statistics.framer == whole.statistics else { fatalError("the pipeline framed differently") }
    for output in decoded.outputs {
        switch output {
        case .message(let message): checkRoundTrip(message)
        case .epoch(let epoch): if let fix = epoch.fix, let time = fix.time { _ = time.iso8601 }
        case .provisionalFix(let fix): if let time = fix.time { _ = time.iso8601 }
        case .undecodable, .epochStarted: break
        }
    }
    return 0
}

/// A typed message encodes to a frame that decodes to the same message.
private func checkRoundTrip(_ message: Message) {
    switch message {
    case .ubx(let ubx):
        if case .other = ubx {
        } else if case .poll = ubx {
        } else {
            guard (try? UBXMessage(frame: ArraySlice(ubx.frame))) == ubx else { fatalError("UBX round trip") }
        }
    case .nmea(let sentence):
        switch sentence {
        case .proprietary, .unsupported, .txt, .pmtk: break
        default:
            // Numbers re-encode with the format's decimals, so compare after one normalising round.
            let once = sentence.sentence()
            guard let again = try? NMEASentence(frame: ArraySlice(once)) else { fatalError("NMEA re-encode") }
            guard (try? NMEASentence(frame: ArraySlice(again.sentence()))) == again else {
                fatalError("NMEA round trip")
            }
        }
    case .rtcm3(let frame):
        _ = frame.messageNumber
    }
}

private let limits = Framer.Limits(maxNMEALength: 200, maxUBXPayload: 2048)

/// The pipeline's outputs (messages owned) and counters, fed in chunks and finished.
private func decode(
    _ input: UnsafeRawBufferPointer, chunk: (Int) -> Int
) -> (outputs: [GNSSDecoder.Output], statistics: GNSSDecoder.Statistics) {
    var decoder = GNSSDecoder(options: GNSSDecoder.Options(limits: limits, provisionalFixes: true))
    var out: [GNSSDecoder.Output] = []
    func drain() {
        while let output = decoder.next() {
            if case .message(let message) = output {
                out.append(.message(message.owned))
            } else {
                out.append(output)
            }
        }
    }
    var offset = 0
    var step = 0
    while offset < input.count {
        let end = min(input.count, offset + chunk(step))
        decoder.append(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
        drain()
        offset = end
        step += 1
    }
    decoder.finish()
    drain()
    return (out, decoder.statistics)
}

/// The framer alone: its frames (copied) and counters.
private func frames(
    _ input: UnsafeRawBufferPointer, chunk: (Int) -> Int
) -> (frames: [[UInt8]], statistics: FramerStatistics) {
    var framer = Framer(limits: limits)
    var out: [[UInt8]] = []
    var offset = 0
    var step = 0
    while offset < input.count {
        let end = min(input.count, offset + chunk(step))
        framer.append(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
        while let frame = framer.next() { out.append(Array(frame.bytes)) }
        offset = end
        step += 1
    }
    framer.finish()
    while let frame = framer.next() { out.append(Array(frame.bytes)) }
    return (out, framer.statistics)
}
