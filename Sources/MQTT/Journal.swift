// The journal of unsent messages: what was published with QoS 1 and not yet acknowledged by the
// broker, kept in order in a file, so that a broker outage, a restart or a power loss loses nothing
// within its bounds.
//
// The file is a log of checksummed records: a message (its sequence number, topic, payload, QoS,
// retain flag) when it is appended, and a removal (acknowledged, or dropped by the bounds) when it
// goes. Opening replays the log; a record that fails its checksum — a torn write at the tail after a
// power loss, or damage in the middle — is skipped and counted, never fatal. When removals outweigh
// what is pending, the file is rewritten with the pending messages alone (atomically).
//
// Durability: with ``Journal/SyncPolicy/everyAppend`` each append is one `write` then `fdatasync`
// before `append` returns, so a message the caller was told is journaled survives a power loss; with
// ``Journal/SyncPolicy/explicit`` the caller decides when (``Journal/sync()``), trading the last
// moments before a cut for fewer flash writes. Removals are never synced on their own: a removal
// lost in a cut only means the message is sent once more (at least once, as QoS 1 promises). A
// removal the file refuses (a full or failing disk) is reported, and the message leaves the pending
// ones all the same: the file keeps it until the next rewrite, so only a restart before then sends
// it once more.
internal import GNSSProtocol

/// One message in the journal, with the sequence number it got when appended (increasing).
public struct JournalRecord: Sendable, Hashable {
    public var sequence: UInt64
    public var message: OutgoingMessage
}

/// What opening the journal found damaged and left out.
public struct JournalRecovery: Sendable, Hashable {
    /// Stretches of bytes that held no valid record (each a torn or corrupt record, or several), and
    /// message records out of sequence order (a duplicated or misplaced block), which are left out.
    public var corruptRegions = 0
    public var corruptBytes = 0
    /// Whether the damage reached the end of the file (the usual torn write of a power loss).
    public var tornTail = false

    public var isClean: Bool { corruptRegions == 0 }
}

/// The journal of unsent messages. One owner uses it at a time (the bridge keeps it under its lock).
public final class Journal {
    /// How much the journal keeps: past either bound, the oldest pending messages are dropped.
    public struct Limits: Sendable, Hashable {
        public var maximumRecords: Int
        /// Bytes of pending records as stored (20 bytes of framing each, plus topic and payload).
        public var maximumBytes: Int

        /// 100,000 messages or 16 MiB: a day of fixes at one a second, on any SD card.
        public init(maximumRecords: Int = 100_000, maximumBytes: Int = 16 << 20) {
            self.maximumRecords = maximumRecords
            self.maximumBytes = maximumBytes
        }
    }

    /// When appends reach the disk.
    public enum SyncPolicy: Sendable, Hashable {
        /// `fdatasync` after every append (the default).
        case everyAppend
        /// Only when the caller calls ``Journal/sync()``.
        case explicit
    }

    public let limits: Limits
    public let syncPolicy: SyncPolicy
    /// What the open skipped.
    public let recovery: JournalRecovery
    /// Pending messages dropped by the bounds since the open.
    public private(set) var droppedByLimits = 0
    /// The messages not yet acknowledged, oldest first.
    public private(set) var pending: [JournalRecord] = []
    /// Bytes of ``pending`` as stored.
    public private(set) var pendingBytes = 0

    private let storage: any JournalStorage
    private var nextSequence: UInt64 = 1
    private var fileBytes = 0

    /// Opens the journal in `directory` (``FileJournalStorage``).
    public convenience init(
        directory: String, limits: Limits = Limits(), syncPolicy: SyncPolicy = .everyAppend
    ) throws(JournalError) {
        try self.init(storage: FileJournalStorage(directory: directory), limits: limits, syncPolicy: syncPolicy)
    }

    /// Opens the journal in `storage`: replays its records, skipping damaged ones, and rewrites the
    /// file when it found damage, so new records never follow garbage.
    public init(storage: any JournalStorage, limits: Limits = Limits(), syncPolicy: SyncPolicy = .everyAppend)
        throws(JournalError)
    {
        self.storage = storage
        self.limits = limits
        self.syncPolicy = syncPolicy
        let bytes = try storage.readAll()
        var scan = JournalScan(bytes)
        var removed = Set<UInt64>()
        var messages: [JournalRecord] = []
        var highest: UInt64 = 0
        var misplaced = JournalRecovery()
        while let record = scan.next() {
            highest = max(highest, record.sequence)
            switch record.kind {
            case let .message(message):
                // The journal writes increasing sequence numbers and rewrites in order, so a message at
                // or below the one before it is a duplicated or misplaced block: left out, counted as damage.
                guard record.sequence > messages.last?.sequence ?? 0 else {
                    misplaced.corruptRegions += 1
                    misplaced.corruptBytes += JournalCodec.encodedSize(of: message)
                    continue
                }
                messages.append(JournalRecord(sequence: record.sequence, message: message))
            case .removal: removed.insert(record.sequence)
            }
        }
        misplaced.corruptRegions += scan.recovery.corruptRegions
        misplaced.corruptBytes += scan.recovery.corruptBytes
        misplaced.tornTail = scan.recovery.tornTail
        recovery = misplaced
        nextSequence = highest + 1
        pending = messages.filter { !removed.contains($0.sequence) }
        pendingBytes = pending.reduce(0) { $0 + JournalCodec.encodedSize(of: $1.message) }
        fileBytes = bytes.count
        if !recovery.isClean {
            try compact()
        } else {
            try dropBeyondLimits(adding: 0, records: 0)
            try compactIfWorthIt()
        }
    }

    /// Appends `message` (syncing as the policy says) and returns its sequence number. Oldest pending
    /// messages are dropped first when the new one would pass a bound.
    @discardableResult
    public func append(_ message: OutgoingMessage) throws(JournalError) -> UInt64 {
        let size = JournalCodec.encodedSize(of: message)
        guard size - JournalCodec.overhead <= JournalCodec.maximumBody else { throw .recordTooLarge(bytes: size) }
        try dropBeyondLimits(adding: size, records: 1)
        let sequence = nextSequence
        let bytes = JournalCodec.encode(sequence: sequence, kind: .message(message))
        try storage.append(bytes)
        nextSequence += 1
        fileBytes += bytes.count
        pending.append(JournalRecord(sequence: sequence, message: message))
        pendingBytes += size
        if syncPolicy == .everyAppend { try storage.sync() }
        return sequence
    }

    /// The broker acknowledged `sequence`: it leaves the journal. Returns false for a sequence that is
    /// not pending (acknowledged before, or dropped by the bounds while in flight). Throws when the file
    /// could not take the removal (or a compaction failed); the message has left ``pending`` all the same.
    @discardableResult
    public func acknowledge(_ sequence: UInt64) throws(JournalError) -> Bool {
        guard let index = index(of: sequence) else { return false }
        try remove(at: index)
        try compactIfWorthIt()
        return true
    }

    /// Makes every append so far survive a power loss (`fdatasync`).
    public func sync() throws(JournalError) {
        try storage.sync()
    }

    /// Rewrites the file with the pending messages alone.
    public func compact() throws(JournalError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pendingBytes)
        for record in pending {
            bytes += JournalCodec.encode(sequence: record.sequence, kind: .message(record.message))
        }
        try storage.replace(with: bytes)
        fileBytes = bytes.count
    }

    /// Bytes in the file now (pending records, plus removals and removed records until a compaction).
    public var fileSize: Int { fileBytes }

    /// Whether `sequence` is pending (appended and not yet acknowledged or dropped).
    public func isPending(_ sequence: UInt64) -> Bool { index(of: sequence) != nil }

    // MARK: - Internals

    private func index(of sequence: UInt64) -> Int? {
        // Sorted by sequence: appends only ever add larger ones.
        var low = 0
        var high = pending.count
        while low < high {
            let middle = (low + high) / 2
            if pending[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < pending.count && pending[low].sequence == sequence ? low : nil
    }

    /// Takes the record at `index` out of the pending ones, then writes its removal; when the file
    /// refuses the removal, the record is out all the same (see the file's comment).
    private func remove(at index: Int) throws(JournalError) {
        let record = pending.remove(at: index)
        pendingBytes -= JournalCodec.encodedSize(of: record.message)
        let bytes = JournalCodec.encode(sequence: record.sequence, kind: .removal)
        try storage.append(bytes)
        fileBytes += bytes.count
    }

    private func dropBeyondLimits(adding size: Int, records: Int) throws(JournalError) {
        while !pending.isEmpty
            && (pending.count + records > limits.maximumRecords || pendingBytes + size > limits.maximumBytes)
        {
            droppedByLimits += 1
            try remove(at: 0)
        }
    }

    /// Past this size, a file with nothing pending is cut back to empty (`ftruncate` and one sync).
    static let truncationSize = 256 << 10
    /// Past this size, a file of mostly removed records is rewritten with the pending ones alone
    /// (two syncs and a rename). Four times the truncation size: while the broker acknowledges, the
    /// file empties now and then and is cut back, so it is rewritten only when something stays
    /// pending for long — and never at the first of a fix's two acknowledgements.
    static let rewriteSize = 4 * truncationSize

    /// Cuts the file back once it is all removed records, or rewrites it once it is mostly them
    /// (twice what is pending).
    private func compactIfWorthIt() throws(JournalError) {
        if pending.isEmpty && fileBytes >= Self.truncationSize {
            try storage.truncate(to: 0)
            fileBytes = 0
        } else if fileBytes >= Self.rewriteSize && fileBytes > 2 * pendingBytes {
            try compact()
        }
    }
}

// MARK: - The record format

/// One record as stored, little-endian:
///
///     0  "GJ"                 magic
///     2  kind                 1 message, 2 removal
///     3  flags                message: bit 0 retain, bits 1-2 QoS
///     4  sequence   UInt64
///     12 body length UInt32
///     16 body                 message: topic length UInt16, topic, payload; removal: empty
///     .. CRC-32 (IEEE 802.3) of everything before it
enum JournalCodec {
    static let magic: (UInt8, UInt8) = (0x47, 0x4A)
    static let headerSize = 16
    static let overhead = headerSize + 4
    static let maximumBody = 1 << 20

    enum Kind: Equatable {
        case message(OutgoingMessage)
        case removal
    }

    static func encodedSize(of message: OutgoingMessage) -> Int {
        overhead + 2 + message.topic.utf8.count + message.payload.count
    }

    static func encode(sequence: UInt64, kind: Kind) -> [UInt8] {
        var body: [UInt8] = []
        var code: UInt8 = 2
        var flags: UInt8 = 0
        if case let .message(message) = kind {
            code = 1
            flags = (message.retain ? 1 : 0) | UInt8(message.qos.rawValue) << 1
            let topic = Array(message.topic.utf8)
            body.reserveCapacity(2 + topic.count + message.payload.count)
            append(UInt64(topic.count), bytes: 2, to: &body)
            body += topic
            body += message.payload
        }
        var record: [UInt8] = [magic.0, magic.1, code, flags]
        record.reserveCapacity(overhead + body.count)
        append(sequence, bytes: 8, to: &record)
        append(UInt64(body.count), bytes: 4, to: &record)
        record += body
        append(UInt64(CRC32.checksum(record[...])), bytes: 4, to: &record)
        return record
    }

    static func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for index in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    static func read(_ bytes: ArraySlice<UInt8>, at offset: Int, count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        return value
    }

    /// The record at `offset` and its length, or nil when none valid starts there.
    static func decode(_ bytes: ArraySlice<UInt8>, at offset: Int) -> (sequence: UInt64, kind: Kind, length: Int)? {
        guard bytes.endIndex - offset >= overhead, bytes[offset] == magic.0, bytes[offset + 1] == magic.1 else {
            return nil
        }
        let code = bytes[offset + 2]
        let flags = bytes[offset + 3]
        let sequence = read(bytes, at: offset + 4, count: 8)
        let bodyLength = Int(read(bytes, at: offset + 12, count: 4))
        guard bodyLength <= maximumBody, bytes.endIndex - offset >= overhead + bodyLength else { return nil }
        let end = offset + headerSize + bodyLength
        guard CRC32.checksum(bytes[offset..<end]) == UInt32(read(bytes, at: end, count: 4)) else { return nil }
        // The journal writes no flag but retain and QoS (and none on a removal): a record with another is
        // damage, however it checksums (found by the journal fuzz target: replayed, it was another record).
        switch code {
        case 1:
            guard bodyLength >= 2, flags & ~0x07 == 0 else { return nil }
            let topicLength = Int(read(bytes, at: offset + headerSize, count: 2))
            guard 2 + topicLength <= bodyLength, let qos = QoS(rawValue: Int32(flags >> 1 & 3)) else { return nil }
            let topicStart = offset + headerSize + 2
            // The journal writes topics from Strings: one that is not UTF-8 is damage, however it checksums.
            guard let topic = String(validating: bytes[topicStart..<topicStart + topicLength], as: UTF8.self) else {
                return nil
            }
            let payload = Array(bytes[topicStart + topicLength..<end])
            let message = OutgoingMessage(topic: topic, payload: payload, qos: qos, retain: flags & 1 != 0)
            return (sequence, .message(message), overhead + bodyLength)
        case 2:
            return bodyLength == 0 && flags == 0 ? (sequence, .removal, overhead) : nil
        default:
            return nil
        }
    }
}

/// Walks a journal file's records, skipping what does not decode: from a bad offset it looks for the
/// next offset where a valid record starts, and counts the stretch between as one corrupt region.
struct JournalScan {
    private let bytes: [UInt8]
    private var offset = 0
    private(set) var recovery = JournalRecovery()

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func next() -> (sequence: UInt64, kind: JournalCodec.Kind)? {
        guard offset < bytes.count else { return nil }
        if let record = JournalCodec.decode(bytes[...], at: offset) {
            offset += record.length
            return (record.sequence, record.kind)
        }
        let start = offset
        var candidate = offset + 1
        while candidate < bytes.count {
            if bytes[candidate] == JournalCodec.magic.0, let record = JournalCodec.decode(bytes[...], at: candidate) {
                recovery.corruptRegions += 1
                recovery.corruptBytes += candidate - start
                offset = candidate + record.length
                return (record.sequence, record.kind)
            }
            candidate += 1
        }
        recovery.corruptRegions += 1
        recovery.corruptBytes += bytes.count - start
        recovery.tornTail = true
        offset = bytes.count
        return nil
    }
}
