// An MQTT client over libmosquitto. Its network loop runs on a thread of ours (not
// `mosquitto_loop_start`'s) so that reconnecting follows ``ReconnectPolicy`` — libmosquitto's own
// loop retries with a quadratic delay, forever, and cannot be told a refusal is different — and
// so a stop can end a back-off wait at once. libmosquitto calls back on that thread, inside
// `mosquitto_loop`; each callback copies what it was given, updates the state under the lock,
// and yields an event to an `AsyncStream` (which never blocks), so no user code runs on the
// network thread and none under a lock.
internal import CMosquitto
internal import Glibc
internal import LinuxSystem

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
    /// With `onEvent`, events go to it instead of ``events``: it is called on the network thread, in
    /// order (an acknowledgement that came before `publish` returned, on the publishing thread), and
    /// must return at once (hand the event on, say to a stream of one's own); it saves the hop
    /// through ``events`` and a task to read it.
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
    /// of message ids. While the broker is away libmosquitto refuses any message (`MOSQ_ERR_NO_CONN`);
    /// one it took before the connection went it keeps and sends again after the reconnect.
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

// MARK: - The shared core: libmosquitto's handle, the state, the network thread

/// Everything the network thread and libmosquitto's callbacks share. `mosq` is used from several
/// threads: `mosquitto_threaded_set(true)` makes libmosquitto guard its own state with its mutexes.
final class ClientCore: @unchecked Sendable {
    struct State {
        var policy: ReconnectPolicy
        /// Actions the callbacks produced during `mosquitto_loop`, performed when it returns.
        var pendingActions: [ReconnectPolicy.Action] = []
        var timer: (generation: UInt64, deadline: Duration)?
        var started = false
        var stopRequested = false
        var finished = false
        var thread: pthread_t?
        var connected = false
        var subscriptions: [(filter: String, qos: QoS)] = []
        /// QoS 1 publishes waiting for their PUBACK, by mid; QoS 0 mids whose callback has not come.
        var awaitingAck: [Int32: UInt64] = [:]
        var awaitingSend: Set<Int32> = []
        /// Callbacks that came before `mosquitto_publish` / `mosquitto_subscribe` returned the mid.
        var earlyAcks: [Int32: Int32] = [:]
        var subscriptionsByMid: [Int32: String] = [:]
        var earlySubacks: [Int32: [Int32]] = [:]
    }

    let mosq: OpaquePointer
    let configuration: MQTTConfiguration
    let state: Lock<State>
    private let continuation: AsyncStream<MQTTEvent>.Continuation
    private let handler: (@Sendable (MQTTEvent) -> Void)?
    private let parker = ThreadParker()
    private let reference = ContinuousClock.now

    init(
        configuration: MQTTConfiguration, continuation: AsyncStream<MQTTEvent>.Continuation,
        handler: (@Sendable (MQTTEvent) -> Void)?
    ) throws(MQTTError) {
        _ = libraryInitialisation
        self.configuration = configuration
        self.continuation = continuation
        self.handler = handler
        state = Lock(State(policy: ReconnectPolicy(configuration: configuration.reconnect)))
        guard let handle = mosquitto_new(configuration.clientID, true, nil) else {
            throw MQTTError(call: "mosquitto_new", mosquittoCode: CInt(MOSQ_ERR_ERRNO.rawValue))
        }
        mosq = handle
        do {
            try configure()
        } catch {
            mosquitto_destroy(handle)
            throw error
        }
    }

    private func configure() throws(MQTTError) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        mosquitto_user_data_set(mosq, userdata)
        try check("mosquitto_threaded_set", mosquitto_threaded_set(mosq, true))
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check("mosquitto_int_option(MOSQ_OPT_PROTOCOL_VERSION)",
                  mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version))
        // A fix is small and wanted now: no Nagle delay.
        try check("mosquitto_int_option(MOSQ_OPT_TCP_NODELAY)", mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1))
        if let username = configuration.broker.username {
            try check("mosquitto_username_pw_set", mosquitto_username_pw_set(mosq, username, configuration.password))
        }
        if configuration.broker.usesTLS {
            if let caFile = configuration.caFile {
                try check("mosquitto_tls_set", mosquitto_tls_set(mosq, caFile, nil, nil, nil, nil))
            } else {
                try check("mosquitto_int_option(MOSQ_OPT_TLS_USE_OS_CERTS)",
                          mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1))
            }
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(mosq, will.topic, CInt(bytes.count), bytes.baseAddress, will.qos.rawValue, will.retain)
            }
            try check("mosquitto_will_set", rc)
        }
        mosquitto_connect_v5_callback_set(mosq, onConnect)
        mosquitto_disconnect_v5_callback_set(mosq, onDisconnect)
        mosquitto_publish_v5_callback_set(mosq, onPublish)
        mosquitto_subscribe_v5_callback_set(mosq, onSubscribe)
        mosquitto_message_v5_callback_set(mosq, onMessage)
        mosquitto_log_callback_set(mosq, onLog)
    }

    var now: Duration { ContinuousClock.now - reference }

    var isConnected: Bool { state.withLock { $0.connected } }
    var unacknowledgedCount: Int { state.withLock { $0.awaitingAck.count } }
    var unacknowledgedTokens: Set<UInt64> { state.withLock { Set($0.awaitingAck.values) } }

    // MARK: Calls from the user

    func start() throws(MQTTError) {
        let alreadyStarted = state.withLock { state -> Bool in
            defer { state.started = true }
            return state.started || state.stopRequested
        }
        guard !alreadyStarted else { return }
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let core = Unmanaged<ClientCore>.fromOpaque(argument!).takeRetainedValue()
            core.runNetworkLoop()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<ClientCore>.fromOpaque(box).release()
            errno = rc
            throw MQTTError(call: "pthread_create", mosquittoCode: CInt(MOSQ_ERR_ERRNO.rawValue))
        }
        state.withLock { $0.thread = thread }
    }

    func publish(_ message: OutgoingMessage, token: UInt64) throws(MQTTError) -> MessageID {
        var mid: CInt = 0
        let rc = message.payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(mosq, &mid, message.topic, CInt(bytes.count), bytes.baseAddress,
                                 message.qos.rawValue, message.retain, nil)
        }
        try check("mosquitto_publish_v5", rc)
        // The PUBACK may have been handled on the network thread before the mid came back here.
        let early: Int32? = state.withLock { state in
            if let reason = state.earlyAcks.removeValue(forKey: mid) { return reason }
            if message.qos == .atLeastOnce { state.awaitingAck[mid] = token } else { state.awaitingSend.insert(mid) }
            return nil
        }
        if let early, message.qos == .atLeastOnce {
            deliver(acknowledgement(token: token, mid: mid, reason: early))
        }
        return MessageID(rawValue: mid)
    }

    func subscribe(_ filter: String, qos: QoS) throws(MQTTError) {
        guard mosquitto_sub_topic_check(filter) == CInt(MOSQ_ERR_SUCCESS.rawValue) else {
            throw MQTTError(call: "mosquitto_sub_topic_check", mosquittoCode: CInt(MOSQ_ERR_INVAL.rawValue))
        }
        let connected = state.withLock { state -> Bool in
            state.subscriptions.append((filter, qos))
            return state.connected
        }
        // Not connected: the next CONNACK subscribes it with the rest.
        if connected { try sendSubscription(filter, qos: qos) }
    }

    func stop() {
        let (actions, thread, started) = state.withLock { state in
            state.stopRequested = true
            return (state.policy.stop(), state.thread, state.started)
        }
        if actions.contains(.disconnect) { mosquitto_disconnect(mosq) }
        parker.wake()
        if let thread {
            state.withLock { $0.thread = nil }
            pthread_join(thread, nil)
        } else if !started {
            finish()
        }
    }

    // MARK: The network thread

    private func runNetworkLoop() {
        var actions = state.withLock { $0.policy.start(now: now) }
        while true {
            perform(actions)
            let (stopping, timer) = state.withLock { ($0.stopRequested, $0.timer) }
            let socketOpen = mosquitto_socket(mosq) >= 0
            if stopping {
                if socketOpen { closeOnStop() }
                break
            }
            if socketOpen {
                let rc = mosquitto_loop(mosq, 1000, 1)
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) && rc != CInt(MOSQ_ERR_NO_CONN.rawValue)
                    && mosquitto_socket(mosq) >= 0 {
                    // An error that left the socket open (a keep-alive the broker missed): close it,
                    // which reports the loss through the disconnect callback.
                    mosquitto_disconnect(mosq)
                }
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) {
                    let error = MQTTError(call: "mosquitto_loop", mosquittoCode: rc)
                    state.withLock { $0.pendingActions += $0.policy.connectionLost(error, now: now) }
                }
            } else {
                parker.park(timeout: timer.map { $0.deadline - now })
            }
            actions = state.withLock { state in
                var next = state.pendingActions
                state.pendingActions = []
                if let timer = state.timer, timer.deadline <= now {
                    state.timer = nil
                    next += state.policy.timerFired(generation: timer.generation, now: now)
                }
                return next
            }
        }
        finish()
    }

    private func perform(_ actions: [ReconnectPolicy.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            switch action {
            case let .connect(attempt):
                let broker = configuration.broker
                let keepAlive = CInt(max(configuration.keepAlive.components.seconds, 5))
                let rc = mosquitto_connect(mosq, broker.host, CInt(broker.port), keepAlive)
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) {
                    let error = MQTTError(call: "mosquitto_connect (attempt \(attempt))", mosquittoCode: rc)
                    queue += state.withLock { $0.policy.attemptFailed(error, now: now) }
                }
            case let .armTimer(generation, deadline):
                state.withLock { $0.timer = (generation, deadline) }
            case .cancelTimer:
                state.withLock { $0.timer = nil }
            case let .report(report):
                deliver(.connection(report))
            case .disconnect:
                mosquitto_disconnect(mosq)
            }
        }
    }

    /// Sends the DISCONNECT a stop asked for and lets the loop close the socket (a second at most).
    private func closeOnStop() {
        mosquitto_disconnect(mosq)
        for _ in 0..<10 where mosquitto_socket(mosq) >= 0 {
            if mosquitto_loop(mosq, 100, 1) != CInt(MOSQ_ERR_SUCCESS.rawValue) { break }
        }
    }

    private func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { continuation.finish() }
    }

    /// Hands an event to the handler, or to the stream (neither blocks).
    private func deliver(_ event: MQTTEvent) {
        if let handler { handler(event) } else { continuation.yield(event) }
    }

    // MARK: Callbacks (on the network thread, inside mosquitto_loop)

    // The reports of a callback are yielded from the callback itself, not after `mosquitto_loop`
    // returns: one call can handle several packets (a CONNACK, then the SUBACK and the retained
    // messages that follow it), and the user must see the connection before what came over it.

    func connected(code: CInt) {
        if code == 0 {
            let (reports, subscriptions) = state.withLock { state in
                state.connected = true
                return (queueingAllButReports(state.policy.connected(now: now), in: &state), state.subscriptions)
            }
            for report in reports { deliver(.connection(report)) }
            for subscription in subscriptions {
                do {
                    try sendSubscription(subscription.filter, qos: subscription.qos)
                } catch {
                    deliver(.subscribed(filter: subscription.filter, refusal: error))
                }
            }
        } else {
            let error = MQTTError.connectionRefused(code, version: configuration.protocolVersion)
            let reports = state.withLock { queueingAllButReports($0.policy.refused(error, now: now), in: &$0) }
            for report in reports { deliver(.connection(report)) }
        }
    }

    func disconnected(code: CInt) {
        let reports = state.withLock { state -> [ReconnectPolicy.Report] in
            state.connected = false
            guard !state.stopRequested else { return [] }
            let error = code == 0 ? nil : MQTTError(call: "mosquitto_loop", mosquittoCode: code)
            return queueingAllButReports(state.policy.connectionLost(error, now: now), in: &state)
        }
        for report in reports { deliver(.connection(report)) }
    }

    /// Queues the actions the network thread performs after `mosquitto_loop` returns (timers,
    /// connects) and returns the reports, to be yielded at once (after unlocking).
    private func queueingAllButReports(
        _ actions: [ReconnectPolicy.Action], in state: inout State
    ) -> [ReconnectPolicy.Report] {
        var reports: [ReconnectPolicy.Report] = []
        for action in actions {
            if case let .report(report) = action { reports.append(report) } else { state.pendingActions.append(action) }
        }
        return reports
    }

    func published(mid: CInt, reason: CInt) {
        let token: UInt64? = state.withLock { state in
            if let token = state.awaitingAck.removeValue(forKey: mid) { return token }
            if state.awaitingSend.remove(mid) == nil { state.earlyAcks[mid] = reason }
            return nil
        }
        if let token { deliver(acknowledgement(token: token, mid: mid, reason: reason)) }
    }

    func subscribed(mid: CInt, granted: [CInt]) {
        let filter: String? = state.withLock { state in
            if let filter = state.subscriptionsByMid.removeValue(forKey: mid) { return filter }
            state.earlySubacks[mid] = granted
            return nil
        }
        if let filter { deliver(subscription(filter, granted: granted)) }
    }

    func received(_ message: IncomingMessage) {
        deliver(.message(message))
    }

    func logged(level: CInt, text: String) {
        guard level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
        deliver(.libraryLog(text))
    }

    // MARK: Helpers

    private func sendSubscription(_ filter: String, qos: QoS) throws(MQTTError) {
        var mid: CInt = 0
        try check("mosquitto_subscribe_v5", mosquitto_subscribe_v5(mosq, &mid, filter, qos.rawValue, 0, nil))
        let early: [CInt]? = state.withLock { state in
            if let granted = state.earlySubacks.removeValue(forKey: mid) { return granted }
            state.subscriptionsByMid[mid] = filter
            return nil
        }
        if let early { deliver(subscription(filter, granted: early)) }
    }

    private func acknowledgement(token: UInt64, mid: CInt, reason: CInt) -> MQTTEvent {
        let refusal = reason >= 0x80 ? MQTTError.refused("PUBACK", reasonCode: reason) : nil
        return .acknowledged(token: token, messageID: MessageID(rawValue: mid), refusal: refusal)
    }

    private func subscription(_ filter: String, granted: [CInt]) -> MQTTEvent {
        let refusal = granted.first { $0 >= 0x80 }.map { MQTTError.refused("SUBACK", reasonCode: $0) }
        return .subscribed(filter: filter, refusal: refusal)
    }

    private func check(_ call: String, _ rc: CInt) throws(MQTTError) {
        guard rc == CInt(MOSQ_ERR_SUCCESS.rawValue) else { throw MQTTError(call: call, mosquittoCode: rc) }
    }
}

/// `mosquitto_lib_init`, once per process (a global is initialised once, thread-safely, on first use).
private let libraryInitialisation: CInt = mosquitto_lib_init()

/// The core behind libmosquitto's user data pointer (set once, before any callback can run).
private func core(_ userdata: UnsafeMutableRawPointer?) -> ClientCore? {
    userdata.map { Unmanaged<ClientCore>.fromOpaque($0).takeUnretainedValue() }
}

private let onConnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt, CInt, OpaquePointer?) -> Void = {
    _, userdata, code, _, _ in core(userdata)?.connected(code: code)
}

private let onDisconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt, OpaquePointer?) -> Void = {
    _, userdata, code, _ in core(userdata)?.disconnected(code: code)
}

private let onPublish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt, CInt, OpaquePointer?) -> Void = {
    _, userdata, mid, reason, _ in core(userdata)?.published(mid: mid, reason: reason)
}

private let onSubscribe: @convention(c) (
    OpaquePointer?, UnsafeMutableRawPointer?, CInt, CInt, UnsafePointer<CInt>?, OpaquePointer?
) -> Void = { _, userdata, mid, count, granted, _ in
    let codes = granted.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
    core(userdata)?.subscribed(mid: mid, granted: codes)
}

private let onMessage: @convention(c) (
    OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?, OpaquePointer?
) -> Void = { _, userdata, message, _ in
    guard let message = message?.pointee, let topic = message.topic else { return }
    let payload = message.payload.map {
        Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen)))
    } ?? []
    core(userdata)?.received(IncomingMessage(topic: String(cString: topic), payload: payload, retained: message.retain))
}

private let onLog: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt, UnsafePointer<CChar>?) -> Void = {
    _, userdata, level, text in
    guard let text else { return }
    core(userdata)?.logged(level: level, text: String(cString: text))
}
