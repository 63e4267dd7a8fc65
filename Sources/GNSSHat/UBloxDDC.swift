// The u-blox DDC (I2C) port: a byte stream behind three registers, over PiHardware's generic I2C
// bus. Knows the bus protocol, not the GNSS protocols: bytes are passed on as read, and the framer
// above resyncs after glitches. DDCTransport (Transport.swift) runs a receiver session over it.
public import LinuxSystem
public import PiHardware

/// A u-blox receiver's DDC port on an I2C bus (u-blox "DDC" = its I2C slave interface).
///
/// Registers `0xFD`/`0xFE` hold the number of bytes waiting (big-endian); `0xFF` is the data
/// stream and reads `0xFF` when empty. Known glitches are absorbed here without ever hanging:
/// bit 15 of the count is masked; a count of `0xFFFF` (an idle bus) counts as empty; each read
/// is capped at `maxReadChunk` whatever the count claims (127 and 32767 are seen in the wild);
/// a chunk of nothing but `0xFF` counts as empty. `0xFF` bytes inside a chunk are passed on.
public final class UBloxDDC: Sendable {
    /// The u-blox default address, 0x42.
    public static let defaultAddress: UInt16 = 0x42
    /// The register pair holding the number of bytes waiting.
    public static let countRegister: UInt8 = 0xFD
    /// The data stream register.
    public static let streamRegister: UInt8 = 0xFF

    /// Glitches absorbed so far.
    public struct Glitches: Hashable, Sendable {
        /// Counts with bit 15 set (masked off).
        public var bit15Set = 0
        /// Count registers reading `0xFFFF`, treated as empty.
        public var idleCounts = 0
        /// Counts above `maxReadChunk`, of which one chunk was read.
        public var cappedCounts = 0
        /// Chunks that were all `0xFF`, treated as empty.
        public var emptyChunks = 0
    }

    /// The bus.
    public let bus: any I2CBus
    /// The receiver's 7-bit address.
    public let address: UInt16
    /// The most bytes one read transfer fetches.
    public let maxReadChunk: Int
    /// The most bytes one write transfer sends.
    public let maxWriteChunk: Int

    private let glitchCounts = Lock(Glitches())

    /// A DDC port at `address` on `bus`. `maxWriteChunk` is at least 3 so that a split write
    /// can always keep 2 bytes for its last transfer.
    public init(bus: any I2CBus, address: UInt16 = UBloxDDC.defaultAddress, maxReadChunk: Int = 1024,
                maxWriteChunk: Int = 256) {
        self.bus = bus
        self.address = address
        self.maxReadChunk = min(max(maxReadChunk, 1), I2CAdapter.maxSegmentLength)
        self.maxWriteChunk = min(max(maxWriteChunk, 3), I2CAdapter.maxSegmentLength)
    }

    /// Glitches absorbed so far.
    public var glitches: Glitches { glitchCounts.withLock { $0 } }

    /// The number of bytes waiting: register `0xFD` written, repeated START, 2 bytes read
    /// (big-endian, bit 15 masked). A count register reading `0xFFFF` is reported as 0.
    public func bytesAvailable() throws(I2CError) -> Int {
        let raw = try bus.writeRead(address: address, [Self.countRegister], readCount: 2)
        guard raw.count == 2 else { return 0 }
        let value = UInt16(raw[0]) << 8 | UInt16(raw[1])
        if value == 0xFFFF {
            glitchCounts.withLock { $0.idleCounts += 1 }
            return 0
        }
        if value & 0x8000 != 0 { glitchCounts.withLock { $0.bit15Set += 1 } }
        return Int(value & 0x7FFF)
    }

    /// Reads what is waiting, at most `maxCount` bytes and at most `maxReadChunk`: the count,
    /// then one transfer that writes register `0xFF` and reads the chunk. Returns an empty
    /// array when nothing is waiting.
    public func readAvailable(maxCount: Int = .max) throws(I2CError) -> [UInt8] {
        let available = try bytesAvailable()
        guard available > 0, maxCount > 0 else { return [] }
        if available > maxReadChunk { glitchCounts.withLock { $0.cappedCounts += 1 } }
        let count = min(available, maxReadChunk, maxCount)
        let chunk = try bus.writeRead(address: address, [Self.streamRegister], readCount: count)
        if chunk.allSatisfy({ $0 == 0xFF }) {
            glitchCounts.withLock { $0.emptyChunks += 1 }
            return []
        }
        return chunk
    }

    /// Sends `bytes` (UBX or NMEA) in transfers of at most `maxWriteChunk` bytes and at least 2:
    /// a 1-byte write would only set the register address, so the split never leaves a 1-byte
    /// tail. A single byte cannot be sent at all and is refused.
    public func write(_ bytes: [UInt8]) throws(I2CError) {
        guard !bytes.isEmpty else { return }
        guard bytes.count >= 2 else {
            throw .invalidTransfer("u-blox DDC writes need at least 2 bytes (one byte sets the register)",
                                   device: bus.name)
        }
        for range in Self.writeChunks(count: bytes.count, maxChunk: maxWriteChunk) {
            try bus.write(address: address, Array(bytes[range]))
        }
    }

    /// Sends transfers made by a ``DDCWriteStream`` (each at least 2 bytes), in order.
    public func write(transfers: [[UInt8]]) throws(I2CError) {
        for transfer in transfers where transfer.count >= 2 {
            try bus.write(address: address, transfer)
        }
    }

    /// Splits `count` bytes into ranges of at most `maxChunk` (≥ 3) and at least 2 bytes.
    static func writeChunks(count: Int, maxChunk: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        while start < count {
            var length = min(maxChunk, count - start)
            if count - start - length == 1 { length -= 1 }
            ranges.append(start..<start + length)
            start += length
        }
        return ranges
    }
}

/// A byte stream written to a u-blox DDC port in pieces (RTCM 3 corrections as they come): every I2C
/// write must carry at least two bytes (a lone byte only sets the register address), so a lone byte
/// left over is held and goes out first with the next piece.
public struct DDCWriteStream: Sendable, Hashable {
    /// The byte waiting for the next piece, if any.
    public private(set) var held: UInt8?

    public init() {}

    /// The transfers that send `bytes` after any held byte, each of 2 to `maxChunk` (at least 3) bytes;
    /// a single byte left in all is held for the next call.
    public mutating func transfers(for bytes: [UInt8], maxChunk: Int) -> [[UInt8]] {
        var all: [UInt8] = []
        all.reserveCapacity(bytes.count + 1)
        if let held { all.append(held) }
        all += bytes
        held = nil
        guard all.count >= 2 else {
            held = all.first
            return []
        }
        return UBloxDDC.writeChunks(count: all.count, maxChunk: max(maxChunk, 3)).map { Array(all[$0]) }
    }
}

/// A `ByteLink` over a u-blox DDC port: reads poll the byte count every `pollInterval` until
/// bytes arrive or the time-out passes.
public final class DDCLink: ByteLink {
    /// The port.
    public let port: UBloxDDC
    /// How long to wait between polls of the byte count while nothing is waiting.
    public let pollInterval: Duration
    public var name: String { "\(port.bus.name) @0x" + String(port.address, radix: 16) }

    private let pause: @Sendable (Duration) -> Void
    private let isClosed = Lock(false)

    /// A link over `port`. `pause` waits between polls (`nanosleep` by default); tests pass
    /// one that returns at once, so a read's time-out is counted in poll intervals, not measured.
    public init(port: UBloxDDC, pollInterval: Duration = .milliseconds(100),
                pause: @escaping @Sendable (Duration) -> Void = DDCLink.sleep) {
        self.port = port
        self.pollInterval = max(pollInterval, .milliseconds(1))
        self.pause = pause
    }

    /// Polls the port until bytes arrive (at most `maxCount`) or `timeout` has been spent in
    /// pauses; returns an empty array on time-out.
    public func read(maxCount: Int, timeout: Duration) throws(I2CError) -> [UInt8] {
        var waited = Duration.zero
        while true {
            if isClosed.withLock({ $0 }) { throw .closed(device: name) }
            let bytes = try port.readAvailable(maxCount: maxCount)
            if !bytes.isEmpty || waited >= timeout { return bytes }
            let step = min(pollInterval, timeout - waited)
            pause(step)
            waited += step
        }
    }

    /// Writes `bytes` through the port (at least 2 bytes per transfer).
    public func write(_ bytes: [UInt8]) throws(I2CError) {
        if isClosed.withLock({ $0 }) { throw .closed(device: name) }
        try port.write(bytes)
    }

    /// Marks the link closed. The bus itself belongs to whoever opened it.
    public func close() {
        isClosed.withLock { $0 = true }
    }

    /// Sleeps the calling thread (`nanosleep`).
    public static let sleep: @Sendable (Duration) -> Void = { duration in
        system_nanosleep(duration)
    }
}
