// The fleet bridge: a Receiver's fixes, sky views and power to an MQTT broker, and the broker's
// consumers to the Receiver as subscriptions.
//
// One task of the bridge's own runs ``BridgeMachine``: everything reaches it through one inbox (an
// `AsyncStream`, whose `yield` never blocks) — the fixes and sky views the bridge observes (on the
// receiver's thread), the client's events (from libmosquitto's network thread), the power states,
// and the timers — so the receiver and libmosquitto never wait for the bridge, and the journal, the
// claims and the machine are touched by that task alone (no lock around them; the statistics are a
// copy under a lock, and nothing is called with it held).
public import GNSSHat
import GNSSProtocol
import LinuxSystem
import Signals

/// Publishes a ``Receiver`` to an MQTT broker and lets consumers on other machines power it.
///
/// - `gnss-hat/DEVICE/status`: retained `online` while connected, `offline` after a clean stop and
///   as the last will;
/// - `gnss-hat/DEVICE/power`: the retained power state (``PowerPayload``), at every change;
/// - `gnss-hat/DEVICE/tpv`, `gnss-hat/DEVICE/sky`: gpsd's TPV and SKY JSON of every fix and sky view
///   (retained, so a new subscriber has the latest at once);
/// - `owntracks/USER/DEVICE`: OwnTracks location JSON of every fix with a position (retained);
/// - `homeassistant/...`: Home Assistant discovery, retained, once per connection.
///
/// The fixes (TPV and OwnTracks) go with QoS 1 through the ``Journal``: appended before they are
/// published, removed when the broker acknowledges them, so while the broker is unreachable they are
/// kept, in order, and sent after the reconnect, across a restart too. Sky views and the rest are
/// QoS 1 without the journal (only the latest matters).
///
/// Every consumer whose retained `gnss-hat/DEVICE/demand/CONSUMER` is present is one subscription of
/// the receiver; an empty message, or the consumer's will, ends it, and the receiver's linger applies.
/// ``MQTTBridgeConfiguration/every`` adds a standing demand of the bridge's own. The bridge observes
/// the receiver (``DemandSignal/observe(onValue:onCompletion:)``): it publishes what the receiver
/// produces for anyone (gpsd watchers too) and never powers it by itself.
///
/// ```swift
/// let bridge = try MQTTBridge(receiver: receiver, configuration: MQTTBridgeConfiguration(
///     broker: try BrokerAddress(url: "mqtt://pi1@broker.lan"), password: password,
///     device: try DeviceName("pi1"), journalDirectory: "/var/lib/gnss-hat/mqtt"))
/// try bridge.start()      // connects (and reconnects) on its own thread
/// ...
/// await bridge.stop()     // ends the claims, says offline, disconnects
/// ```
public final class MQTTBridge: Sendable {
    public let configuration: MQTTBridgeConfiguration
    public let receiver: Receiver
    let client: MQTTClient
    private let inbox: AsyncStream<BridgeMachine.Event>.Continuation
    private let shared: Lock<Shared>
    private let waiters = ConditionWaiters()
    /// The receiver clock's time (an offset from the bridge's creation), and a sleep until such a time.
    private let now: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void

    private struct Shared: Sendable {
        var statistics = MQTTBridgeStatistics()
        var stream: AsyncStream<BridgeMachine.Event>?
        var journal: JournalHandle?
        var run: Task<Void, Never>?
        var started = false
        var stopRequested = false
    }

    /// Opens the journal and makes the client (`mosquitto_new`, ...); connects nothing yet.
    /// `clock` is the receiver's clock: the standing demand and the retry after a receiver failure
    /// run on it (a test's manual clock). Throws ``JournalError`` when the journal cannot be opened
    /// (a directory that cannot be made or written, another process holding it), ``MQTTError`` when
    /// libmosquitto refuses the settings.
    public init<C: Clock<Duration>>(
        receiver: Receiver, configuration: MQTTBridgeConfiguration, clock: C = ContinuousClock()
    ) throws {
        self.receiver = receiver
        self.configuration = configuration
        let journal = try Journal(storage: FileJournalStorage(directory: configuration.journalDirectory),
                                  limits: configuration.journalLimits, syncPolicy: .explicit)
        var connection = configuration.connection
        connection.will = configuration.will
        let (stream, inbox) = AsyncStream<BridgeMachine.Event>.makeStream()
        self.inbox = inbox
        // The client's events go straight into the inbox, from libmosquitto's thread (yield never blocks).
        let libraryLog = Lock<String?>(nil)
        client = try MQTTClient(configuration: connection) { event in
            switch event {
            case let .libraryLog(text):
                // libmosquitto logs why an attempt failed (a TLS certificate) just before the failure.
                libraryLog.withLock { $0 = text }
            case let .connection(report):
                inbox.yield(.connection(report, libraryLog: libraryLog.withLock { $0.take() }))
            case let .acknowledged(token, _, refusal):
                inbox.yield(.acknowledged(token: token, refusal: refusal))
            case let .subscribed(filter, refusal):
                inbox.yield(.subscribed(filter: filter, refusal: refusal))
            case let .message(message):
                inbox.yield(.message(message))
            }
        }
        try client.subscribe(configuration.topics.demandFilter)
        var statistics = MQTTBridgeStatistics()
        statistics.journalPending = journal.pending.count
        shared = Lock(Shared(statistics: statistics, stream: stream, journal: JournalHandle(journal)))
        let reference = clock.now
        now = { reference.duration(to: clock.now) }
        sleep = { try await clock.sleep(until: reference.advanced(by: $0), tolerance: nil) }
    }

    deinit {
        inbox.finish()
    }

    /// Starts the bridge: observes the receiver, connects on the client's network thread (and
    /// reconnects, 1 s doubling to 60 s), and claims the receiver for each consumer present.
    /// Returns at once: a broker that is down or refuses us is reported through the log and retried.
    public func start() throws(MQTTError) {
        let taken = shared.withLock { shared -> (AsyncStream<BridgeMachine.Event>, JournalHandle)? in
            guard !shared.started, !shared.stopRequested, let stream = shared.stream,
                  let journal = shared.journal else { return nil }
            shared.started = true
            shared.stream = nil
            shared.journal = nil
            return (stream, journal)
        }
        guard let (stream, journal) = taken else { return }
        let run = Task { await self.run(stream, journal: journal.journal) }
        shared.withLock { $0.run = run }
        inbox.yield(.started(now: now()))
        try client.start()
    }

    /// Stops: ends every claim (the receiver powers off after its linger unless someone else
    /// listens), publishes the power state and a retained `offline`, waits up to 2 s for the broker
    /// to acknowledge it, makes the journal durable, and disconnects cleanly (`mosquitto_disconnect`:
    /// no will). Returns when all is done; calling it again waits for the same end.
    public func stop() async {
        let run = shared.withLock { shared -> Task<Void, Never>? in
            shared.stopRequested = true
            return shared.run
        }
        guard let run else {
            client.stop()
            shared.withLock { $0.journal = nil }
            return
        }
        inbox.yield(.stop(power: receiver.powerState))
        await run.value
    }

    /// The bridge's counters, as of its last event.
    public var statistics: MQTTBridgeStatistics { shared.withLock { $0.statistics } }

    /// Suspends until the statistics satisfy `condition` (checked now and after every event), or
    /// the calling task is cancelled.
    public func waitForStatistics(_ condition: @escaping @Sendable (MQTTBridgeStatistics) -> Bool) async {
        // A resume says "something changed", not "it holds": ask again until it does.
        while !condition(statistics) && !Task.isCancelled {
            await waiters.wait { condition(statistics) }
        }
    }

    // MARK: - The bridge's task

    private func run(_ stream: AsyncStream<BridgeMachine.Event>, journal: Journal) async {
        let settings = BridgeMachine.Settings(
            topics: configuration.topics, broker: configuration.connection.broker.description,
            clientID: configuration.connection.clientID, devicePath: receiver.devicePath,
            trackerID: OwnTracksPayload.trackerID(for: configuration.topics.device),
            model: configuration.model ?? receiver.board.chip.model ?? receiver.board.name,
            every: configuration.every)
        var loop = RunLoop(
            bridge: self, journal: journal,
            machine: BridgeMachine(settings: settings, presenceSweepDelay: configuration.presenceSweepDelay))
        if !journal.recovery.isClean {
            log(.notice, "the journal in \(configuration.journalDirectory) had \(journal.recovery.corruptBytes) "
                + "damaged bytes (a write torn by a power loss?), skipped; \(journal.pending.count) records are kept")
        }
        let inbox = inbox
        let now = now
        let fixes = receiver.fixes.observe { fix in inbox.yield(.fix(fix, now: now())) }
        let sky = receiver.sky.observe { sky in inbox.yield(.sky(sky)) }
        let receiver = receiver
        let power = Task {
            for await state in receiver.powerStates() {
                let failure = state == .failed ? receiver.events.statistics.lastFailure : nil
                inbox.yield(.power(state, failure: failure))
            }
        }
        for await event in stream {
            loop.handle(event)
            let statistics = loop.statistics
            shared.withLock { $0.statistics = statistics }
            waiters.resumeAll()
            if loop.finished { break }
        }
        fixes.cancel()
        sky.cancel()
        power.cancel()
        loop.endEverything()
        // Blocks for the network thread's end (a second at most once the DISCONNECT is out).
        client.stop()
        inbox.finish()
        var statistics = loop.statistics
        statistics.connected = false
        statistics.stopped = true
        shared.withLock { $0.statistics = statistics }
        waiters.resumeAll()
    }

    fileprivate func post(_ event: BridgeMachine.Event) {
        inbox.yield(event)
    }

    fileprivate func log(_ level: BridgeLogLevel, _ line: String) {
        configuration.log(level, line)
    }

    /// When a timer armed now fires: `delay` from now on its clock. Taken when armed, not when the
    /// timer's task first runs (a manual clock may have moved by then).
    fileprivate func deadline(_ timer: BridgeTimer, after delay: Duration) -> TimerDeadline {
        timer.onReceiverClock ? .receiverClock(now() + delay) : .continuous(ContinuousClock.now + delay)
    }

    fileprivate func arm(_ timer: BridgeTimer, generation: UInt64, deadline: TimerDeadline) -> Task<Void, Never> {
        let wait: @Sendable () async throws -> Void
        switch deadline {
        case let .receiverClock(offset):
            let sleep = sleep
            wait = { try await sleep(offset) }
        case let .continuous(instant):
            wait = { try await ContinuousClock().sleep(until: instant, tolerance: nil) }
        }
        let now = now
        return Task { [weak self] in
            do { try await wait() } catch { return }
            self?.post(.timerFired(timer, generation: generation, now: now()))
        }
    }
}

extension Optional {
    /// The value, leaving nil.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}

/// A timer's deadline: an offset on the receiver's clock, or an instant of the continuous clock.
private enum TimerDeadline {
    case receiverClock(Duration)
    case continuous(ContinuousClock.Instant)
}

/// The journal, handed from the bridge's init to its task (one owner at a time).
private final class JournalHandle: @unchecked Sendable {
    let journal: Journal
    init(_ journal: Journal) { self.journal = journal }
}

/// What the bridge's task holds: the machine, the journal, the claims and the timers; it performs
/// the machine's actions in order and feeds back the events they cause.
private struct RunLoop {
    let bridge: MQTTBridge
    let journal: Journal
    var machine: BridgeMachine
    var claims: [Claim: ReceiverClaim] = [:]
    var timers: [BridgeTimer: Task<Void, Never>] = [:]
    var statistics = MQTTBridgeStatistics()
    var finished = false
    /// Journal failures already reported (one line each kind until one succeeds again).
    var journalFailing = false
    var droppedReported = 0

    init(bridge: MQTTBridge, journal: Journal, machine: BridgeMachine) {
        self.bridge = bridge
        self.journal = journal
        self.machine = machine
        statistics.journalPending = journal.pending.count
    }

    mutating func handle(_ event: BridgeMachine.Event) {
        var events = [event]
        while !events.isEmpty {
            let next = events.removeFirst()
            for action in machine.handle(next) { perform(action, followUps: &events) }
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

    private mutating func perform(_ action: BridgeMachine.Action, followUps: inout [BridgeMachine.Event]) {
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
            let topic = refused == nil ? nil : journal.pending.first { $0.sequence == sequence }?.message.topic
            do {
                if try journal.acknowledge(sequence) {
                    if let refused, let topic {
                        statistics.refused += 1
                        followUps.append(.journalRecordRefused(topic: topic, refused))
                    } else {
                        statistics.acknowledged += 1
                    }
                }
                journalSucceeded()
            } catch {
                journalFailed(error)
            }
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

    /// Appends a fix's messages to the journal, publishes them when connected, and makes them
    /// durable when the journal is all there is (``BridgeMachine/syncsAppend(published:pendingBefore:)``).
    private mutating func journalAndPublish(_ messages: [OutgoingMessage], publish: Bool) {
        statistics.fixes += 1
        let pendingBefore = journal.pending.count
        var published = publish
        var appended: [(sequence: UInt64, message: OutgoingMessage)] = []
        for message in messages {
            do {
                appended.append((try journal.append(message), message))
                journalSucceeded()
            } catch {
                journalFailed(error)
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
        guard !appended.isEmpty, BridgeMachine.syncsAppend(published: published, pendingBefore: pendingBefore) else {
            return
        }
        do {
            try journal.sync()
        } catch {
            journalFailed(error)
        }
    }

    private mutating func journalFailed(_ error: JournalError) {
        guard !journalFailing else { return }
        journalFailing = true
        bridge.log(.notice, "the journal failed: \(error); fixes are published but not kept while the broker "
            + "is away until it works again")
    }

    private mutating func journalSucceeded() {
        if journalFailing {
            journalFailing = false
            bridge.log(.notice, "the journal works again")
        }
    }

    /// The stop: every claim and timer ends.
    mutating func endEverything() {
        for claim in claims.values { claim.cancel() }
        claims = [:]
        for timer in timers.values { timer.cancel() }
        timers = [:]
        statistics.claims = 0
        statistics.standingClaim = false
    }
}
