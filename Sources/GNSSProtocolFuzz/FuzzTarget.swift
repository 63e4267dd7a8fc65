// libFuzzer entry point over the framer and the GNSSDecoder pipeline (decoders, epoch assembler):
// the receiver's bytes. Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1 swift build --sanitize=fuzzer,address):
// libFuzzer supplies `main`, so a normal build leaves this target out (see Package.swift).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - every input: every byte is accounted for (in a frame, discarded, or I2C filler); the pipeline frames
//   as the framer alone does;
// - one input in four: a typed UBX or NMEA message re-encodes and decodes to itself (kept-whole messages
//   excepted);
// - one input in 32: fed in chunks (sizes from the input itself), the framer gives the same frames and
//   counters as fed whole, and the pipeline the same outputs (messages, epoch starts, provisional fixes,
//   epochs) and counters; one input in 256 the same again, fed one byte at a time.
// The samples are chosen by a hash of the whole input, so a saved crash replays its checks. They are for
// throughput: an input's chunked feeds cost about one and a half times its other checks, its feed one byte
// at a time (an append and a `next()` per byte) two and a half times more, its round trips a quarter (see
// docs/benchmarks.md, "fuzz").

import GNSSProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let whole = countFrames(input)
    let s = whole.statistics
    guard whole.frameBytes + s.bytesDiscarded + s.fillerBytes == s.bytesReceived else {
        fatalError("bytes not accounted for")
    }
    let sample = sampleHash(input)
    let roundTrips = sample & 3 == 0
    let sampled = sample & 31 == 0
    var decoder = GNSSDecoder(options: GNSSDecoder.Options(limits: limits, provisionalFixes: true))
    var outputs: [GNSSDecoder.Output] = []
    func drain() {
        while let output = decoder.next() {
            check(output, roundTrips: roundTrips)
            if sampled { outputs.append(owned(output)) }
        }
    }
    decoder.append(input)
    drain()
    decoder.finish()
    drain()
    guard decoder.statistics.framer == s else { fatalError("the pipeline framed differently") }
    if sampled {
        checkChunking(
            input, frames: frames(input, chunk: { _ in size }), outputs: outputs, decoder.statistics,
            bytewise: sample & 255 == 0)
    }
    return 0
}

private let limits = Framer.Limits(maxNMEALength: 200, maxUBXPayload: 2048)

/// A hash of the whole input (FNV-1a, then murmur3's finaliser, so that every bit of every byte moves its
/// low bits), whose low bits pick the samples: a saved crash replays its checks, and a mutant that changed
/// any byte is drawn afresh.
private func sampleHash(_ input: UnsafeRawBufferPointer) -> UInt32 {
    var hash: UInt32 = 2_166_136_261
    for byte in input { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    hash = (hash ^ (hash >> 16)) &* 0x85EB_CA6B
    hash = (hash ^ (hash >> 13)) &* 0xC2B2_AE35
    return hash ^ (hash >> 16)
}

/// Fed in chunks from the input's own bytes (and, if `bytewise`, one byte at a time), the framer and the
/// pipeline give what they gave for the whole input.
private func checkChunking(
    _ input: UnsafeRawBufferPointer, frames whole: (frames: [[UInt8]], statistics: FramerStatistics),
    outputs: [GNSSDecoder.Output], _ statistics: GNSSDecoder.Statistics, bytewise: Bool
) {
    let size = input.count
    let splitChunk: (Int) -> Int = { index in size == 0 ? 1 : Int(input[index % size] % 37) + 1 }
    let feeds = [("chunks", splitChunk)] + (bytewise ? [("single bytes", { (_: Int) in 1 })] : [])
    for (name, chunk) in feeds {
        let split = frames(input, chunk: chunk)
        guard whole.frames == split.frames, whole.statistics == split.statistics else {
            fatalError("feeding \(name) changed the frames")
        }
        let decoded = decode(input, chunk: chunk)
        // A NaN a fuzzed value may produce is unequal to itself; the descriptions tell such outputs apart.
        guard decoded.outputs == outputs || "\(decoded.outputs)" == "\(outputs)", decoded.statistics == statistics
        else {
            fatalError("feeding \(name) changed the pipeline's outputs")
        }
    }
}

private func owned(_ output: GNSSDecoder.Output) -> GNSSDecoder.Output {
    if case .message(let message) = output { return .message(message.owned) }
    return output
}

private func check(_ output: GNSSDecoder.Output, roundTrips: Bool) {
    switch output {
    case .message(let message): if roundTrips { checkRoundTrip(message) }
    case .epoch(let epoch): if let fix = epoch.fix, let time = fix.time { _ = time.iso8601 }
    case .provisionalFix(let fix): if let time = fix.time { _ = time.iso8601 }
    case .undecodable, .epochStarted: break
    }
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

/// The framer over the whole input: the bytes in its frames (no copies) and its counters.
private func countFrames(_ input: UnsafeRawBufferPointer) -> (frameBytes: Int, statistics: FramerStatistics) {
    // The smallest buffer the limits allow: the default 16 KiB, zeroed, was a tenth of the time.
    var framer = Framer(limits: limits, initialCapacity: 0)
    var frameBytes = 0
    framer.append(input)
    framer.finish()
    while let frame = framer.next() { frameBytes += frame.bytes.count }
    return (frameBytes, framer.statistics)
}

/// The pipeline's outputs (messages owned) and counters, fed in chunks and finished.
private func decode(
    _ input: UnsafeRawBufferPointer, chunk: (Int) -> Int
) -> (outputs: [GNSSDecoder.Output], statistics: GNSSDecoder.Statistics) {
    var decoder = GNSSDecoder(options: GNSSDecoder.Options(limits: limits, provisionalFixes: true))
    var out: [GNSSDecoder.Output] = []
    var offset = 0
    var step = 0
    while offset < input.count {
        let end = min(input.count, offset + chunk(step))
        decoder.append(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
        while let output = decoder.next() { out.append(owned(output)) }
        offset = end
        step += 1
    }
    decoder.finish()
    while let output = decoder.next() { out.append(owned(output)) }
    return (out, decoder.statistics)
}

/// The framer alone: its frames (copied) and counters.
private func frames(
    _ input: UnsafeRawBufferPointer, chunk: (Int) -> Int
) -> (frames: [[UInt8]], statistics: FramerStatistics) {
    var framer = Framer(limits: limits, initialCapacity: 0)
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
