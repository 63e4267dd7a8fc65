// What the fleet bridge does, as a plain value: events go in (a fix, a sky view, a power state, what
// the broker said, a timer), the actions to perform come out in order (publish, journal, begin or
// end a claim on the receiver, arm a timer, log a line). It calls nothing and knows no clock: times
// are offsets on the receiver's clock, given with the events that need them. ``MQTTBridge`` holds
// it in its one task, performs the actions, and feeds back what they caused.
import GNSSHat
import GNSSProtocol

/// How much a bridge's log line matters: `gnss-hat serve` always prints notices, details with `--verbose`.
public enum BridgeLogLevel: Sendable, Hashable {
    /// Something the user must see: a refused connection, a broker that went away, an ACL refusal,
    /// a journal that cannot be written.
    case notice
    /// What the bridge is doing: consumers arriving and leaving, the standing demand, power.
    case detail
}

/// A subscription the bridge holds on the receiver: one per present consumer, and the standing
/// demand of `--mqtt-every`.
enum Claim: Hashable, Sendable, CustomStringConvertible {
    case consumer(String)
    case standing

    var description: String {
        switch self {
        case let .consumer(name): "consumer \(name)"
        case .standing: "the standing demand"
        }
    }
}

/// The bridge's timers: the presence sweep and the probe wait for the broker (real time); the
/// standing demand and the claims' retry follow the receiver (its clock).
enum BridgeTimer: Hashable, Sendable {
    case sweep
    case probe
    case standing
    case claimRetry
    case stopLimit

    /// Whether the timer runs on the receiver's clock (else on the continuous clock: it waits for
    /// the network, which a test's manual clock does not move).
    var onReceiverClock: Bool { self == .standing || self == .claimRetry }
}

/// The tokens of messages published outside the journal: journal records use their sequence number
/// (below 2^62), these the top of the range, so an acknowledgement says what it acknowledges.
enum BridgeToken {
    static let base: UInt64 = 1 << 62
    static let status = base | 1
    static let power = base | 2
    static let discovery = base | 3
    static let sky = base | 4
    static let probe = base | 5
    static let offline = base | 6

    static func isJournal(_ token: UInt64) -> Bool { token != 0 && token < base }
}

struct BridgeMachine: Sendable {
    struct Settings: Sendable {
        var topics: MQTTTopics
        /// The broker, for log lines.
        var broker: String
        var clientID: String
        /// The `device` of TPV and SKY (the receiver's device path, as the service writes it).
        var devicePath: String
        /// OwnTracks' two-character tracker id.
        var trackerID: String
        /// Home Assistant's device model.
        var model: String
        /// `--mqtt-every`: a fix at least this often, asked by the bridge itself.
        var every: Duration?
        /// How long after the demand subscription the broker's own probe must have come back.
        var probeTimeout: Duration = .seconds(5)
        /// How long to wait for the broker to acknowledge `offline` when stopping.
        var stopLimit: Duration = .seconds(2)
        /// After a receiver failure ended the claims: when to claim again (1 s doubling to 60 s).
        var claimRetry = ReconnectPolicy.Configuration()
    }

    enum Event: Sendable {
        case started(now: Duration)
        case fix(Fix, now: Duration)
        case sky(SkyView)
        /// The hardware's power changed.
        case power(HardwarePowerChange)
        /// What the client reported about the connection; `libraryLog` is libmosquitto's last error
        /// line since the previous report (a TLS failure says why there).
        case connection(ReconnectPolicy.Report, libraryLog: String?)
        case acknowledged(token: UInt64, refusal: MQTTError?)
        /// The broker refused the journal record the bridge published on `topic`.
        case journalRecordRefused(topic: String, MQTTError)
        case subscribed(filter: String, refusal: MQTTError?)
        case message(IncomingMessage)
        /// A claim ended without being cancelled: the receiver failed (`failure`) or shut down (nil).
        case claimEnded(Claim, generation: UInt64, failure: String?)
        case timerFired(BridgeTimer, generation: UInt64, now: Duration)
        /// Stop: end every claim, say `offline`, and finish once the broker has it (or the limit passed).
        case stop(power: HardwarePowerChange)
    }

    enum Action: Equatable, Sendable {
        /// Publish outside the journal, with `token`.
        case publish(OutgoingMessage, token: UInt64)
        /// Append these to the journal (in order), then publish each with its sequence as token when
        /// `publish` (the bridge is connected and has replayed the journal); kept for later otherwise.
        case journal([OutgoingMessage], publish: Bool)
        /// Publish the journal's pending messages, oldest first, except those the client still holds
        /// (libmosquitto sends again itself what it took before the connection went).
        case replayJournal
        /// The broker acknowledged (or refused, `refused`) journal record `sequence`: it leaves the journal.
        case acknowledge(sequence: UInt64, refused: MQTTError?)
        /// Make what the journal holds survive a power loss.
        case syncJournal
        case beginClaim(Claim, ConsumerDemand, generation: UInt64)
        case updateClaim(Claim, ConsumerDemand)
        case endClaim(Claim)
        /// Fire `timer` after `delay` from now (on its clock).
        case arm(BridgeTimer, generation: UInt64, delay: Duration)
        /// Fire `timer` when the receiver's clock reaches `deadline` (at once if it has).
        case armAt(BridgeTimer, generation: UInt64, deadline: Duration)
        case log(BridgeLogLevel, String)
        /// The stop is complete: disconnect and end.
        case finished
    }

    let settings: Settings
    private(set) var presence: PresenceMachine
    /// Connected, and the journal replayed on this connection: new records are published at once.
    private(set) var connected = false
    /// The hardware's power as last published (or to publish on the next connection).
    private(set) var power = HardwarePowerChange(power: .off, reason: .initial, at: .zero)
    /// The generation of each live claim (a claim's end from an older generation is stale).
    private(set) var claims: [Claim: UInt64] = [:]
    private var claimGeneration: UInt64 = 0
    /// Claims a receiver failure ended, to begin again when the retry timer fires.
    private var failedClaims: Set<Claim> = []
    private var claimFailuresInARow = 0
    private var timerGenerations: [BridgeTimer: UInt64] = [:]
    private var armed: Set<BridgeTimer> = []
    /// The standing demand: when its current claim began, or when the next is due.
    private var standingSince: Duration?
    /// Refusals already reported on this connection (one line per topic per connection).
    private var reportedRefusals: Set<String> = []
    private var probeAnswered = false
    private var stopping = false
    private var finished = false

    init(settings: Settings, presenceSweepDelay: Duration = .seconds(2)) {
        self.settings = settings
        presence = PresenceMachine(topics: settings.topics, sweepDelay: presenceSweepDelay)
    }

    /// The topic of the probe: an empty, unretained message the bridge sends itself on its demand
    /// level, to learn whether the broker delivers that level to it at all.
    var probeTopic: String { settings.topics.demandPrefix + "gnss-hat-bridge-probe" }

    /// Whether appending to the journal must reach the disk (`fdatasync`, once the bridge has handled
    /// the events waiting, at most 32 fixes later: one sync per batch): always while the broker is
    /// away or a message is still unacknowledged (then the journal is all there is), never while every
    /// earlier record has been acknowledged (a power cut then loses at most the messages of this one
    /// fix, in flight for a round trip).
    static func syncsAppend(published: Bool, pendingBefore: Int) -> Bool {
        !published || pendingBefore > 0
    }

    // MARK: - Events

    mutating func handle(_ event: Event) -> [Action] {
        guard !finished else { return [] }
        switch event {
        case let .started(now):
            guard let every = settings.every else { return [] }
            return [.log(.detail, "standing demand: a fix at least every \(seconds(every))")]
                + beginStanding(now: now)
        case let .fix(fix, now):
            return fixed(fix, now: now)
        case let .sky(sky):
            guard connected, !stopping else { return [] }
            let payload = GPSDPayload.sky(sky, device: settings.devicePath)
            let message = OutgoingMessage(topic: settings.topics.sky, payload: payload, qos: .atLeastOnce, retain: true)
            return [.publish(message, token: BridgeToken.sky)]
        case let .power(change):
            return powerChanged(change)
        case let .connection(report, libraryLog):
            return connection(report, libraryLog: libraryLog)
        case let .acknowledged(token, refusal):
            return acknowledged(token, refusal: refusal)
        case let .journalRecordRefused(topic, error):
            return refusal(of: topic, error)
        case let .subscribed(filter, refusal):
            return subscribed(filter, refusal: refusal)
        case let .message(message):
            return received(message)
        case let .claimEnded(claim, generation, failure):
            return claimEnded(claim, generation: generation, failure: failure)
        case let .timerFired(timer, generation, now):
            guard armed.contains(timer), timerGenerations[timer] == generation else { return [] }
            armed.remove(timer)
            return timerFired(timer, now: now)
        case let .stop(state):
            return stop(power: state)
        }
    }

    private mutating func fixed(_ fix: Fix, now: Duration) -> [Action] {
        guard !stopping else { return [] }
        let topics = settings.topics
        var messages = [OutgoingMessage(topic: topics.tpv, payload: GPSDPayload.tpv(fix, device: settings.devicePath),
                                        qos: .atLeastOnce, retain: true)]
        if let location = OwnTracksPayload.location(fix, trackerID: settings.trackerID) {
            messages.append(
                OutgoingMessage(topic: topics.ownTracks, payload: location, qos: .atLeastOnce, retain: true))
        }
        var actions: [Action] = [.journal(messages, publish: connected)]
        // The standing demand is met by the first fix with a position; the next claim is due one
        // interval after this one began (never before now).
        if claims[.standing] != nil, fix.hasPosition, let every = settings.every, let since = standingSince {
            actions += endClaim(.standing)
            let due = since + every
            let wait = seconds(max(due - now, .zero))
            actions.append(.log(.detail, "standing demand met; the next fix is due in \(wait)"))
            actions += arm(.standing, at: due)
        }
        return actions
    }

    private mutating func powerChanged(_ change: HardwarePowerChange) -> [Action] {
        guard !Self.same(change, power) else { return [] }
        power = change
        if change.power == .on || change.power == .powerSave { claimFailuresInARow = 0 }
        var actions: [Action] = [.log(.detail, "receiver \(change.power) (\(change.reason))")]
        if connected { actions.append(powerMessage()) }
        return actions
    }

    /// Whether two changes publish the same message (their times do not count).
    private static func same(_ a: HardwarePowerChange, _ b: HardwarePowerChange) -> Bool {
        a.power == b.power && a.reason == b.reason
    }

    private func powerMessage() -> Action {
        .publish(OutgoingMessage(topic: settings.topics.power, payload: PowerPayload.json(power),
                                 qos: .atLeastOnce, retain: true), token: BridgeToken.power)
    }

    private mutating func connection(_ report: ReconnectPolicy.Report, libraryLog: String?) -> [Action] {
        let broker = settings.broker
        let detail = libraryLog.map { " (\($0))" } ?? ""
        switch report {
        case .connected:
            guard !stopping else { return [] }
            connected = true
            reportedRefusals = []
            probeAnswered = false
            let topics = settings.topics
            var actions: [Action] = [
                .log(.notice, "connected to \(broker) as \(settings.clientID)"),
                .publish(OutgoingMessage(topic: topics.status, text: "online", qos: .atLeastOnce, retain: true),
                         token: BridgeToken.status),
                powerMessage(),
            ]
            for config in HomeAssistantDiscovery.configs(topics: topics, model: settings.model) {
                actions.append(.publish(config, token: BridgeToken.discovery))
            }
            actions.append(.replayJournal)
            return actions
        case let .attemptFailed(attempt, error, retryIn):
            return [.log(.notice, "cannot reach \(broker) (attempt \(attempt)): \(error)\(detail); "
                + "fixes are kept in the journal; next attempt in \(seconds(retryIn))")]
        case let .refused(attempt, error, retryIn):
            let hint = error.isAuthorisationFailure ? " (check the user in the URL and --mqtt-password-file)" : ""
            return [.log(.notice, "\(broker), attempt \(attempt): \(error)\(hint)\(detail); "
                + "next attempt in \(seconds(retryIn))")]
        case let .connectionLost(error, after, retryIn):
            connected = false
            armed.remove(.probe)
            var actions = presence.connectionLost().flatMap { presenceAction($0) }
            // What was published and not acknowledged is only in the journal now: make it last.
            actions.append(.syncJournal)
            let reason = error.map { ": \($0)" } ?? ""
            actions.append(.log(.notice, "lost the connection to \(broker) after \(seconds(after))\(reason)\(detail); "
                + "fixes are kept in the journal; reconnecting in \(seconds(retryIn))"))
            if stopping { actions += finish() }
            return actions
        }
    }

    private mutating func acknowledged(_ token: UInt64, refusal: MQTTError?) -> [Action] {
        if BridgeToken.isJournal(token) { return [.acknowledge(sequence: token, refused: refusal)] }
        var actions: [Action] = []
        switch token {
        case BridgeToken.probe:
            if let refusal {
                armed.remove(.probe)
                actions.append(.log(.notice, "\(settings.broker) refused this bridge's probe on "
                    + "\(settings.topics.demandFilter) (\(refusal)): if its ACL denies reading that level too, "
                    + "consumers on other machines cannot power this receiver"))
            }
        case BridgeToken.offline:
            if stopping { actions += finish() }
        default:
            if let refusal {
                let topic = switch token {
                case BridgeToken.status: settings.topics.status
                case BridgeToken.power: settings.topics.power
                case BridgeToken.sky: settings.topics.sky
                default: "homeassistant/..."
                }
                actions += self.refusal(of: topic, refusal)
            }
        }
        return actions
    }

    /// One line per refused topic per connection, not one per message.
    private mutating func refusal(of topic: String, _ error: MQTTError) -> [Action] {
        guard reportedRefusals.insert(topic).inserted else { return [] }
        return [.log(.notice, "\(settings.broker) refuses messages on \(topic): \(error) (its ACL?); "
            + "they are dropped")]
    }

    private mutating func subscribed(_ filter: String, refusal: MQTTError?) -> [Action] {
        guard filter == settings.topics.demandFilter, !stopping else { return [] }
        if let refusal {
            return [.log(.notice, "\(settings.broker) refused the subscription to \(filter): \(refusal); "
                + "consumers on other machines cannot power this receiver")]
        }
        var actions = presence.subscribed().flatMap { presenceAction($0) }
        // Mosquitto (2.0) grants a subscription its ACL denies and then delivers nothing: a message
        // of our own on that level tells whether anything comes through.
        probeAnswered = false
        actions.append(.publish(OutgoingMessage(topic: probeTopic, payload: [], qos: .atLeastOnce, retain: false),
                                token: BridgeToken.probe))
        actions += arm(.probe, delay: settings.probeTimeout)
        return actions
    }

    private mutating func received(_ message: IncomingMessage) -> [Action] {
        guard !stopping else { return [] }
        if message.topic == probeTopic {
            probeAnswered = true
            armed.remove(.probe)
            return []
        }
        return presence.received(topic: message.topic, payload: message.payload).flatMap { presenceAction($0) }
    }

    private mutating func presenceAction(_ action: PresenceMachine.Action) -> [Action] {
        switch action {
        case let .begin(consumer, demand):
            return [.log(.detail, "consumer \(consumer) present\(describe(demand))")]
                + beginClaim(.consumer(consumer), demand)
        case let .update(consumer, demand):
            guard claims[.consumer(consumer)] != nil else { return [] }
            return [.log(.detail, "consumer \(consumer) now asks\(describe(demand))"),
                    .updateClaim(.consumer(consumer), demand)]
        case let .end(consumer):
            return [.log(.detail, "consumer \(consumer) gone")] + endClaim(.consumer(consumer))
        case let .rejected(consumer, topic, error):
            let whose = consumer.isEmpty ? "" : " of \(consumer)"
            return [.log(.notice, "ignored the demand on \(topic)\(whose): \(error)")]
        case let .armSweep(generation, delay):
            // The presence machine keeps its own generations; the bridge's timer carries them.
            timerGenerations[.sweep] = generation
            armed.insert(.sweep)
            return [.arm(.sweep, generation: generation, delay: delay)]
        }
    }

    private func describe(_ demand: ConsumerDemand) -> String {
        demand.interval.map { " (a fix every \($0) s)" } ?? ""
    }

    private mutating func claimEnded(_ claim: Claim, generation: UInt64, failure: String?) -> [Action] {
        guard claims[claim] == generation else { return [] }
        claims[claim] = nil
        // Shut down: the bridge is stopping with the receiver; nothing to claim again.
        guard let failure, !stopping else { return [] }
        failedClaims.insert(claim)
        guard !armed.contains(.claimRetry) else { return [] }
        claimFailuresInARow += 1
        let delay = settings.claimRetry.delay(afterFailures: claimFailuresInARow)
        return [.log(.detail, "\(claim) ended: \(failure); claiming the receiver again in \(seconds(delay))")]
            + arm(.claimRetry, delay: delay)
    }

    private mutating func timerFired(_ timer: BridgeTimer, now: Duration) -> [Action] {
        switch timer {
        case .sweep:
            return presence.sweepDue(generation: timerGenerations[.sweep] ?? 0).flatMap { presenceAction($0) }
        case .probe:
            guard connected, !probeAnswered else { return [] }
            return [.log(.notice, "\(settings.broker) delivered nothing on \(settings.topics.demandFilter) within "
                + "\(seconds(settings.probeTimeout)), not even this bridge's own probe: its ACL probably denies "
                + "reading it, and consumers on other machines cannot power this receiver")]
        case .standing:
            guard !stopping else { return [] }
            return beginStanding(now: now)
        case .claimRetry:
            guard !stopping else { return [] }
            let retry = failedClaims
            failedClaims = []
            var actions: [Action] = []
            for claim in retry.sorted(by: { $0.description < $1.description }) {
                switch claim {
                case let .consumer(name):
                    if let demand = presence.consumers[name] { actions += beginClaim(claim, demand) }
                case .standing:
                    actions += beginStanding(now: now)
                }
            }
            return actions
        case .stopLimit:
            return stopping ? finish() : []
        }
    }

    private mutating func stop(power change: HardwarePowerChange) -> [Action] {
        guard !stopping else { return [] }
        stopping = true
        var actions = presence.endAll().flatMap { presenceAction($0) }
        if claims[.standing] != nil { actions += endClaim(.standing) }
        for timer in armed.sorted(by: { "\($0)" < "\($1)" }) { timerGenerations[timer, default: 0] += 1 }
        armed = []
        failedClaims = []
        guard connected else { return actions + finish() }
        if !Self.same(change, power) {
            power = change
            actions.append(powerMessage())
        }
        // A clean DISCONNECT sends no will: the bridge says `offline` itself, and waits (a little) for
        // the broker to have it.
        actions.append(.publish(OutgoingMessage(topic: settings.topics.status, text: "offline", qos: .atLeastOnce,
                                                retain: true), token: BridgeToken.offline))
        actions += arm(.stopLimit, delay: settings.stopLimit)
        return actions
    }

    private mutating func finish() -> [Action] {
        guard !finished else { return [] }
        finished = true
        connected = false
        return [.syncJournal, .finished]
    }

    // MARK: - Claims and timers

    private mutating func beginClaim(_ claim: Claim, _ demand: ConsumerDemand) -> [Action] {
        if claims[claim] != nil { return [.updateClaim(claim, demand)] }
        claimGeneration += 1
        claims[claim] = claimGeneration
        failedClaims.remove(claim)
        return [.beginClaim(claim, demand, generation: claimGeneration)]
    }

    private mutating func endClaim(_ claim: Claim) -> [Action] {
        failedClaims.remove(claim)
        guard claims.removeValue(forKey: claim) != nil else { return [] }
        return [.endClaim(claim)]
    }

    private mutating func beginStanding(now: Duration) -> [Action] {
        guard let every = settings.every else { return [] }
        standingSince = now
        return beginClaim(.standing, ConsumerDemand(interval: Int(every.components.seconds)))
    }

    private mutating func arm(_ timer: BridgeTimer, delay: Duration) -> [Action] {
        [.arm(timer, generation: nextGeneration(of: timer), delay: delay)]
    }

    private mutating func arm(_ timer: BridgeTimer, at deadline: Duration) -> [Action] {
        [.armAt(timer, generation: nextGeneration(of: timer), deadline: deadline)]
    }

    private mutating func nextGeneration(of timer: BridgeTimer) -> UInt64 {
        let generation = (timerGenerations[timer] ?? 0) + 1
        timerGenerations[timer] = generation
        armed.insert(timer)
        return generation
    }

    private func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        let tenths = (attoseconds + 50_000_000_000_000_000) / 100_000_000_000_000_000
        if tenths >= 10 { return "\(whole + 1) s" }
        return tenths == 0 ? "\(whole) s" : "\(whole).\(tenths) s"
    }
}
