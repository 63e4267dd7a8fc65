@testable import GNSSHat
import GNSSHatTesting
import LinuxSystem
import PiHardware
import Testing

/// A NMEA sentence and a UBX frame, the kind of stream a u-blox sends.
let sampleStream: [UInt8] = Array("$GNRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A\r\n".utf8)
    + [0xB5, 0x62, 0x05, 0x01, 0x02, 0x00, 0x06, 0x8A, 0x98, 0xC1]

@Suite("u-blox DDC against a fake u-blox, glitches included")
struct UBloxDDCTests {
    @Test("bytes queued by the receiver come out unchanged; nothing queued reads empty")
    func plainRead() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        #expect(try ddc.readAvailable() == [])
        device.enqueue(sampleStream)
        #expect(try ddc.bytesAvailable() == sampleStream.count)
        #expect(try ddc.readAvailable() == sampleStream)
        #expect(try ddc.readAvailable() == [])
        #expect(ddc.glitches == UBloxDDC.Glitches())
    }

    @Test("reads are capped by maxReadChunk and by maxCount; the rest comes next time")
    func capped() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device, maxReadChunk: 32)
        device.enqueue(sampleStream)
        var out: [UInt8] = []
        var reads = 0
        while device.pending > 0 {
            let chunk = try ddc.readAvailable(maxCount: 20)
            #expect(chunk.count <= 20)
            out += chunk
            reads += 1
        }
        #expect(out == sampleStream)
        #expect(reads == (sampleStream.count + 19) / 20)
    }

    @Test("bit 15 of the count is masked")
    func bit15() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        device.enqueue(sampleStream)
        device.inject(.countBit15)
        #expect(try ddc.readAvailable() == sampleStream)
        #expect(ddc.glitches.bit15Set == 1)
    }

    @Test("bogus counts 127 and 32767 neither crash nor hang: real bytes pass, filler does not matter",
          arguments: [UInt16(127), 32767])
    func bogusCounts(count: UInt16) throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device, maxReadChunk: 1024)
        device.enqueue(Array(sampleStream.prefix(40)))
        device.inject(.bogusCount(count))
        let bytes = try ddc.readAvailable()
        // The real 40 bytes come first; whatever the chunk held beyond them is the empty
        // stream's 0xFF filler, which a framer skips.
        #expect(Array(bytes.prefix(40)) == Array(sampleStream.prefix(40)))
        #expect(bytes.dropFirst(40).allSatisfy { $0 == 0xFF })
        #expect(bytes.count == min(Int(count), 1024))
        #expect(ddc.glitches.cappedCounts == (count > 1024 ? 1 : 0))
    }

    @Test("a bogus count on an empty stream reads as empty, not as a run of 0xFF", arguments: [UInt16(127), 32767])
    func bogusCountEmpty(count: UInt16) throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        device.inject(.bogusCount(count))
        #expect(try ddc.readAvailable() == [])
        #expect(ddc.glitches.emptyChunks == 1)
    }

    @Test("a count of 0xFFFF (idle bus) is empty")
    func idle() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        device.enqueue(sampleStream)
        device.inject(.idleCount)
        #expect(try ddc.readAvailable() == [])
        #expect(ddc.glitches.idleCounts == 1)
        #expect(try ddc.readAvailable() == sampleStream)
    }

    @Test("0xFF in the middle of a frame is passed on as read, for the framer to resync")
    func ffMidFrame() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        device.enqueue(sampleStream)
        device.inject(.insertFF(afterBytes: 10))
        var out: [UInt8] = []
        while device.pending > 0 { out += try ddc.readAvailable() }
        #expect(out == Array(sampleStream.prefix(10)) + [0xFF] + Array(sampleStream.dropFirst(10)))
    }

    @Test("bus errors while polling are typed and the next poll works", arguments: [
        (Errno.remoteIO, "nak"), (.timedOut, "timeout"), (.noSuchDeviceOrAddress, "noDevice"), (.ioError, "busError"),
    ])
    func busErrors(errno: Errno, expected: String) throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        device.enqueue(sampleStream)
        device.inject(.fail(errno))
        do {
            _ = try ddc.readAvailable()
            Issue.record("no error")
        } catch {
            // The case the kernel's fault code maps to, naming the errno.
            #expect(error.failedCall?.errno == errno)
            switch (error, expected) {
            case (.nak, "nak"), (.timeout, "timeout"), (.noDevice, "noDevice"), (.busError, "busError"): break
            default: Issue.record("expected \(expected), got \(error)")
            }
        }
        #expect(try ddc.readAvailable() == sampleStream)
    }

    @Test("a glitch storm never hangs and loses no real byte", arguments: [1, 2, 3, 4, 5])
    func storm(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device, maxReadChunk: 64)
        var stream: [UInt8] = []
        for _ in 0..<50 { stream += sampleStream }
        device.enqueue(stream)
        var out: [UInt8] = []
        var polls = 0
        while device.pending > 0 {
            polls += 1
            try #require(polls < 10_000, "the DDC layer stopped making progress")
            switch random.next() % 8 {
            case 0: device.inject(.countBit15)
            case 1: device.inject(.bogusCount(127))
            case 2: device.inject(.bogusCount(32767))
            case 3: device.inject(.idleCount)
            case 4: device.inject(.fail(.remoteIO))
            default: break
            }
            do { out += try ddc.readAvailable() } catch { continue }
        }
        // Filler bytes may be added, real bytes are never dropped or reordered.
        #expect(out.filter { $0 != 0xFF } == stream.filter { $0 != 0xFF })
    }

    @Test("writes are split so no transfer carries a single byte",
          arguments: [2, 3, 4, 5, 6, 7, 8, 9, 17, 100, 257, 513])
    func writeSplits(length: Int) throws {
        for maxChunk in [3, 4, 8, 16, 256] {
            let device = FakeUBloxI2C()
            let ddc = UBloxDDC(bus: device, maxWriteChunk: maxChunk)
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
            try ddc.write(bytes)
            #expect(device.received.flatMap { $0 } == bytes)
            #expect(device.received.allSatisfy { $0.count >= 2 && $0.count <= maxChunk })
            #expect(device.transfers.allSatisfy { $0.count == 1 })
        }
    }

    @Test("a single byte cannot be written; nothing is written for no bytes")
    func tinyWrites() throws {
        let device = FakeUBloxI2C()
        let ddc = UBloxDDC(bus: device)
        #expect(throws: I2CError.self) { try ddc.write([0xFF]) }
        try ddc.write([])
        #expect(device.transfers.isEmpty)
    }
}

@Suite("DDC link: polling with an injected pause")
struct DDCLinkTests {
    /// Counts pauses instead of sleeping.
    final class Pauses: Sendable {
        let durations = Lock<[Duration]>([])
        var all: [Duration] { durations.withLock { $0 } }
        func pause(_ duration: Duration) { durations.withLock { $0.append(duration) } }
    }

    @Test("with nothing waiting a read pauses for the whole time-out in poll steps, then returns empty")
    func timeout() throws {
        let pauses = Pauses()
        let link = DDCLink(port: UBloxDDC(bus: FakeUBloxI2C()), pollInterval: .milliseconds(100)) { pauses.pause($0) }
        #expect(try link.read(maxCount: 100, timeout: .milliseconds(250)) == [])
        #expect(pauses.all == [.milliseconds(100), .milliseconds(100), .milliseconds(50)])
    }

    @Test("bytes waiting come back without a pause; writes go through the port")
    func data() throws {
        let pauses = Pauses()
        let device = FakeUBloxI2C()
        device.enqueue(sampleStream)
        let link = DDCLink(port: UBloxDDC(bus: device)) { pauses.pause($0) }
        #expect(try link.read(maxCount: 4096, timeout: .seconds(1)) == sampleStream)
        #expect(pauses.all.isEmpty)
        try link.write([0xB5, 0x62, 0x01, 0x07, 0x00, 0x00, 0x08, 0x19])
        #expect(device.received == [[0xB5, 0x62, 0x01, 0x07, 0x00, 0x00, 0x08, 0x19]])
        #expect(link.name == "/dev/i2c-fake @0x42")
    }

    @Test("a closed link throws")
    func closed() {
        let link = DDCLink(port: UBloxDDC(bus: FakeUBloxI2C())) { _ in }
        link.close()
        #expect(throws: I2CError.self) { try link.read(maxCount: 1, timeout: .zero) }
        #expect(throws: I2CError.self) { try link.write([1, 2]) }
    }
}

/// A small seeded generator, so the glitch storm is the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
