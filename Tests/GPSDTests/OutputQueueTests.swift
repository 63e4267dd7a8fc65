// A slow client's output queue: whole lines dropped, oldest first, never a line cut.
@testable import GPSD
import Testing

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

@Suite("Output queue")
struct OutputQueueTests {
    @Test("a full queue drops the oldest whole lines and counts them")
    func dropsOldest() throws {
        var queue = OutputQueue(limit: 10)
        #expect(queue.append([1, 1, 1, 1]) == 0)
        #expect(queue.append([2, 2, 2, 2]) == 0)
        #expect(queue.append([3, 3, 3, 3]) == 1)
        #expect(queue.queuedBytes == 8)
        #expect(queue.append(Array(repeating: 9, count: 11)) == 1)
        #expect(queue.dropped == 2)
        var written: [UInt8] = []
        #expect(queue.write { written += $0; return $0.count })
        #expect(written == [2, 2, 2, 2, 3, 3, 3, 3])
        #expect(queue.isEmpty && queue.queuedBytes == 0)
    }

    @Test("a partly written line is never dropped or cut")
    func partial() {
        var queue = OutputQueue(limit: 10)
        queue.append([1, 1, 1, 1, 1, 1])
        var written: [UInt8] = []
        #expect(!queue.write { written += $0.prefix(2); return min(2, $0.count) })
        #expect(queue.queuedBytes == 4)
        #expect(queue.append([2, 2, 2, 2, 2, 2, 2]) == 1)
        #expect(queue.append([3, 3, 3]) == 0)
        #expect(queue.write { written += $0; return $0.count })
        #expect(written == [1, 1, 1, 1, 1, 1, 3, 3, 3])
        #expect(queue.dropped == 1)
    }

    @Test("queued bytes never exceed the limit whatever is appended")
    func bounded() {
        var queue = OutputQueue(limit: 1000)
        var random = SplitMix(state: 7)
        for step in 0..<10_000 {
            queue.append([UInt8](repeating: UInt8(step & 0xFF), count: Int.random(in: 1...300, using: &random)))
            #expect(queue.queuedBytes <= 1000)
            if step % 7 == 0 {
                _ = queue.write { min($0.count, Int.random(in: 0...200, using: &random)) }
            }
        }
    }
}
