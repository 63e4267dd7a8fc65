// The pipeline: any chunking gives the same outputs; it gives what framer, decoders and assembler give by
// hand; each message comes before what it brought about; its counters agree with its outputs.

import Foundation
import GNSSProtocol
import Testing
import TestSupport

/// Feeds `bytes` in chunks cut by `split`, then finishes; returns every output (messages made owned) and
/// the counters.
private func decodeAll(
    _ bytes: [UInt8], options: GNSSDecoder.Options = GNSSDecoder.Options(),
    split: (inout SeededGenerator) -> Int, seed: UInt64 = 1
) -> (outputs: [GNSSDecoder.Output], statistics: GNSSDecoder.Statistics) {
    var decoder = GNSSDecoder(options: options)
    var random = SeededGenerator(seed: seed)
    var outputs: [GNSSDecoder.Output] = []
    func drain() {
        while let output = decoder.next() {
            if case .message(let message) = output {
                outputs.append(.message(message.owned))
            } else {
                outputs.append(output)
            }
        }
    }
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + max(1, split(&random)))
        decoder.append(contentsOf: bytes[offset..<end])
        drain()
        offset = end
    }
    decoder.finish()
    drain()
    return (outputs, decoder.statistics)
}

/// A short name for each output, to check their order.
private func kinds(_ outputs: [GNSSDecoder.Output]) -> [String] {
    outputs.map { output in
        switch output {
        case .message: "message"
        case .undecodable: "undecodable"
        case .epochStarted: "started"
        case .provisionalFix: "provisional"
        case .epoch: "epoch"
        }
    }
}

private func corpusCapture(_ name: String) throws -> [UInt8] {
    try captureBytes(TestPaths.corpus().appendingPathComponent("gpsd/" + name))
}

@Suite("GNSSDecoder")
struct GNSSDecoderTests {
    /// NMEA only, UBX only, both with RTCM 3, and one with HNR-PVT between epochs.
    static let captures = [
        "ublox-8.log", "ublox-neo-m8n.log", "ublox-f9p-rtcm.log", "ublox-zed-f9t-ubx_nmea_l5.log",
        "ublox-neo-m8u-hnr.log",
    ]

    @Test("one byte at a time, all at once and random splits give the same outputs", arguments: 0..<10)
    func splits(seed: UInt64) {
        let stream = StreamFixtures.stream(StreamFixtures.frames(count: 300, seed: seed), garbageSeed: seed)
        let options = GNSSDecoder.Options(provisionalFixes: true)
        let whole = decodeAll(stream, options: options, split: { _ in stream.count })
        let bytewise = decodeAll(stream, options: options, split: { _ in 1 })
        let random = decodeAll(stream, options: options, split: { Int.random(in: 1...300, using: &$0) }, seed: seed)
        #expect(whole.statistics.epochs > 0 && whole.statistics.messages > 0)
        #expect(bytewise.outputs == whole.outputs)
        #expect(random.outputs == whole.outputs)
        #expect(bytewise.statistics == whole.statistics)
        #expect(random.statistics == whole.statistics)
    }

    @Test("receiver captures: random splits give the same outputs as the whole", arguments: captures)
    func captureSplits(name: String) throws {
        let bytes = try corpusCapture(name)
        let options = GNSSDecoder.Options(provisionalFixes: true)
        let whole = decodeAll(bytes, options: options, split: { _ in bytes.count })
        let random = decodeAll(bytes, options: options, split: { Int.random(in: 1...200, using: &$0) }, seed: 7)
        #expect(whole.statistics.fixes > 0)
        #expect(random.outputs == whole.outputs)
        #expect(random.statistics == whole.statistics)
    }

    @Test("the same messages, errors, epochs and counts as framer, decoders and assembler by hand", arguments: captures)
    func sameAsByHand(name: String) throws {
        let bytes = try corpusCapture(name)
        var framer = Framer()
        var assembler = EpochAssembler()
        var messages: [Message] = []
        var errors: [DecodeError] = []
        var epochs: [Epoch] = []
        framer.append(contentsOf: bytes)
        framer.finish()
        while let frame = framer.next() {
            do {
                let message = try Message(frame: frame).owned
                messages.append(message)
                epochs += assembler.consume(message)
            } catch {
                errors.append(error)
            }
        }
        if let last = assembler.finish() { epochs.append(last) }

        let (outputs, statistics) = decodeAll(bytes, split: { _ in 4096 })
        let decoded: [Message] = outputs.compactMap { if case .message(let m) = $0 { m } else { nil } }
        let failures: [DecodeError] = outputs.compactMap { if case .undecodable(_, let e) = $0 { e } else { nil } }
        let ended: [Epoch] = outputs.compactMap { if case .epoch(let e) = $0 { e } else { nil } }
        #expect(decoded == messages)
        #expect(failures == errors)
        #expect(ended == epochs)
        #expect(statistics.framer == framer.statistics)
        #expect(statistics.messages == messages.count && statistics.decodeErrors == errors.count)
        #expect(statistics.epochs == epochs.count)
        #expect(statistics.fixes == epochs.filter { $0.fix != nil }.count)
        #expect(statistics.fixesWithPosition == epochs.filter { $0.fix?.hasPosition == true }.count)
        #expect(statistics.skyViews == epochs.filter { $0.sky != nil }.count)
        #expect(statistics.provisionalFixes == 0, "provisional fixes are off by default")
    }

    @Test("each message comes first; a start follows the first message after an epoch ended; then its ends")
    func order() {
        // The first cycle ends when the second's RMC arrives (and teaches that ZDA ends a cycle); from then on
        // ZDA ends each epoch at once. The message after the one that ended an epoch starts the next.
        let bytes = nmeaCycle(second: 41) + nmeaCycle(second: 42) + nmeaCycle(second: 43)
        let others = messages(nmeaCycle(second: 41)).count - 1
        let (outputs, statistics) = decodeAll(bytes, split: { _ in 1 })
        var expected = ["message", "started"] + Array(repeating: "message", count: others)
        expected += ["message", "epoch", "message", "started"] + Array(repeating: "message", count: others - 2)
        expected += ["message", "epoch"]
        expected += ["message", "started"] + Array(repeating: "message", count: others - 1) + ["message", "epoch"]
        #expect(kinds(outputs) == expected)
        #expect(statistics.epochs == 3 && statistics.fixesWithPosition == 3)
    }

    @Test("provisional fixes: once per epoch, as soon as it has a position, before the epoch ends")
    func provisional() throws {
        let bytes = nmeaCycle(second: 41) + nmeaCycle(second: 42) + nmeaCycle(second: 43)
        let (outputs, statistics) = decodeAll(bytes, options: GNSSDecoder.Options(provisionalFixes: true),
                                              split: { _ in 7 })
        let kinds = kinds(outputs)
        // The cycle's first sentence (RMC) carries the position: its provisional fix follows it at once, but
        // for the RMC that ended the epoch before, where the next sentence gives it.
        #expect(Array(kinds.prefix(3)) == ["message", "started", "provisional"])
        let secondRMC = messages(nmeaCycle(second: 41)).count
        let second = try #require(outputs.indices.filter { if case .message = outputs[$0] { true } else { false } }
            .dropFirst(secondRMC).first)
        #expect(Array(kinds[second...].prefix(5)) == ["message", "epoch", "message", "started", "provisional"])
        #expect(kinds.filter { $0 == "provisional" }.count == 3 && statistics.provisionalFixes == 3)
        let provisional: [Fix] = outputs.compactMap { if case .provisionalFix(let f) = $0 { f } else { nil } }
        let final: [Fix] = outputs.compactMap { if case .epoch(let e) = $0 { e.fix } else { nil } }
        #expect(provisional.count == final.count)
        for (early, complete) in zip(provisional, final) {
            #expect(early.hasPosition && early.latitude == complete.latitude && early.time == complete.time)
        }
        // Each comes before its epoch ends: provisional and epoch alternate.
        #expect(kinds.filter { $0 == "provisional" || $0 == "epoch" } == Array(
            repeating: ["provisional", "epoch"], count: 3).flatMap { $0 })
    }

    @Test("HNR-PVT is an epoch of its own between epochs; inside one it shares that epoch's start")
    func highRateFix() throws {
        let hnr = UBXHnrPVT(
            iTOW: 10, year: 2024, month: 1, day: 30, hour: 15, minute: 32, second: 0, valid: 7, nano: 3,
            gpsFix: 3, flags: 0x0D, lon: 93_117_308, lat: 487_410_002, height: 315_424, hMSL: 267_813,
            gSpeed: 805, speed: 810, headMot: 18_397_720, headVeh: 18_397_720, hAcc: 5099, vAcc: 11285,
            sAcc: 280, headAcc: 484_860)
        let between = decodeAll(hnr.frame, split: { _ in 5 }).outputs
        #expect(kinds(between) == ["message", "started", "epoch"])
        // The cycle's first two sentences (RMC, VTG), then the HNR-PVT.
        let cycle = nmeaCycle(second: 41)
        let secondEnd = try #require(cycle.indices.filter { cycle[$0] == 0x0A }.dropFirst().first) + 1
        let inside = decodeAll(Array(cycle[..<secondEnd]) + hnr.frame, split: { _ in 5 }).outputs
        #expect(kinds(inside) == ["message", "started", "message", "message", "epoch", "epoch"])
        #expect(inside[3] == .message(.ubx(.hnrPVT(hnr))))
    }

    @Test("a frame that does not decode is an output with its error, and counted")
    func undecodable() throws {
        let bad = Array((sentenceWithChecksum("GPGGA,120000.00") + "\r\n").utf8)
        let good = PMTK.standby
        let (outputs, statistics) = decodeAll(bad + good, split: { _ in 3 })
        var expected: DecodeError?
        do {
            _ = try NMEASentence(frame: ArraySlice(bad))
        } catch {
            expected = error
        }
        let error = try #require(expected)
        // The first message of the stream starts an epoch's output, whatever it is.
        #expect(outputs == [.undecodable(.nmea, error)] + messages(good).map { .message($0) } + [.epochStarted])
        #expect(statistics.decodeErrors == 1 && statistics.messages == 1 && statistics.framer.nmeaFrames == 2)
    }

    @Test("reset drops the bytes not yet framed and keeps the epoch in progress")
    func reset() throws {
        let cycle = nmeaCycle(second: 41)
        let rmcEnd = try #require(cycle.firstIndex(of: 0x0A)) + 1
        let cut = Array("$GPGGA,1200".utf8)
        var decoder = GNSSDecoder()
        decoder.append(contentsOf: Array(cycle[..<rmcEnd]) + cut)
        var outputs: [GNSSDecoder.Output] = []
        while let output = decoder.next() { outputs.append(output) }
        #expect(kinds(outputs) == ["message", "started"])
        decoder.reset()
        #expect(decoder.statistics.framer.bytesDiscarded == cut.count)
        decoder.append(contentsOf: cycle[rmcEnd...])
        decoder.finish()
        outputs.removeAll()
        while let output = decoder.next() { outputs.append(output) }
        // The rest of the cycle joins the epoch the RMC began, which ends with the stream.
        let rest = messages(Array(cycle[rmcEnd...])).count
        #expect(kinds(outputs) == Array(repeating: "message", count: rest) + ["epoch"])
        #expect(decoder.statistics.epochs == 1 && decoder.statistics.framer.bytesDiscarded == cut.count)
    }

    @Test("a message kept whole, made owned, equals the one that shares the decoder's buffer; typed ones own theirs")
    func owned() {
        let rtcm = RTCM3Frame.frame(payload: [0x3E, 0xD0, 1, 2, 3])
        let unknown = UBX.frame(UBX.MessageID(0x0A, 0x09), payload: [1, 2, 3, 4])
        let proprietary = Array((sentenceWithChecksum("PUBX,00,123") + "\r\n").utf8)
        let typed = PMTK.standby
        var decoder = GNSSDecoder()
        decoder.append(contentsOf: rtcm + unknown + proprietary + typed)
        var kept: [Message] = []
        while let output = decoder.next() {
            guard case .message(let message) = output else { continue }
            #expect(message.owned == message)
            kept.append(message.owned)
        }
        #expect(kept == messages(rtcm + unknown + proprietary + typed))
        #expect(kept.count == 4)
        guard case .rtcm3(let frame) = kept[0], case .ubx(.other(_, let payload)) = kept[1],
            case .nmea(.proprietary(_, let sentence)) = kept[2]
        else {
            Issue.record("kept: \(kept)")
            return
        }
        // The copies are arrays of their own, indexed from 0.
        #expect(frame.bytes.startIndex == 0 && payload.startIndex == 0 && sentence.startIndex == 0)
        #expect(frame.messageNumber == 1005 && Array(payload) == [1, 2, 3, 4])
    }
}
