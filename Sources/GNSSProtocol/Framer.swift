// The incremental framer: bytes in any chunking, complete NMEA / UBX / RTCM3 frames out.

/// One complete, checksum-verified frame, with its sync bytes and checksum.
///
/// `bytes` shares the framer's buffer (no copy): keep a frame only as long as you need it, or copy
/// it (`Array(frame.bytes)`), so the framer can reuse its buffer without copying it on the next append.
public struct Frame: Sendable, Hashable {
    public enum Kind: Sendable, Hashable, CaseIterable {
        case nmea
        case ubx
        case rtcm3
    }

    public let kind: Kind
    public let bytes: ArraySlice<UInt8>

    public init(kind: Kind, bytes: ArraySlice<UInt8>) {
        self.kind = kind
        self.bytes = bytes
    }
}

/// What the framer saw: frames per protocol and what it had to throw away.
public struct FramerStatistics: Sendable, Hashable {
    /// Bytes given to `append`.
    public var bytesReceived = 0
    public var nmeaFrames = 0
    public var ubxFrames = 0
    public var rtcm3Frames = 0
    /// Bytes dropped while resynchronising: garbage, bad frames, cut-short sentences.
    public var bytesDiscarded = 0
    /// I2C idle filler (0xFF) between frames, skipped without counting as garbage.
    public var fillerBytes = 0
    /// Frames whose checksum (NMEA XOR, UBX Fletcher, RTCM3 CRC-24Q) did not match, or NMEA without one.
    public var checksumFailures = 0
    /// Frames whose length field (or NMEA line length) could not be right.
    public var impossibleLengths = 0
    /// NMEA sentences cut short by another frame's start or a byte that cannot be in a sentence.
    public var interruptedSentences = 0

    public init() {}

    public var frames: Int { nmeaFrames + ubxFrames + rtcm3Frames }

    /// Adds another framer's counters (of an earlier session, say) to these.
    public static func += (total: inout FramerStatistics, more: FramerStatistics) {
        total.bytesReceived += more.bytesReceived
        total.nmeaFrames += more.nmeaFrames
        total.ubxFrames += more.ubxFrames
        total.rtcm3Frames += more.rtcm3Frames
        total.bytesDiscarded += more.bytesDiscarded
        total.fillerBytes += more.fillerBytes
        total.checksumFailures += more.checksumFailures
        total.impossibleLengths += more.impossibleLengths
        total.interruptedSentences += more.interruptedSentences
    }
}

/// Splits a byte stream that mixes NMEA 0183, UBX and RTCM 3 into frames.
///
/// Feed it any chunks with `append`, then call `next()` until it returns `nil` ("need more").
/// A corrupted byte costs at most the frame it sits in: after a bad checksum or an impossible length
/// the framer skips one byte and rescans, so a frame hidden inside a broken one is still found.
/// In the steady state it allocates nothing: the buffer is reused and frames are slices of it.
public struct Framer: Sendable {
    /// Bounds that tell a corrupted length from a real one.
    public struct Limits: Sendable, Hashable {
        /// Longest NMEA sentence accepted, `$` to LF (NMEA says 82, real receivers exceed it).
        public var maxNMEALength: Int
        /// Longest UBX payload accepted.
        public var maxUBXPayload: Int

        public init(maxNMEALength: Int = 256, maxUBXPayload: Int = 8192) {
            self.maxNMEALength = max(12, maxNMEALength)
            self.maxUBXPayload = max(0, min(maxUBXPayload, 65_535))
        }
    }

    /// The scanner's position and counters, kept apart from the buffer so the scan can mutate them
    /// while it reads the buffer.
    struct Cursor {
        var head = 0
        var tail = 0
        /// Bytes of the NMEA sentence at `head` already scanned (0 = none), with their running XOR.
        var nmeaScanned = 0
        var nmeaXor: UInt8 = 0
        /// Offset of the `*` from `head`, or -1.
        var nmeaStar = -1
        var finished = false
        var statistics = FramerStatistics()
    }

    public let limits: Limits
    private var storage: [UInt8]
    private var cursor = Cursor()

    public init(limits: Limits = Limits(), initialCapacity: Int = 16 * 1024) {
        self.limits = limits
        self.storage = [UInt8](repeating: 0, count: max(initialCapacity, 2 * limits.maxUBXPayload + 16))
    }

    public var statistics: FramerStatistics { cursor.statistics }

    /// Bytes received but not yet returned as a frame or discarded.
    public var pendingByteCount: Int { cursor.tail - cursor.head }

    /// Appends bytes from the receiver.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserve(bytes.count)
        let tail = cursor.tail
        storage.withUnsafeMutableBytes { destination in
            // The destination has room by `reserve`.
            UnsafeMutableRawBufferPointer(rebasing: destination[tail..<tail + bytes.count]).copyMemory(from: bytes)
        }
        cursor.tail += bytes.count
        cursor.statistics.bytesReceived += bytes.count
        cursor.finished = false
    }

    /// Appends bytes from the receiver.
    public mutating func append<Bytes: Collection<UInt8>>(contentsOf bytes: Bytes) {
        bytes.withRawBytes { append($0) }
    }

    /// Declares the end of the stream: bytes that can no longer complete a frame are rescanned and dropped.
    public mutating func finish() {
        cursor.finished = true
    }

    /// Drops everything buffered (after a reconnect, for instance); counters are kept.
    public mutating func reset() {
        cursor.statistics.bytesDiscarded += cursor.tail - cursor.head
        cursor.head = 0
        cursor.tail = 0
        cursor.nmeaScanned = 0
        cursor.finished = false
    }

    /// The next complete frame, or `nil` when more bytes are needed.
    public mutating func next() -> Frame? {
        let limits = self.limits
        // The scan moves the cursor in place while it reads the buffer (two stored properties, so the accesses
        // do not overlap): no copy of the cursor and its counters in and out at every call.
        let found: (kind: Frame.Kind, start: Int, end: Int)? = storage.withUnsafeBytes { raw in
            Framer.scan(raw, &cursor, limits)
        }
        guard let found else { return nil }
        return Frame(kind: found.kind, bytes: storage[found.start..<found.end])
    }

    /// Makes room for `count` more bytes, moving pending bytes to the front or growing the buffer.
    private mutating func reserve(_ count: Int) {
        if cursor.tail + count <= storage.count { return }
        let pending = cursor.tail - cursor.head
        if cursor.head > 0 {
            let head = cursor.head
            storage.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                (base).copyMemory(from: base + head, byteCount: pending)
            }
            cursor.head = 0
            cursor.tail = pending
        }
        if pending + count > storage.count {
            var capacity = storage.count
            while capacity < pending + count { capacity *= 2 }
            storage.append(contentsOf: repeatElement(0, count: capacity - storage.count))
        }
    }

    // MARK: scanning

    private static let ubxSync1: UInt8 = 0xB5
    private static let ubxSync2: UInt8 = 0x62
    private static let rtcm3Preamble: UInt8 = 0xD3
    private static let filler: UInt8 = 0xFF

    @inline(__always)
    private static func isFrameStart(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "$") || byte == UInt8(ascii: "!") || byte == ubxSync1 || byte == rtcm3Preamble
            || byte == filler
    }

    private static func discard(_ count: Int, _ cursor: inout Cursor) {
        cursor.head += count
        cursor.statistics.bytesDiscarded += count
        cursor.nmeaScanned = 0
    }

    // Not inlined into `next`: the scanners inlined into it make it large, and the loop runs faster
    // as a call of its own (as it compiled before they were split out of it).
    @inline(never)
    private static func scan(
        _ raw: UnsafeRawBufferPointer, _ cursor: inout Cursor, _ limits: Limits
    ) -> (kind: Frame.Kind, start: Int, end: Int)? {
        while cursor.head < cursor.tail {
            let head = cursor.head
            let available = cursor.tail - head
            switch raw[head] {
            case UInt8(ascii: "$"), UInt8(ascii: "!"):
                switch scanNMEA(raw, &cursor, limits) {
                case .frame(let end):
                    cursor.head = end
                    cursor.nmeaScanned = 0
                    cursor.statistics.nmeaFrames += 1
                    return (.nmea, head, end)
                case .needMore:
                    if cursor.finished {
                        cursor.statistics.interruptedSentences += 1
                        discard(available, &cursor)
                        continue
                    }
                    return nil
                case .rejected:
                    continue
                }

            case ubxSync1:
                switch scanUBX(raw, &cursor, limits) {
                case .frame(let end):
                    cursor.head = end
                    cursor.statistics.ubxFrames += 1
                    return (.ubx, head, end)
                case .needMore:
                    return nil
                case .rejected:
                    continue
                }

            case rtcm3Preamble:
                switch scanRTCM3(raw, &cursor) {
                case .frame(let end):
                    cursor.head = end
                    cursor.statistics.rtcm3Frames += 1
                    return (.rtcm3, head, end)
                case .needMore:
                    return nil
                case .rejected:
                    continue
                }

            case filler:
                var index = head + 1
                while index < cursor.tail && raw[index] == filler { index += 1 }
                cursor.statistics.fillerBytes += index - head
                cursor.head = index
                cursor.nmeaScanned = 0

            default:
                var index = head + 1
                while index < cursor.tail && !isFrameStart(raw[index]) { index += 1 }
                discard(index - head, &cursor)
            }
        }
        return nil
    }

    /// What a scan of the frame at the cursor's head found: a frame up to `end`, too few bytes yet, or
    /// no frame (the bytes it rules out already discarded).
    private enum FrameScan {
        case frame(end: Int)
        case needMore
        case rejected
    }

    /// Checks the UBX frame starting at `cursor.head` (sync, plausible class, id and length, checksum).
    @inline(__always)
    private static func scanUBX(_ raw: UnsafeRawBufferPointer, _ cursor: inout Cursor, _ limits: Limits) -> FrameScan {
        let head = cursor.head
        let available = cursor.tail - head
        if available < 2 { return partial(&cursor) }
        guard raw[head + 1] == ubxSync2 else {
            discard(1, &cursor)
            return .rejected
        }
        if available < 6 { return partial(&cursor) }
        let messageClass = raw[head + 2]
        let messageID = raw[head + 3]
        let length = Int(raw[head + 4]) | Int(raw[head + 5]) << 8
        guard length <= limits.maxUBXPayload,
            UBX.isPlausible(messageClass: messageClass, id: messageID, length: length)
        else {
            cursor.statistics.impossibleLengths += 1
            discard(1, &cursor)
            return .rejected
        }
        let total = length + 8
        if available < total { return partial(&cursor) }
        let sum = ubxChecksum(UnsafeRawBufferPointer(rebasing: raw[head + 2..<head + 6 + length]))
        guard sum.a == raw[head + 6 + length], sum.b == raw[head + 7 + length] else {
            cursor.statistics.checksumFailures += 1
            discard(1, &cursor)
            return .rejected
        }
        return .frame(end: head + total)
    }

    /// Checks the RTCM 3 frame starting at `cursor.head` (reserved bits, length, CRC-24Q).
    @inline(__always)
    private static func scanRTCM3(_ raw: UnsafeRawBufferPointer, _ cursor: inout Cursor) -> FrameScan {
        let head = cursor.head
        let available = cursor.tail - head
        if available < 3 { return partial(&cursor) }
        // Six reserved bits must be zero; a message number needs at least 12 bits.
        let length = Int(raw[head + 1] & 0x03) << 8 | Int(raw[head + 2])
        guard raw[head + 1] & 0xFC == 0, length >= 2 else {
            if raw[head + 1] & 0xFC == 0 { cursor.statistics.impossibleLengths += 1 }
            discard(1, &cursor)
            return .rejected
        }
        let total = length + 6
        if available < total { return partial(&cursor) }
        let crc = CRC24Q.checksum(UnsafeRawBufferPointer(rebasing: raw[head..<head + 3 + length]))
        let sent =
            UInt32(raw[head + 3 + length]) << 16 | UInt32(raw[head + 4 + length]) << 8
            | UInt32(raw[head + 5 + length])
        guard crc == sent else {
            cursor.statistics.checksumFailures += 1
            discard(1, &cursor)
            return .rejected
        }
        return .frame(end: head + total)
    }

    /// A frame not complete yet: more bytes may complete it, but at the end of the stream it never will,
    /// so its first byte is dropped and what it covers scanned again.
    @inline(__always)
    private static func partial(_ cursor: inout Cursor) -> FrameScan {
        guard cursor.finished else { return .needMore }
        discard(1, &cursor)
        return .rejected
    }

    /// Scans the sentence starting at `cursor.head`, resuming where the last call stopped.
    private static func scanNMEA(_ raw: UnsafeRawBufferPointer, _ cursor: inout Cursor, _ limits: Limits) -> FrameScan {
        let head = cursor.head
        var index = cursor.nmeaScanned > 0 ? head + cursor.nmeaScanned : head + 1
        var xor = cursor.nmeaScanned > 0 ? cursor.nmeaXor : 0
        var star = cursor.nmeaScanned > 0 && cursor.nmeaStar >= 0 ? head + cursor.nmeaStar : -1
        let limit = min(cursor.tail, head + limits.maxNMEALength)
        while index < limit {
            // Fastest path: eight bytes at a time while all are body bytes (below) and summed.
            if star < 0 {
                while limit &- index >= 8 {
                    let word = raw.u64(index)
                    guard NMEAWord.isBody(word) else { break }
                    xor ^= NMEAWord.xor(word)
                    index &+= 8
                }
                guard index < limit else { break }
            }
            let byte = raw[index]
            // Fast path: '+' (0x2B) to '~' (0x7E) holds every byte of a sentence body but the few below
            // (space, '*', '$', '!', control characters), which take the checks that follow.
            if byte &- 0x2B < 0x54 {
                if star < 0 { xor ^= byte }
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\n") {
                let end = index + 1
                let bodyEnd = raw[index - 1] == UInt8(ascii: "\r") ? index - 1 : index
                // `$` + address (at least 1) + `*hh`.
                guard star >= head + 2, star == bodyEnd - 3,
                    let high = ASCII.hexValue(raw[star + 1]), let low = ASCII.hexValue(raw[star + 2]),
                    high << 4 | low == xor
                else {
                    cursor.statistics.checksumFailures += 1
                    discard(end - head, &cursor)
                    return .rejected
                }
                return .frame(end: end)
            }
            if byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "$") || byte == UInt8(ascii: "!") {
                // A carriage return may only precede the line feed.
                if byte == UInt8(ascii: "\r") && index + 1 < cursor.tail && raw[index + 1] == UInt8(ascii: "\n") {
                    index += 1
                    continue
                }
                if byte == UInt8(ascii: "\r") && index + 1 == cursor.tail {
                    break
                }
                cursor.statistics.interruptedSentences += 1
                discard(index - head, &cursor)
                return .rejected
            }
            if star < 0 {
                if byte == UInt8(ascii: "*") { star = index } else { xor ^= byte }
            }
            index += 1
        }
        if index >= head + limits.maxNMEALength {
            cursor.statistics.impossibleLengths += 1
            discard(index - head, &cursor)
            return .rejected
        }
        cursor.nmeaScanned = index - head
        cursor.nmeaXor = xor
        cursor.nmeaStar = star >= 0 ? star - head : -1
        return .needMore
    }
}

/// Eight sentence bytes in one `UInt64`, checked and summed together (the bit tricks are exact as tests of
/// "any byte": a borrow or carry that crosses into the next byte only happens when one already matched).
enum NMEAWord {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether every byte is in '+' (0x2B) ... '~' (0x7E), the bytes of a body but '*', '$', '!', space.
    @inline(__always)
    static func isBody(_ word: UInt64) -> Bool {
        let below = (word &- ones &* 0x2B) & ~word & highs
        let above = ((word &+ ones) | word) & highs
        return below | above == 0
    }

    /// The XOR of the eight bytes.
    @inline(__always)
    static func xor(_ word: UInt64) -> UInt8 {
        var folded = word ^ word >> 32
        folded ^= folded >> 16
        folded ^= folded >> 8
        return UInt8(truncatingIfNeeded: folded)
    }
}
