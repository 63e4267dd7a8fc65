// The framer: any chunking gives the same frames; a bad byte costs at most the frame it sits in.

import GNSSProtocol
import Testing

@Suite("Framer")
struct FramerTests {
    static let frames = StreamFixtures.frames(count: 300, seed: 7)

    @Test("clean stream: every frame comes out, nothing discarded")
    func clean() {
        let (out, statistics) = frameAll(StreamFixtures.stream(Self.frames), split: { _ in 1 << 20 })
        #expect(out == Self.frames)
        #expect(statistics.bytesDiscarded == 0)
        #expect(statistics.checksumFailures == 0)
        #expect(statistics.frames == Self.frames.count)
    }

    @Test("one byte at a time, all at once and random splits give the same frames", arguments: 0..<20)
    func splits(seed: UInt64) {
        let stream = StreamFixtures.stream(Self.frames, garbageSeed: seed)
        let whole = frameAll(stream, split: { _ in stream.count })
        let bytewise = frameAll(stream, split: { _ in 1 })
        let random = frameAll(stream, split: { Int.random(in: 1...300, using: &$0) }, seed: seed)
        #expect(whole.0 == Self.frames)
        #expect(bytewise.0 == whole.0)
        #expect(random.0 == whole.0)
        #expect(bytewise.1 == whole.1)
        #expect(random.1 == whole.1)
        let s = whole.1
        let inFrames = whole.0.reduce(0) { $0 + $1.count }
        #expect(inFrames + s.bytesDiscarded + s.fillerBytes == s.bytesReceived)
    }

    @Test("a corrupted byte costs at most the frame it sits in", arguments: 0..<8)
    func corruptedByte(seed: UInt64) {
        var random = SeededGenerator(seed: 1000 + seed)
        let frames = StreamFixtures.frames(count: 40, seed: seed)
        var clean = StreamFixtures.stream(frames)
        // Where each frame starts, to know which frame a flipped byte hits.
        var starts: [Int] = []
        var offset = 0
        for frame in frames {
            starts.append(offset)
            offset += frame.count
        }
        for _ in 0..<250 {
            let position = Int.random(in: 0..<clean.count, using: &random)
            let original = clean[position]
            var replacement = UInt8.random(in: 0...255, using: &random)
            if replacement == original { replacement ^= 0x55 }
            clean[position] = replacement
            let hit = starts.lastIndex { $0 <= position } ?? 0
            let split = Int.random(in: 1...64, using: &random)
            let (out, _) = frameAll(clean, split: { _ in split })
            var expected = frames
            expected.remove(at: hit)
            // Every frame but the hit one must come out, in order; the hit one may survive only if the
            // flip left it valid (it cannot: every frame has a checksum), or a new frame may not appear.
            #expect(out == expected, "flip at \(position) (frame \(hit)) lost other frames")
            clean[position] = original
        }
    }

    @Test("an NMEA sentence cut by the start of a UBX frame costs only that sentence")
    func sentenceCutByUBX() {
        let sentence = NMEAGGA(
            time: TimeOfDay(hour: 1, minute: 2, second: 3), latitude: 44, longitude: -121, quality: 1,
            satellitesUsed: 8, hdop: 1, altitudeMSL: 100, geoidSeparation: -20
        ).sentence()
        let ubx = UBX.poll(.monVER)
        let next = NMEAZDA(time: TimeOfDay(hour: 1, minute: 2, second: 3), day: 1, month: 2, year: 2024).sentence()
        let stream = Array(sentence.prefix(30)) + ubx + Array(sentence.dropFirst(30)) + next
        let (out, statistics) = frameAll(stream, split: { _ in 5 })
        #expect(out == [ubx, next])
        #expect(statistics.interruptedSentences == 1)
        #expect(statistics.bytesDiscarded == sentence.count)
    }

    @Test("I2C 0xFF filler between frames is skipped and counted; inside a frame it costs that frame")
    func filler() {
        let a = UBX.poll(.navPVT)
        let b = UBX.poll(.monVER)
        let c = PMTK.standby
        var stream = [UInt8](repeating: 0xFF, count: 100) + a + [UInt8](repeating: 0xFF, count: 7) + b + c
        var (out, statistics) = frameAll(stream, split: { _ in 3 })
        #expect(out == [a, b, c])
        #expect(statistics.fillerBytes == 107)
        #expect(statistics.bytesDiscarded == 0)
        stream = a + Array(b.prefix(4)) + [0xFF] + Array(b.dropFirst(4)) + c
        (out, statistics) = frameAll(stream, split: { _ in 2 })
        #expect(out == [a, c])
    }

    @Test("a length that cannot be right is dropped at once, without waiting for its payload")
    func impossibleLength() {
        // NAV-PVT is 92 bytes; this header claims 1000.
        let bogus: [UInt8] = [0xB5, 0x62, 0x01, 0x07, 0xE8, 0x03]
        let good = UBX.poll(.monVER)
        var framer = Framer()
        framer.append(contentsOf: bogus + good)
        let frame = framer.next()
        #expect(frame.map { Array($0.bytes) } == good)
        #expect(framer.statistics.impossibleLengths == 1)
        // Longer than the configured maximum payload: same.
        var small = Framer(limits: Framer.Limits(maxUBXPayload: 64))
        small.append(contentsOf: [0xB5, 0x62, 0x0A, 0x09, 0x00, 0x01] + good)
        #expect(small.next().map { Array($0.bytes) } == good)
        #expect(small.statistics.impossibleLengths == 1)
    }

    @Test("a truncated frame is given up for the frames it swallowed")
    func truncated() {
        let pvt = UBXNavPVT(
            iTOW: 1, time: GNSSTime(nanosecondsSinceEpoch: 1_700_000_000_000_000_000), fixType: 3, numSV: 9,
            latitude: 1, longitude: 2, altitudeHAE: 3, altitudeMSL: 4
        ).frame
        let after = (0..<10).map {
            NMEAZDA(time: TimeOfDay(hour: 0, minute: 0, second: $0), day: 1, month: 1, year: 2024).sentence()
        }
        let stream = Array(pvt.prefix(50)) + after.flatMap { $0 }
        let (out, statistics) = frameAll(stream, split: { _ in 16 })
        #expect(out == after)
        #expect(statistics.checksumFailures + statistics.interruptedSentences >= 1)
    }

    @Test("bad NMEA checksums and missing checksums are rejected")
    func nmeaChecksums() {
        let good = PMTK.standby
        var bad = good
        bad[bad.count - 3] = UInt8(ascii: "9")
        let missing = Array("$GPTXT,TELIT SW Version\r\n".utf8)
        let (out, statistics) = frameAll(bad + missing + good, split: { _ in 4 })
        #expect(out == [good])
        #expect(statistics.checksumFailures == 2)
    }

    @Test("bytes at the end of the stream that cannot complete a frame are rescanned")
    func finishRescans() {
        let good = UBX.poll(.monVER)
        // A header promising 500 bytes, then a complete frame, then the stream ends.
        let stream: [UInt8] = [0xB5, 0x62, 0x0A, 0x09, 0xF4, 0x01] + good
        let (out, _) = frameAll(stream, split: { _ in 3 })
        #expect(out == [good])
    }
}
