// The fleet bridge: a Receiver's fixes, sky views and power to an MQTT broker, and the broker's
// consumers to the Receiver as subscriptions.
//
// Everything reaches ``BridgeMachine`` through one inbox — the fixes and sky views the bridge
// observes (on the receiver's thread), the client's events (on libmosquitto's network thread), the
// power states and the timers — and is handled there one event at a time, in order, by the thread
// that posted it when no other is handling (``BridgeInbox``): a fix is journaled and handed to
// libmosquitto on the receiver's thread, an acknowledgement leaves the journal on the network
// thread, with no hop to a thread or task of the bridge's own. A post while another thread is
// handling only queues the event for that thread, so neither the receiver nor libmosquitto ever
// waits for the other; the journal, the claims and the machine are touched by one thread at a time
// (the inbox's lock orders them); the statistics are a copy under a lock, and nothing is called
// with a lock held.
public import GNSSHat
import GNSSProtocol
public import LinuxSystem  // TimerThreadClock, the default clock
import Signals

/// Publishes a ``Receiver`` to an MQTT broker and lets consumers on other machines power it.
///
/// - `gnss-hat/DEVICE/status`: retained `online` while connected, `offline` after a clean stop and
///   as the last will;
/// - `gnss-hat/DEVICE/power`: the hardware's power, retained (``PowerPayload``), at every change:
///   `off` between a duty cycle's fixes, `power save`, `on`, whoever is subscribed;
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
    private let inbox: BridgeInbox
    private let shared: Lock<Shared>
    /// Tasks waiting for the statistics or the activity to change (resumed after every event).
    private let waiters = ConditionWaiters()
    /// The wind-up, waiting for the run's end (resumed once, then): not among `waiters`, which every
    /// event would wake to look again.
    private let ending = ConditionWaiters()
    /// The receiver clock's time (an offset from the bridge's creation), and a sleep until such a time.
    private let now: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void

    private struct Shared: Sendable {
        var statistics = MQTTBridgeStatistics()
        var journal: JournalHandle?
        /// Waits for the run's end and winds it up; a stop awaits it.
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
        receiver: Receiver, configuration: MQTTBridgeConfiguration, clock: C = TimerThreadClock()
    ) throws {
        self.receiver = receiver
        self.configuration = configuration
        let journal = try Journal(storage: FileJournalStorage(directory: configuration.journalDirectory),
                                  limits: configuration.journalLimits, syncPolicy: .explicit)
        var connection = configuration.connection
        connection.will = configuration.will
        let inbox = BridgeInbox()
        self.inbox = inbox
        // The client's events go straight into the inbox, on libmosquitto's thread.
        let libraryLog = Lock<String?>(nil)
        client = try MQTTClient(configuration: connection) { event in
            switch event {
            case let .libraryLog(text):
                // libmosquitto logs why an attempt failed (a TLS certificate) just before the failure.
                libraryLog.withLock { $0 = text }
            case let .connection(report):
                inbox.post(.connection(report, libraryLog: libraryLog.withLock { $0.take() }))
            case let .acknowledged(token, _, refusal):
                inbox.post(.acknowledged(token: token, refusal: refusal))
            case let .subscribed(filter, refusal):
                inbox.post(.subscribed(filter: filter, refusal: refusal))
            case let .message(message):
                inbox.post(.message(message))
            }
        }
        try client.subscribe(configuration.topics.demandFilter)
        var statistics = MQTTBridgeStatistics()
        statistics.journalPending = journal.pending.count
        shared = Lock(Shared(statistics: statistics, journal: JournalHandle(journal)))
        let reference = clock.now
        now = { reference.duration(to: clock.now) }
        sleep = { try await clock.sleep(until: reference.advanced(by: $0), tolerance: nil) }
    }

    /// Starts the bridge: observes the receiver, connects on the client's network thread (and
    /// reconnects, 1 s doubling to 60 s), and claims the receiver for each consumer present.
    /// Returns at once: a broker that is down or refuses us is reported through the log and retried.
    public func start() throws(MQTTError) {
        let journal = shared.withLock { shared -> JournalHandle? in
            guard !shared.started, !shared.stopRequested, let journal = shared.journal else { return nil }
            shared.started = true
            shared.journal = nil
            return journal
        }
        guard let journal else { return }
        let run = makeRun(journal: journal.journal)
        inbox.install(run)
        inbox.post(.started(now: now()))
        observeReceiver(for: run)
        let end = Task { await self.windUp(run) }
        shared.withLock { $0.run = end }
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
        inbox.post(.stop(power: receiver.hardwarePower))
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

    // MARK: - The run

    /// The machine and the journal, ready for the inbox.
    private func makeRun(journal: Journal) -> BridgeRun {
        let settings = BridgeMachine.Settings(
            topics: configuration.topics, broker: configuration.connection.broker.description,
            clientID: configuration.connection.clientID, devicePath: receiver.devicePath,
            trackerID: OwnTracksPayload.trackerID(for: configuration.topics.device),
            model: configuration.model ?? receiver.board.chip.model ?? receiver.board.name,
            every: configuration.every)
        let run = BridgeRun(
            bridge: self, journal: journal,
            machine: BridgeMachine(settings: settings, presenceSweepDelay: configuration.presenceSweepDelay))
        if !journal.recovery.isClean {
            log(.notice, "the journal in \(configuration.journalDirectory) had \(journal.recovery.corruptBytes) "
                + "damaged bytes (a write torn by a power loss?), skipped; \(journal.pending.count) records are kept")
        }
        return run
    }

    /// Observes the receiver's fixes, sky views and power states for `run` (kept there, ended by
    /// ``windUp(_:)``).
    private func observeReceiver(for run: BridgeRun) {
        // Fixes and sky views are handled on the receiver's thread as it delivers them.
        let inbox = inbox
        let now = now
        run.observations = [
            receiver.fixes.observe { fix in inbox.post(.fix(fix, now: now())) },
            receiver.sky.observe { sky in inbox.post(.sky(sky)) },
        ]
        let receiver = receiver
        run.powerStates = Task {
            for await change in receiver.hardwarePowerChanges() { inbox.post(.power(change)) }
        }
    }

    /// Called by the inbox after each event it handled, on the thread that handled it.
    func handled(_ statistics: MQTTBridgeStatistics) {
        shared.withLock { $0.statistics = statistics }
        waiters.resumeAll()
    }

    /// Waits until the run has finished (its machine said so), then ends the claims, the timers
    /// and the observations, and stops the client (which waits for the network thread's end, a
    /// second at most once the DISCONNECT is out).
    private func windUp(_ run: BridgeRun) async {
        let inbox = inbox
        await ending.wait { inbox.isClosed }
        guard inbox.isClosed else { return }  // cancelled: nobody waits for the end
        for observation in run.observations { observation.cancel() }
        run.powerStates?.cancel()
        run.endEverything()
        client.stop()
        var statistics = run.statistics
        statistics.connected = false
        statistics.stopped = true
        shared.withLock { $0.statistics = statistics }
        waiters.resumeAll()
    }

    func post(_ event: BridgeMachine.Event) {
        inbox.post(event)
    }

    /// Wakes whoever waits for the statistics or the activity (after an event, or the end).
    func changed() {
        waiters.resumeAll()
    }

    /// The run has finished: the wind-up may begin.
    func runClosed() {
        ending.resumeAll()
    }

    func log(_ level: BridgeLogLevel, _ line: String) {
        configuration.log(level, line)
    }

    /// When a timer armed now fires: `delay` from now on its clock. Taken when armed, not when the
    /// timer's task first runs (a manual clock may have moved by then).
    func deadline(_ timer: BridgeTimer, after delay: Duration) -> TimerDeadline {
        timer.onReceiverClock ? .receiverClock(now() + delay) : .continuous(ContinuousClock.now + delay)
    }

    func arm(_ timer: BridgeTimer, generation: UInt64, deadline: TimerDeadline) -> Task<Void, Never> {
        let wait: @Sendable () async throws -> Void
        switch deadline {
        case let .receiverClock(offset):
            let sleep = sleep
            wait = { try await sleep(offset) }
        case let .continuous(instant):
            wait = { try await TimerThreadClock().sleep(until: instant, tolerance: nil) }
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
enum TimerDeadline {
    case receiverClock(Duration)
    case continuous(ContinuousClock.Instant)
}

/// The journal, handed from the bridge's init to its task (one owner at a time).
private final class JournalHandle: @unchecked Sendable {
    let journal: Journal
    init(_ journal: Journal) { self.journal = journal }
}

extension MQTTBridge: ActivityReporting {
    /// Idle when the bridge has no event queued or being handled: a fix, an acknowledgement or a
    /// consumer's demand on its way to the machine (and so to a claim of the receiver) is work in
    /// progress that a driver of a manual clock must wait for (``HatDriver``'s `alsoWaitingFor`).
    package var activity: Activity { inbox.activity }

    package func waitForActivity(after changes: UInt64) async {
        await waiters.wait { self.inbox.activity.changes != changes }
    }
}
