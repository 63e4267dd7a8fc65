// The executors' first-in, first-out queue, and taking from it on a ThreadCondition.

/// First in, first out, with `close()` for shutdown.
struct JobQueue<Element> {
    private var items: [Element] = []
    private var head = 0
    private(set) var closed = false

    var isEmpty: Bool { head == items.count }

    mutating func append(_ item: Element) {
        items.append(item)
    }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    mutating func close() {
        closed = true
    }
}

extension ThreadCondition {
    func put<Element>(_ item: Element) where State == JobQueue<Element> {
        withLock { queue in
            queue.append(item)
            signalOne()
        }
    }

    /// The next item, waiting for one; nil once closed and drained.
    func take<Element>() -> Element? where State == JobQueue<Element> {
        waitHeld { queue in
            if let item = queue.popFirst() { return .done(item) }
            return queue.closed ? .done(nil) : .wait(until: nil)
        }
    }

    func close<Element>() where State == JobQueue<Element> {
        withLock(notify: true) { $0.close() }
    }
}
