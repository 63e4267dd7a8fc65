// A client's bounded queue of outgoing lines. A client that does not read must cost at most `limit`
// bytes: when a line does not fit, the oldest whole lines are dropped (and counted), never a line
// already partly on the wire, so what the client does get is always whole JSON lines.

struct OutputQueue {
    /// The most bytes kept waiting.
    let limit: Int
    private var lines: [[UInt8]] = []
    /// Index of the first line still queued; lines before it are spent (compacted now and then).
    private var head = 0
    /// Bytes of `lines[head]` already written.
    private var headOffset = 0
    private(set) var queuedBytes = 0
    /// Lines dropped because the queue was full, over the queue's life.
    private(set) var dropped = 0

    init(limit: Int) {
        self.limit = max(limit, 1)
    }

    var isEmpty: Bool { head == lines.count }

    /// Lines waiting (a partly written line counts).
    var count: Int { lines.count - head }

    /// Queues `line`, first dropping the oldest lines not yet started while it would not fit.
    /// A line larger than the whole limit is itself dropped. Returns how many lines were dropped.
    @discardableResult
    mutating func append(_ line: [UInt8]) -> Int {
        guard !line.isEmpty else { return 0 }
        guard line.count <= limit else {
            dropped += 1
            return 1
        }
        var droppedNow = 0
        while queuedBytes + line.count > limit {
            // The head line is dropped only if none of it was written yet.
            let victim = headOffset > 0 ? head + 1 : head
            guard victim < lines.count else { break }
            queuedBytes -= lines[victim].count - (victim == head ? headOffset : 0)
            lines.remove(at: victim)
            droppedNow += 1
        }
        if queuedBytes + line.count > limit {
            // Only a partly written line is left and the new one still does not fit.
            dropped += droppedNow + 1
            return droppedNow + 1
        }
        lines.append(line)
        queuedBytes += line.count
        dropped += droppedNow
        return droppedNow
    }

    /// Writes queued bytes with `send` (which returns how many it took, 0 when it would block) until
    /// the queue is empty or `send` takes less than offered. Returns whether the queue is empty.
    mutating func write<E: Error>(using send: (UnsafeRawBufferPointer) throws(E) -> Int) throws(E) -> Bool {
        while head < lines.count {
            let line = lines[head]
            let offset = headOffset
            let result = line.withUnsafeBytes { raw in
                Result { () throws(E) -> Int in try send(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            let sent = try result.get()
            queuedBytes -= sent
            if offset + sent < line.count {
                headOffset = offset + sent
                compact()
                return false
            }
            head += 1
            headOffset = 0
        }
        compact()
        return true
    }

    private mutating func compact() {
        if head == lines.count {
            lines.removeAll(keepingCapacity: lines.count <= 64)
            head = 0
        } else if head > 32 && head * 2 > lines.count {
            lines.removeFirst(head)
            head = 0
        }
    }
}
