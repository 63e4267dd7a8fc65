import CLinuxShims
import GPSD
import Testing

@Suite("chrony SOCK refclock samples")
struct ChronySampleTests {
    @Test("a sample has chrony's sock_sample layout: timeval, offset, pulse, leap, pad, magic")
    func layout() throws {
        let sample = ChronySample(systemTime: 1_700_000_000_123_456_789, offset: -0.25, isPulse: true, leap: 1)
        let bytes = sample.datagram
        #expect(bytes.count == 40)
        func int64(_ at: Int) -> Int64 { bytes[at..<at + 8].reversed().reduce(0) { $0 << 8 | Int64($1) } }
        func int32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        #expect(int64(0) == 1_700_000_000)
        #expect(int64(8) == 123_456)
        #expect(Double(bitPattern: UInt64(bitPattern: int64(16))) == -0.25)
        #expect(int32(24) == 1)
        #expect(int32(28) == 1)
        #expect(int32(32) == 0)
        #expect(int32(36) == 0x534f_434b)
        #expect(ChronySample(datagram: bytes) == ChronySample(systemTime: 1_700_000_000_123_456_000, offset: -0.25,
                                                              isPulse: true, leap: 1))
        var corrupt = bytes
        corrupt[36] ^= 1
        #expect(ChronySample(datagram: corrupt) == nil)
        #expect(ChronySample(datagram: Array(bytes.dropLast())) == nil)
    }

    @Test("the bytes are those of the C struct, filled field by field", arguments: [
        ChronySample(systemTime: 1_700_000_000_123_456_789, offset: -0.25, isPulse: true, leap: 1),
        ChronySample(systemTime: 0, offset: 0),
        ChronySample(systemTime: -1_500_000_000, offset: 1e-9, leap: 2),
        ChronySample(systemTime: .max, offset: -.infinity, isPulse: true),
    ])
    func matchesTheCStruct(sample: ChronySample) {
        let seconds = sample.systemTime >= 0
            ? sample.systemTime / 1_000_000_000 : (sample.systemTime - 999_999_999) / 1_000_000_000
        var c = cshim_chrony_sample()
        c.tv.tv_sec = Int(truncatingIfNeeded: seconds)
        c.tv.tv_usec = Int(truncatingIfNeeded: (sample.systemTime - seconds * 1_000_000_000) / 1000)
        c.offset = sample.offset
        c.pulse = sample.isPulse ? 1 : 0
        c.leap = sample.leap
        c._pad = 0
        c.magic = CInt(bitPattern: UInt32(CSHIM_CHRONY_SOCK_MAGIC))
        let expected = withUnsafeBytes(of: &c) { Array($0) }
        #expect(sample.datagram == expected)
        #expect(ChronySample(datagram: expected).map(\.datagram) == expected)
    }
}
