// The timer thread's queue: items by deadline, a binary min-heap.

/// Items ordered by deadline (ties in the order they came), as a binary min-heap.
struct DeadlineQueue<Element> {
    private struct Entry {
        let deadline: MonotonicInstant
        let sequence: UInt64
        let item: Element

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0
    private(set) var closed = false

    var count: Int { heap.count }
    /// How many items were ever inserted.
    var inserted: UInt64 { nextSequence }
    /// The earliest deadline, if any.
    var earliest: MonotonicInstant? { heap.first?.deadline }

    mutating func insert(_ item: Element, at deadline: MonotonicInstant) {
        heap.append(Entry(deadline: deadline, sequence: nextSequence, item: item))
        nextSequence += 1
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the items due at `now`, earliest first.
    mutating func removeDue(at now: MonotonicInstant) -> [Element] {
        var due: [Element] = []
        while let first = heap.first, first.deadline <= now {
            due.append(first.item)
            let last = heap.removeLast()
            guard !heap.isEmpty else { break }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
                if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return due
    }

    /// Removes the items `predicate` picks (linear, then the heap is made again: for the few items
    /// a timer thread holds); true when that moved the earliest deadline (a wait until it is stale).
    @discardableResult
    mutating func remove(where predicate: (Element) -> Bool) -> Bool {
        let kept = heap.filter { !predicate($0.item) }
        guard kept.count != heap.count else { return false }
        let earliestBefore = earliest
        heap = []
        for entry in kept.sorted(by: { $0.precedes($1) }) { heap.append(entry) }
        return earliest != earliestBefore
    }

    mutating func close() {
        closed = true
    }
}
