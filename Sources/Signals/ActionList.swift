/// What one transition asks for, in the order it must be done: the first four elements are
/// stored inline, so that an event (and a subscribe or cancel on the hot path, which usually
/// asks for nothing) allocates nothing. No transition asks for more than four today; a fifth
/// would go to the heap, not be lost.
struct ActionList<Element>: RandomAccessCollection {
    private var inline: (Element?, Element?, Element?, Element?) = (nil, nil, nil, nil)
    private var overflow: [Element] = []
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Element {
        precondition(position >= 0 && position < count, "index out of range")
        let element: Element? = switch position {
        case 0: inline.0
        case 1: inline.1
        case 2: inline.2
        case 3: inline.3
        default: overflow[position - 4]
        }
        // Every position below `count` was set by `append`.
        return element.unsafelyUnwrapped
    }

    /// Adds `element` after the ones already in the list.
    mutating func append(_ element: Element) {
        switch count {
        case 0: inline.0 = element
        case 1: inline.1 = element
        case 2: inline.2 = element
        case 3: inline.3 = element
        default: overflow.append(element)
        }
        count += 1
    }
}

extension ActionList: Sendable where Element: Sendable {}
