// The events waiting for the bridge's handler, with the sky views coalesced: while the handler is
// slow (a journal's `fdatasync` per fix on a busy disk, at a simulator's `--speed 200` a few hundred
// a second), the receiver goes on posting a fix and a sky view per epoch. Every fix is kept (it is
// journaled), but only the newest sky view matters (published retained, of the moment), so at most
// one waits: a backlog of N epochs holds N fixes and one sky view, not N sky views of a few KiB each.
import GNSSProtocol

/// A first-in first-out queue of ``BridgeMachine/Event``s where at most one sky view waits: a newer
/// one takes the place of the one waiting (keeping its place in the order).
struct BridgeBacklog: Sendable {
    private enum Entry: Sendable {
        case event(BridgeMachine.Event)
        /// The place of the sky view waiting (`sky`).
        case sky
    }

    private var entries: [Entry] = []
    /// The index of the next entry to take: taken entries are dropped when the queue empties, not
    /// one at a time (no shift of the rest per event).
    private var head = 0
    private var sky: SkyView?

    var isEmpty: Bool { head == entries.count }

    /// How many events wait.
    var count: Int { entries.count - head }

    /// Queues `event`; a sky view while another waits replaces it.
    mutating func append(_ event: BridgeMachine.Event) {
        if case let .sky(view) = event {
            if sky == nil { entries.append(.sky) }
            sky = view
        } else {
            entries.append(.event(event))
        }
    }

    /// The oldest event waiting, taken out of the queue.
    mutating func removeFirst() -> BridgeMachine.Event? {
        guard head < entries.count else { return nil }
        let event: BridgeMachine.Event?
        switch entries[head] {
        case let .event(waiting):
            event = waiting
        case .sky:
            // The sky entry exists only while `sky` holds the view waiting.
            event = sky.map { .sky($0) }
            sky = nil
        }
        head += 1
        if head == entries.count {
            // A short queue keeps its storage for the next events; a backlog's is given back.
            entries.removeAll(keepingCapacity: entries.count <= Self.keptCapacity)
            head = 0
        }
        return event
    }

    /// The most entries whose storage an emptied queue keeps.
    static let keptCapacity = 64

    /// Drops every event waiting, and the storage they took.
    mutating func removeAll() {
        entries = []
        head = 0
        sky = nil
    }
}
