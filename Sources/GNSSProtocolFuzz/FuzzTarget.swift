// libFuzzer entry point over the framer, the decoders and the epoch assembler.
// Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1 swift build --sanitize=fuzzer,address): libFuzzer
// supplies `main`, so a normal build leaves this target out (see Package.swift).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - feeding the input in chunks (sizes from the input itself) gives the same frames as feeding it whole;
// - every byte is accounted for: in a frame, discarded, or I2C filler;
// - a typed UBX or NMEA message re-encodes and decodes to itself (kept-whole messages excepted).

import GNSSProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let whole = frames(input, chunk: { _ in size })
    let split = frames(
        input,
        chunk: { index in
            size == 0 ? 1 : Int(input[index % size] % 37) + 1
        })
    guard whole.frames == split.frames, whole.statistics == split.statistics else {
        fatalError("chunking changed the frames")
    }
    let s = whole.statistics
    let inFrames = whole.frames.reduce(0) { $0 + $1.count }
    guard inFrames + s.bytesDiscarded + s.fillerBytes == s.bytesReceived else {
        fatalError("bytes not accounted for")
    }
    var assembler = EpochAssembler()
    for bytes in whole.frames {
        var framer = Framer()
        framer.append(contentsOf: bytes)
        guard let frame = framer.next(), let message = try? Message(frame: frame) else { continue }
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
        assembler.consume(message) { epoch in
            if let fix = epoch.fix, let time = fix.time { _ = time.iso8601 }
        }
    }
    _ = assembler.finish()
    return 0
}

private func frames(
    _ input: UnsafeRawBufferPointer, chunk: (Int) -> Int
) -> (frames: [[UInt8]], statistics: FramerStatistics) {
    var framer = Framer(limits: Framer.Limits(maxNMEALength: 200, maxUBXPayload: 2048))
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
