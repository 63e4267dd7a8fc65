// The values an MQTT client trades with its user: the messages in and out, their QoS and ids, and the
// events a client reports (connections, acknowledgements, subscriptions, messages, libmosquitto's log).

/// A QoS level this package publishes with.
public enum QoS: Int32, Sendable, Hashable {
    /// At most once: nothing is kept; while the broker is away the message is refused (`MOSQ_ERR_NO_CONN`).
    case atMostOnce = 0
    /// At least once: acknowledged by the broker's PUBACK. libmosquitto keeps a message sent and not yet
    /// acknowledged across a reconnect and sends it again; while disconnected it refuses new ones
    /// (`MOSQ_ERR_NO_CONN`), so the caller keeps those (the ``Journal``) for after the reconnect.
    case atLeastOnce = 1
}

/// A message to publish.
public struct OutgoingMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: QoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: QoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: QoS = .atLeastOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }
}

/// A message the broker delivered for a subscription.
public struct IncomingMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    /// Whether the broker sent it from its retained store (on subscribing) rather than as it was published.
    public var retained: Bool
}

/// libmosquitto's message id of a publish or subscribe (`mid`).
public struct MessageID: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
}

/// What a client tells its user, in the order it happened on the network thread.
public enum MQTTEvent: Sendable {
    /// Connected, an attempt failed or was refused, a connection was lost (each with the next retry).
    case connection(ReconnectPolicy.Report)
    /// The broker acknowledged the QoS 1 message published with `token` (PUBACK); `refusal` is set
    /// when the PUBACK carried a failure reason (MQTT 5.0: an ACL denied the topic).
    case acknowledged(token: UInt64, messageID: MessageID, refusal: MQTTError?)
    /// The broker answered a subscription (SUBACK; after every reconnect too); `refusal` when denied.
    case subscribed(filter: String, refusal: MQTTError?)
    case message(IncomingMessage)
    /// An error or warning libmosquitto logged (TLS verification failures say why here).
    case libraryLog(String)
}
