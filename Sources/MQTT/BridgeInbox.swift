// The bridge's one inbox: every event (fixes and sky views from the receiver's thread, the client's
// events from libmosquitto's network thread, power states, timers) handled in order by whichever
// thread posts while no other is handling (see MQTTBridge.swift's header).
import LinuxSystem  // Lock
import GNSSHat  // Activity

/// The bridge's events, handled one at a time and in order by whichever thread posts one while no
/// other is handling: a post while another thread handles queues the event for that thread and
/// returns at once (a sky view waiting is replaced by a newer one: ``BridgeBacklog``). Events posted
/// before the run is installed wait for it; after the run finished, events are dropped.
final class BridgeInbox: Sendable {
    private struct State: Sendable {
        /// The events waiting, the sky views coalesced (``BridgeBacklog``).
        var queue = BridgeBacklog()
        var run: BridgeRun?
        var handling = false
        var closed = false
        /// Events posted and handled so far (``activity``).
        var changes: UInt64 = 0
    }

    private let state = Lock(State())

    /// Whether the run has finished (no event is handled any more).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Idle when no event waits and none is being handled.
    var activity: Activity {
        state.withLock { Activity(isIdle: !$0.handling && ($0.queue.isEmpty || $0.run == nil), changes: $0.changes) }
    }

    /// Hands the inbox its run, and handles what was posted before.
    func install(_ run: BridgeRun) {
        let drain = state.withLock { state -> Bool in
            state.run = run
            guard !state.handling, !state.queue.isEmpty else { return false }
            state.handling = true
            return true
        }
        if drain { self.drain(run) }
    }

    /// Handles `event` now on this thread, or queues it for the thread that is handling.
    func post(_ event: BridgeMachine.Event) {
        let run = state.withLock { state -> BridgeRun? in
            guard !state.closed else { return nil }
            state.queue.append(event)
            state.changes &+= 1
            guard !state.handling, let run = state.run else { return nil }
            state.handling = true
            return run
        }
        if let run { drain(run) }
    }

    /// Handles the queue until it is empty (events queued meanwhile by other threads included), then
    /// makes the journal's appends of the batch durable (``BridgeRun/syncIfDue()``) before going idle.
    private func drain(_ run: BridgeRun) {
        while true {
            let next = state.withLock { state -> BridgeMachine.Event? in
                guard !state.closed else {
                    state.handling = false
                    state.changes &+= 1
                    return nil
                }
                return state.queue.removeFirst()
            }
            guard let event = next else {
                if state.withLock({ $0.closed }) { break }
                // One fdatasync for the batch; events posted meanwhile are the next batch.
                if run.syncIfDue() { continue }
                let idle = state.withLock { state -> Bool in
                    guard state.closed || state.queue.isEmpty else { return false }
                    state.handling = false
                    state.changes &+= 1
                    return true
                }
                if idle { break } else { continue }
            }
            run.handle(event)
            // Published before closing: once closed, the run belongs to the bridge's wind-up, whose
            // final statistics (stopped) must come last.
            run.bridge.handled(run.statistics)
            if run.finished {
                _ = run.syncIfDue()
                state.withLock { state in
                    state.closed = true
                    state.handling = false
                    state.changes &+= 1
                    state.queue.removeAll()
                    state.run = nil
                }
                run.bridge.runClosed()
            }
        }
        // Idle again: whoever waits for the activity to change looks again.
        run.bridge.changed()
    }
}
