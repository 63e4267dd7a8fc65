// libFuzzer entry point over the MQTT journal's file: any bytes as the file a Journal opens (MQTT's
// Journal over an in-memory JournalStorage). Built only by scripts/fuzz.sh (GNSSHAT_FUZZ=1).
//
// Properties checked, beyond "no crash, no sanitizer report":
// - opening succeeds whatever the file holds (damage is skipped and counted, never fatal);
// - every pending message replayed is a whole record a journal could have written: its encoding, by
//   this file's own writer of the documented format (Journal.swift: "GJ", kind, flags, sequence, body
//   length, topic length, topic, payload, CRC-32), occurs in the file as it is; pending messages are in
//   increasing sequence order (the journal's binary search relies on it);
// - the damage counted is within the file, and a clean open counts none;
// - opening the file as the open left it gives the same pending messages, cleanly;
// - a message appended and the oldest one acknowledged after the open are there (and gone) after the
//   next open, the new one with a sequence number above every other.

import GNSSProtocol
import MQTT

/// The journal's file in memory.
private final class MemoryStorage: JournalStorage {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func readAll() -> [UInt8] { bytes }
    func append(_ more: [UInt8]) { bytes += more }
    func sync() {}
    func truncate(to length: Int) { bytes.removeSubrange(min(length, bytes.count)...) }
    func replace(with new: [UInt8]) { bytes = new }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let file = Array(UnsafeBufferPointer(start: data, count: size))
    let storage = MemoryStorage(file)
    let journal = open(storage)
    let recovery = journal.recovery
    guard recovery.corruptBytes <= size, recovery.isClean == (recovery.corruptBytes == 0),
        !recovery.tornTail || !recovery.isClean
    else { fatalError("the damage counted is not within the file: \(recovery)") }
    var previous: UInt64?
    for record in journal.pending {
        guard contains(file, encode(record)) else { fatalError("a replayed record is not one the file holds whole") }
        if let previous, record.sequence <= previous { fatalError("pending records out of sequence order") }
        previous = record.sequence
    }
    let reopened = open(storage)
    guard reopened.pending == journal.pending, reopened.recovery.isClean else {
        fatalError("the file the open left opens differently: \(reopened.recovery)")
    }
    let message = OutgoingMessage(topic: "gnss-hat/fuzz/tpv", payload: Array("{\"class\":\"TPV\"}".utf8))
    let sequence: UInt64
    do throws(JournalError) {
        sequence = try reopened.append(message)
        if let oldest = journal.pending.first { try reopened.acknowledge(oldest.sequence) }
    } catch {
        fatalError("a journal in memory failed: \(error)")
    }
    let expected = journal.pending.dropFirst().map { ($0.sequence, $0.message) } + [(sequence, message)]
    let after = open(storage).pending
    guard sequence > (journal.pending.last?.sequence ?? 0), after.count == expected.count,
        zip(after, expected).allSatisfy({ $0.sequence == $1.0 && $0.message == $1.1 })
    else {
        fatalError("an append or acknowledgement after the open was lost")
    }
    return 0
}

private func open(_ storage: MemoryStorage) -> Journal {
    do throws(JournalError) {
        return try Journal(storage: storage, syncPolicy: .explicit)
    } catch {
        fatalError("opening a journal in memory failed: \(error)")
    }
}

/// A message record as Journal.swift documents the format, little-endian.
private func encode(_ record: JournalRecord) -> [UInt8] {
    func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for index in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
    let message = record.message
    let topic = Array(message.topic.utf8)
    var bytes: [UInt8] = [0x47, 0x4A, 1, (message.retain ? 1 : 0) | UInt8(message.qos.rawValue) << 1]
    append(record.sequence, bytes: 8, to: &bytes)
    append(UInt64(2 + topic.count + message.payload.count), bytes: 4, to: &bytes)
    append(UInt64(topic.count), bytes: 2, to: &bytes)
    bytes += topic
    bytes += message.payload
    append(UInt64(CRC32.checksum(bytes[...])), bytes: 4, to: &bytes)
    return bytes
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count, let first = needle.first else { return needle.isEmpty }
    var start = 0
    while start + needle.count <= haystack.count {
        if haystack[start] == first, haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        start += 1
    }
    return false
}
