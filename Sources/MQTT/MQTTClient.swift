// An MQTT client over libmosquitto. Its network loop runs on a thread of ours (not
// `mosquitto_loop_start`'s) so that reconnecting follows ``ReconnectPolicy`` — libmosquitto's own
// loop retries with a quadratic delay, forever, and cannot be told a refusal is different — and
// so a stop can end a back-off wait at once. libmosquitto runs single-threaded, under one lock: a
// publish writes its packet on the caller's thread (no wake of the network thread per message),
// and the network thread waits in `poll` for the broker's packets (PUBACKs, messages), a write the
// socket could not take whole, and its timers (LinuxSystem's `ReadinessWaiter`). Callbacks copy
// what they were given, update the state and queue an event, delivered in order after the lock is
// released, so no user code runs under a lock. The client's values are in MQTTMessage.swift, its
// core (libmosquitto's handle, the state, the network thread, the callbacks) in ClientCore.swift, and
// the ordered delivery of its events in EventOutbox.swift.
internal import CMosquitto

/// One broker connection, its network thread and its reconnects.
///
/// Create it, ``subscribe(_:qos:)`` to what it should follow (re-sent after every reconnect),
/// ``start()``, read ``events``, ``publish(_:token:)`` from any thread, and ``stop()``.
public final class MQTTClient: Sendable {
    /// Every event, until ``stop()`` has finished (empty when the client was made with a handler).
    public let events: AsyncStream<MQTTEvent>
    private let core: ClientCore

    /// Makes the client and applies the configuration (`mosquitto_new`, `mosquitto_int_option`,
    /// `mosquitto_username_pw_set`, `mosquitto_tls_set`, `mosquitto_will_set`); connects nothing yet.
    ///
    /// With `onEvent`, events go to it instead of ``events``: it is called in order, one event at a
    /// time, on the thread whose call into libmosquitto produced them — the network thread for what
    /// the broker sent, a publishing thread for what its own write caused — and must not block (it
    /// may publish); it saves the hop through ``events`` and a task to read it.
    public init(configuration: MQTTConfiguration, onEvent: (@Sendable (MQTTEvent) -> Void)? = nil)
        throws(MQTTError)
    {
        var continuation: AsyncStream<MQTTEvent>.Continuation!
        events = AsyncStream { continuation = $0 }
        core = try ClientCore(configuration: configuration, continuation: continuation, handler: onEvent)
    }

    deinit {
        core.stop()
        mosquitto_destroy(core.mosq)
    }

    /// Starts the network thread, which connects at once and reconnects as the policy says.
    public func start() throws(MQTTError) {
        try core.start()
    }

    /// Publishes a message (`mosquitto_publish_v5`), from any thread. A QoS 1 message's
    /// ``MQTTEvent/acknowledged(token:messageID:refusal:)`` carries `token`, so the caller needs no table
    /// of message ids. The packet goes to the socket at once, on the calling thread (the socket does not
    /// block: what it cannot take yet, the network thread writes when it can). While the broker is away,
    /// and while a connect is in progress, libmosquitto refuses any message (`MOSQ_ERR_NO_CONN`); one it
    /// took before the connection went it keeps and sends again after the reconnect.
    @discardableResult
    public func publish(_ message: OutgoingMessage, token: UInt64 = 0) throws(MQTTError) -> MessageID {
        try core.publish(message, token: token)
    }

    /// Subscribes to `filter` now if connected and after every (re)connect (`mosquitto_subscribe_v5`).
    public func subscribe(_ filter: String, qos: QoS = .atLeastOnce) throws(MQTTError) {
        try core.subscribe(filter, qos: qos)
    }

    /// Whether the broker has accepted the connection and it has not been lost since.
    public var isConnected: Bool { core.isConnected }

    /// QoS 1 messages published and not acknowledged yet (libmosquitto holds them).
    public var unacknowledgedCount: Int { core.unacknowledgedCount }

    /// The tokens of those messages: after a reconnect the caller publishes again only what is neither
    /// acknowledged nor among these (libmosquitto resends these itself).
    public var unacknowledgedTokens: Set<UInt64> { core.unacknowledgedTokens }

    /// Disconnects cleanly (`mosquitto_disconnect`: the broker does not publish the will), ends the
    /// network thread and waits for it, and finishes ``events``. Waits for a connect attempt in
    /// progress to return (a refused one returns at once; a host that never answers takes the
    /// kernel's connect timeout).
    public func stop() {
        core.stop()
    }
}
