// The scans that read eight bytes at a time agree with byte-at-a-time ones on bytes chosen to break a wrong
// mask: a comma with its high bit set, neighbours of every boundary, zero and 0xFF.

@testable import GNSSProtocol
import Testing

@Suite("Word-at-a-time scans")
struct WordScanTests {
    @Test("the word-at-a-time comma scan agrees with a byte-at-a-time one at every length and offset")
    func commaScan() {
        // Bytes that differ from a comma by one bit, or set its high bit, catch a wrong mask.
        let alphabet: [UInt8] = [0x2C, 0x2C, 0xAC, 0x2D, 0x2E, 0x0C, 0x00, 0xFF, 0x7F, 0x41]
        var random = SeededGenerator(seed: 44)
        for length in 0...40 {
            for _ in 0..<25 {
                let bytes = (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
                bytes.withUnsafeBytes { raw in
                    #expect(Commas.count(in: raw) == bytes.count(where: { $0 == 0x2C }))
                    for start in 0...length {
                        let expected = bytes[start...].firstIndex(of: 0x2C) ?? length
                        #expect(Commas.first(in: raw, from: start) == expected)
                    }
                }
            }
        }
    }

    @Test("the framer's eight-byte body check and checksum agree with a byte-at-a-time one")
    func nmeaWord() {
        let alphabet: [UInt8] = [0x2A, 0x2B, 0x2C, 0x7E, 0x7F, 0x80, 0xAB, 0xFE, 0xFF, 0x00, 0x0D, 0x0A, 0x24, 0x20, 0x41]
        var random = SeededGenerator(seed: 43)
        for round in 0..<20_000 {
            // Mostly body bytes, so the words that pass are tested too.
            let bytes = (0..<8).map { _ in
                round % 2 == 0 && random.next() % 8 != 0
                    ? UInt8(0x2B + random.next() % 0x54) : alphabet[Int(random.next() % UInt64(alphabet.count))]
            }
            let word = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            #expect(NMEAWord.isBody(word) == bytes.allSatisfy { (0x2B...0x7E).contains($0) }, "\(bytes)")
            #expect(NMEAWord.xor(word) == bytes.reduce(0, ^))
        }
    }
}
