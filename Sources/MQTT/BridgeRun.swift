// What the bridge's inbox runs: the machine's actions performed in order (publish, journal, claims,
// timers, logs) and the events they cause fed back before the next.
import GNSSHat  // the receiver's claims
import Signals  // SignalToken

/// What the inbox's handler holds: the machine, the journal, the claims and the timers; it performs
/// the machine's actions in order and feeds back the events they cause. Used by one thread at a
/// time (``BridgeInbox`` orders them), hence unchecked.
final class BridgeRun: @unchecked Sendable {
    let bridge: MQTTBridge
    let journal: Journal
    var machine: BridgeMachine
    var claims: [Claim: ReceiverClaim] = [:]
    var timers: [BridgeTimer: Task<Void, Never>] = [:]
    /// The receiver's fixes and sky views, and the task that follows its hardware's power.
    var observations: [SignalToken] = []
    var powerStates: Task<Void, Never>?
    var statistics = MQTTBridgeStatistics()
    var finished = false
    /// Journal failures already reported (one line each kind until one succeeds again).
    var journalFailing = false
    /// Fixes appended since the journal's last sync that must be made durable (``syncIfDue()``).
    var unsyncedFixes = 0
    var droppedReported = 0

    init(bridge: MQTTBridge, journal: Journal, machine: BridgeMachine) {
        self.bridge = bridge
        self.journal = journal
        self.machine = machine
        statistics.journalPending = journal.pending.count
    }

    func handle(_ event: BridgeMachine.Event) {
        // What the actions cause (a refused journal record) is handled before the next event.
        var followUps: [BridgeMachine.Event] = []
        for action in machine.handle(event) { perform(action, followUps: &followUps) }
        while !followUps.isEmpty {
            let next = followUps.removeFirst()
            for action in machine.handle(next) { perform(action, followUps: &followUps) }
        }
        statistics.connected = machine.connected
        statistics.consumers = machine.presence.consumers
        statistics.claims = claims.count
        statistics.standingClaim = claims[.standing] != nil
        statistics.journalPending = journal.pending.count
        statistics.journalDropped = journal.droppedByLimits
        if journal.droppedByLimits > droppedReported {
            bridge.log(.notice, "the journal is full: dropped \(journal.droppedByLimits - droppedReported) oldest "
                + "records to stay within \(journal.limits.maximumRecords) records and "
                + "\(journal.limits.maximumBytes) bytes (\(journal.droppedByLimits) since the start)")
            droppedReported = journal.droppedByLimits
        }
    }

    private func perform(_ action: BridgeMachine.Action, followUps: inout [BridgeMachine.Event]) {
        let client = bridge.client
        switch action {
        case let .publish(message, token):
            do {
                try client.publish(message, token: token)
            } catch {
                // Not connected: the message is of the moment (status, power, sky), nothing to keep.
                if error.code != .library(.noConnection) {
                    bridge.log(.detail, "cannot publish on \(message.topic): \(error)")
                }
            }
        case let .journal(messages, publish):
            journalAndPublish(messages, publish: publish)
        case .replayJournal:
            let held = client.unacknowledgedTokens
            let replay = journal.pending.filter { !held.contains($0.sequence) }
            if !replay.isEmpty {
                bridge.log(.notice, "sending \(replay.count) journaled messages the broker has not acknowledged")
            }
            for record in replay {
                do {
                    try client.publish(record.message, token: record.sequence)
                } catch {
                    // The connection went again: the rest waits for the next one.
                    break
                }
            }
        case let .acknowledge(sequence, refused):
            acknowledge(sequence, refused: refused, followUps: &followUps)
        case .syncJournal:
            do {
                try journal.sync()
            } catch {
                journalFailed(error)
            }
        case let .beginClaim(claim, demand, generation):
            claims.removeValue(forKey: claim)?.cancel()
            let bridge = bridge
            claims[claim] = bridge.receiver.claim(for: demand) { failure in
                bridge.post(.claimEnded(claim, generation: generation, failure: failure))
            }
        case let .updateClaim(claim, demand):
            claims[claim]?.change(to: demand)
        case let .endClaim(claim):
            claims.removeValue(forKey: claim)?.cancel()
        case let .arm(timer, generation, delay):
            timers[timer]?.cancel()
            timers[timer] = bridge.arm(timer, generation: generation, deadline: bridge.deadline(timer, after: delay))
        case let .armAt(timer, generation, deadline):
            timers[timer]?.cancel()
            timers[timer] = bridge.arm(timer, generation: generation, deadline: .receiverClock(deadline))
        case let .log(level, line):
            bridge.log(level, line)
        case .finished:
            finished = true
        }
    }

    /// Takes an acknowledged (or refused) record out of the journal and counts it. A removal the file
    /// could not take is reported; the record has left the journal all the same.
    private func acknowledge(_ sequence: UInt64, refused: MQTTError?, followUps: inout [BridgeMachine.Event]) {
        guard journal.isPending(sequence) else { return }
        let topic = refused == nil ? nil : journal.pending.first { $0.sequence == sequence }?.message.topic
        do {
            try journal.acknowledge(sequence)
            journalSucceeded()
        } catch {
            journalFailed(error)
        }
        if let refused, let topic {
            statistics.refused += 1
            followUps.append(.journalRecordRefused(topic: topic, refused))
        } else {
            statistics.acknowledged += 1
        }
    }

    /// Appends a fix's messages to the journal, publishes them when connected, and makes them
    /// durable when the journal is all there is (``BridgeMachine/syncsAppend(published:pendingBefore:)``).
    private func journalAndPublish(_ messages: [OutgoingMessage], publish: Bool) {
        statistics.fixes += 1
        let pendingBefore = journal.pending.count
        var published = publish
        var appended: [(sequence: UInt64, message: OutgoingMessage)] = []
        // The fix's first journal failure: reported once the fix is done, so a fix whose appends work
        // and whose sync fails is one failure, not a failure and a recovery.
        var failure: JournalError?
        for message in messages {
            do {
                appended.append((try journal.append(message), message))
            } catch {
                failure = failure ?? error
                statistics.unjournaled += 1
                // Not kept: sent as it is when it can be.
                if publish { _ = try? bridge.client.publish(message, token: 0) }
            }
        }
        if publish {
            for (sequence, message) in appended {
                do {
                    try bridge.client.publish(message, token: sequence)
                } catch {
                    // The connection just went (the loss is on its way): the journal keeps it.
                    published = false
                    break
                }
            }
        }
        if !appended.isEmpty, BridgeMachine.syncsAppend(published: published, pendingBefore: pendingBefore) {
            // Synced once the inbox has no event left (or after `syncBatch` fixes): one fdatasync per
            // batch, not per fix, so a slow disk slows the syncs, not the handling of every event.
            unsyncedFixes += 1
        }
        if let failure {
            journalFailed(failure)
        } else if unsyncedFixes == 0 {
            journalSucceeded()
        }
        if unsyncedFixes >= Self.syncBatch { _ = syncIfDue() }
    }

    /// The most fixes appended before their sync, while events keep coming.
    static let syncBatch = 32

    /// Makes the journal's appends durable (`fdatasync`) when a fix since the last sync needed it
    /// (``BridgeMachine/syncsAppend(published:pendingBefore:)``). Returns whether it synced.
    func syncIfDue() -> Bool {
        guard unsyncedFixes > 0 else { return false }
        unsyncedFixes = 0
        do {
            try journal.sync()
            journalSucceeded()
        } catch {
            journalFailed(error)
        }
        return true
    }

    private func journalFailed(_ error: JournalError) {
        guard !journalFailing else { return }
        journalFailing = true
        bridge.log(.notice, "the journal failed: \(error); fixes are published but not kept while the broker "
            + "is away until it works again")
    }

    private func journalSucceeded() {
        if journalFailing {
            journalFailing = false
            bridge.log(.notice, "the journal works again")
        }
    }

    /// The stop: every claim and timer ends.
    func endEverything() {
        for claim in claims.values { claim.cancel() }
        claims = [:]
        for timer in timers.values { timer.cancel() }
        timers = [:]
        statistics.claims = 0
        statistics.standingClaim = false
    }
}
