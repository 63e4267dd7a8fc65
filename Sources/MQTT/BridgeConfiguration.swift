// What an ``MQTTBridge`` needs: the broker connection, the device's topics, where the journal is
// kept, the standing demand, and where its log lines go.

/// How an ``MQTTBridge`` reaches its broker and what it publishes.
public struct MQTTBridgeConfiguration: Sendable {
    /// The broker connection. The bridge sets its last will itself (retained `offline` on the
    /// status topic); the client id is `gnss-hat-DEVICE` unless changed here.
    public var connection: MQTTConfiguration
    public var topics: MQTTTopics
    /// The directory of the journal of unsent fixes (made, mode 0700, with any missing parents).
    public var journalDirectory: String
    public var journalLimits: Journal.Limits
    /// A standing demand of the bridge's own (`--mqtt-every`): a fix with a position at least this
    /// often, whoever else is present. `nil`: none (the bridge never powers the receiver by itself).
    public var every: Duration?
    /// How long after the demand subscription the retained demands have all come (after a reconnect,
    /// consumers not heard from by then are gone).
    public var presenceSweepDelay: Duration
    /// Home Assistant's device model; the board's chip model (or its name) when nil.
    public var model: String?
    /// Where the bridge reports what it does, one line each (never called under a lock).
    public var log: @Sendable (BridgeLogLevel, String) -> Void

    /// A bridge for `device` on `broker`: client id `gnss-hat-DEVICE`, topics `gnss-hat/DEVICE/...`
    /// and `owntracks/OWNTRACKSUSER/DEVICE`, the journal in `journalDirectory`.
    public init(
        broker: BrokerAddress, password: String? = nil, caFile: String? = nil, device: DeviceName,
        ownTracksUser: String = "gnss-hat", journalDirectory: String, every: Duration? = nil,
        journalLimits: Journal.Limits = Journal.Limits(), presenceSweepDelay: Duration = .seconds(2),
        model: String? = nil, log: @escaping @Sendable (BridgeLogLevel, String) -> Void = { _, _ in }
    ) {
        topics = MQTTTopics(device: device, ownTracksUser: ownTracksUser)
        connection = MQTTConfiguration(broker: broker, password: password, caFile: caFile,
                                       clientID: "gnss-hat-\(device.rawValue)")
        self.journalDirectory = journalDirectory
        self.every = every
        self.journalLimits = journalLimits
        self.presenceSweepDelay = presenceSweepDelay
        self.model = model
        self.log = log
    }

    /// The last will the bridge connects with: retained `offline` on the status topic.
    var will: OutgoingMessage {
        OutgoingMessage(topic: topics.status, text: "offline", qos: .atLeastOnce, retain: true)
    }
}

/// What a running bridge has done, as of its last event.
public struct MQTTBridgeStatistics: Sendable, Equatable {
    /// Connected to the broker (and the journal replayed on this connection).
    public var connected = false
    /// The consumers present now, with what each asked for.
    public var consumers: [String: ConsumerDemand] = [:]
    /// Subscriptions of the receiver the bridge holds now: one per consumer, plus the standing demand's.
    public var claims = 0
    /// Whether the standing demand (`--mqtt-every`) holds the receiver now.
    public var standingClaim = false
    /// Fixes journaled since the start, and journal records the broker acknowledged.
    public var fixes = 0
    public var acknowledged = 0
    /// Records waiting in the journal for the broker's acknowledgement.
    public var journalPending = 0
    /// Records the journal dropped (oldest first) to stay within its limits, since the start.
    public var journalDropped = 0
    /// Records the broker refused (its ACL), dropped.
    public var refused = 0
    /// Messages of fixes the journal could not take (its file failed): published at once when
    /// connected, lost when not.
    public var unjournaled = 0
    /// The stop finished.
    public var stopped = false

    public init() {}
}
