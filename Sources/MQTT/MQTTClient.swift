// An MQTT client over libmosquitto. Its network loop runs on a thread of ours (not
// `mosquitto_loop_start`'s) so that reconnecting follows ``ReconnectPolicy`` — libmosquitto's own
// loop retries with a quadratic delay, forever, and cannot be told a refusal is different — and
// so a stop can end a back-off wait at once. libmosquitto runs single-threaded, under one lock: a
// publish writes its packet on the caller's thread (no wake of the network thread per message),
// and the network thread waits in `poll` for the broker's packets (PUBACKs, messages), a write the
// socket could not take whole, and its timers (LinuxSystem's `ReadinessWaiter`). Callbacks copy
// what they were given, update the state and queue an event, delivered in order after the lock is
// released, so no user code runs under a lock.
internal import CMosquitto
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

// MARK: - The shared core: libmosquitto's handle, the state, the network thread

/// Everything the network thread, the publishing threads and libmosquitto's callbacks share.
///
/// libmosquitto runs single-threaded (`mosq_ts_none`), one thread at a time: every call into it is
/// made under the `library` lock (``withLibrary(_:)``), but the network thread's connect, which may
/// take as long as the kernel's connect timeout. Before it, the network thread raises `connecting`
/// under that lock, and a publish or subscribe that finds it raised is refused as not connected
/// (as it would be anyway) rather than waiting. So a publish writes its packet to the socket at once,
/// on the caller's thread, and the network thread wakes only for what the broker sends, for a write
/// the socket could not take whole, and for its timers. The callbacks run inside those calls, on the
/// thread that made them, with the lock held: they update the state and queue their events in the
/// ``EventOutbox``, which delivers them in order after the lock is released.
final class ClientCore: @unchecked Sendable {
    struct State {
        var policy: ReconnectPolicy
        /// Actions the callbacks produced during a read, performed when it returns.
        var pendingActions: [ReconnectPolicy.Action] = []
        var timer: (generation: UInt64, deadline: Duration)?
        var started = false
        var stopRequested = false
        var finished = false
        var thread: LoopThread?
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

    /// What `packet__write` returns when the socket refused a write (`MOSQ_ERR_CONN_LOST`, `MOSQ_ERR_ERRNO`,
    /// `MOSQ_ERR_TLS`): the packet was queued, the connection is going.
    private static let writeFailures: Set<CInt> = [
        CInt(MOSQ_ERR_CONN_LOST.rawValue), CInt(MOSQ_ERR_ERRNO.rawValue), CInt(MOSQ_ERR_TLS.rawValue),
    ]

    /// What the `library` lock guards besides the calls themselves.
    struct Library {
        /// The network thread is in `mosquitto_connect`, outside the lock: nobody else calls in.
        var connecting = false
    }

    let mosq: OpaquePointer
    let configuration: MQTTConfiguration
    let state: Lock<State>
    private let library = Lock(Library())
    private let outbox: EventOutbox
    private let waiter: ReadinessWaiter
    private let reference = ContinuousClock.now

    init(
        configuration: MQTTConfiguration, continuation: AsyncStream<MQTTEvent>.Continuation,
        handler: (@Sendable (MQTTEvent) -> Void)?
    ) throws(MQTTError) {
        _ = libraryInitialisation
        self.configuration = configuration
        outbox = EventOutbox(deliver: handler ?? { continuation.yield($0) }, finish: { continuation.finish() })
        do throws(SystemError) {
            waiter = try ReadinessWaiter()
        } catch {
            throw MQTTError(error.failedCall ?? FailedCall(call: "eventfd", device: "waker", errno: nil))
        }
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

    /// Runs `body` with libmosquitto to this thread alone, then delivers the events its callbacks
    /// queued meanwhile. Throws `MOSQ_ERR_NO_CONN` without calling `body` while the network thread
    /// connects.
    private func withLibrary<T>(_ call: String, _ body: () throws(MQTTError) -> T) throws(MQTTError) -> T {
        let result = library.withLock { library -> Result<T, MQTTError> in
            guard !library.connecting else {
                return .failure(MQTTError(call: call, mosquittoCode: CInt(MOSQ_ERR_NO_CONN.rawValue)))
            }
            do throws(MQTTError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        outbox.deliverQueued()
        return try result.get()
    }

    /// The network thread's calls: never refused (the connect is its own).
    private func withLibrary<T>(_ body: () -> T) -> T {
        let result = library.withLock { _ in body() }
        outbox.deliverQueued()
        return result
    }

    // MARK: Calls from the user

    func start() throws(MQTTError) {
        let alreadyStarted = state.withLock { state -> Bool in
            defer { state.started = true }
            return state.started || state.stopRequested
        }
        guard !alreadyStarted else { return }
        // Named (a new thread takes its creator's name): `top -H` and the benchmarks tell it apart.
        let thread: LoopThread
        do throws(SystemError) {
            thread = try LoopThread(name: "gnss-mqtt") { self.runNetworkLoop() }
        } catch {
            throw MQTTError(error.failedCall ?? FailedCall(call: "pthread_create", device: "gnss-mqtt", errno: nil))
        }
        state.withLock { $0.thread = thread }
    }

    func publish(_ message: OutgoingMessage, token: UInt64) throws(MQTTError) -> MessageID {
        var mid: CInt = 0
        let wantsWrite = try withLibrary("mosquitto_publish_v5") { () throws(MQTTError) -> Bool in
            let rc = message.payload.withUnsafeBytes { bytes in
                mosquitto_publish_v5(mosq, &mid, message.topic, CInt(bytes.count), bytes.baseAddress,
                                     message.qos.rawValue, message.retain, nil)
            }
            // A QoS 1 message whose write failed (the connection just went) is queued in libmosquitto
            // all the same, which sends it again after the reconnect: taken, as in a threaded client,
            // and the network thread finds the loss.
            if message.qos == .atLeastOnce && Self.writeFailures.contains(rc) { return true }
            try check("mosquitto_publish_v5", rc)
            return mosquitto_want_write(mosq)
        }
        // The socket took only part of it (or failed): the network thread writes the rest, or reads
        // the loss, at once.
        if wantsWrite { waiter.wake() }
        // A QoS 0 message's callback comes from inside the publish, before the mid came back here.
        let early: Int32? = state.withLock { state in
            if let reason = state.earlyAcks.removeValue(forKey: mid) { return reason }
            if message.qos == .atLeastOnce { state.awaitingAck[mid] = token } else { state.awaitingSend.insert(mid) }
            return nil
        }
        if let early, message.qos == .atLeastOnce {
            outbox.deliver(acknowledgement(token: token, mid: mid, reason: early))
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
        guard connected else { return }
        try withLibrary("mosquitto_subscribe_v5") { () throws(MQTTError) in
            try sendSubscription(filter, qos: qos)
        }
        waiter.wake()
    }

    func stop() {
        let (thread, started) = state.withLock { state in
            state.stopRequested = true
            _ = state.policy.stop()
            return (state.thread, state.started)
        }
        // The network thread sends the DISCONNECT (a connect in progress returns first).
        waiter.wake()
        if let thread {
            state.withLock { $0.thread = nil }
            thread.join()
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
            let (socket, wantsWrite) = withLibrary { () -> (CInt, Bool) in
                (mosquitto_socket(mosq), mosquitto_want_write(mosq))
            }
            if stopping {
                if socket >= 0 { closeOnStop() }
                break
            }
            if socket >= 0 {
                // A second at most: libmosquitto's keep-alive is checked after every wait.
                let readiness = waiter.wait(descriptor: socket, forWriting: wantsWrite, timeout: .seconds(1))
                let rc = withLibrary { () -> CInt in serviceSocket(readiness) }
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) && rc != CInt(MOSQ_ERR_NO_CONN.rawValue) {
                    // An error that left the socket open (a keep-alive the broker missed): close it,
                    // which reports the loss through the disconnect callback.
                    withLibrary {
                        if mosquitto_socket(mosq) >= 0 { mosquitto_disconnect(mosq) }
                    }
                }
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) {
                    let error = MQTTError(call: "mosquitto_loop", mosquittoCode: rc)
                    state.withLock { $0.pendingActions += $0.policy.connectionLost(error, now: now) }
                }
            } else {
                _ = waiter.wait(descriptor: nil, forWriting: false, timeout: timer.map { $0.deadline - now })
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

    /// What `mosquitto_loop` does after its `select`, on what the wait found: reads (which also
    /// carries a TLS handshake on), writes what is queued, and checks the keep-alive. Returns the
    /// first failure.
    private func serviceSocket(_ readiness: DescriptorReadiness) -> CInt {
        let success = CInt(MOSQ_ERR_SUCCESS.rawValue)
        // A writable socket during a TLS handshake that wants to write is the handshake's turn: the
        // read call carries it on (`mosquitto_loop_read` does while the handshake lasts).
        if readiness.readable || readiness.failed || readiness.writable {
            let rc = mosquitto_loop_read(mosq, 1)
            if rc != success || mosquitto_socket(mosq) < 0 { return rc }
        }
        if mosquitto_want_write(mosq) {
            let rc = mosquitto_loop_write(mosq, 1)
            if rc != success || mosquitto_socket(mosq) < 0 { return rc }
        }
        return mosquitto_loop_misc(mosq)
    }

    private func perform(_ actions: [ReconnectPolicy.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            switch action {
            case let .connect(attempt):
                let broker = configuration.broker
                let keepAlive = CInt(max(configuration.keepAlive.components.seconds, 5))
                // Outside the lock (a host that does not answer holds it for the kernel's connect
                // timeout); `connecting` keeps every other thread out of libmosquitto meanwhile.
                library.withLock { $0.connecting = true }
                let rc = mosquitto_connect(mosq, broker.host, CInt(broker.port), keepAlive)
                library.withLock { $0.connecting = false }
                outbox.deliverQueued()
                if rc != CInt(MOSQ_ERR_SUCCESS.rawValue) {
                    let error = MQTTError(call: "mosquitto_connect (attempt \(attempt))", mosquittoCode: rc)
                    queue += state.withLock { $0.policy.attemptFailed(error, now: now) }
                }
            case let .armTimer(generation, deadline):
                state.withLock { $0.timer = (generation, deadline) }
            case .cancelTimer:
                state.withLock { $0.timer = nil }
            case let .report(report):
                outbox.deliver(.connection(report))
            case .disconnect:
                withLibrary { _ = mosquitto_disconnect(mosq) }
            }
        }
    }

    /// Sends the DISCONNECT a stop asked for and lets the loop close the socket (a second at most).
    private func closeOnStop() {
        withLibrary { _ = mosquitto_disconnect(mosq) }
        for _ in 0..<10 {
            let (socket, wantsWrite) = withLibrary { () -> (CInt, Bool) in
                (mosquitto_socket(mosq), mosquitto_want_write(mosq))
            }
            guard socket >= 0 else { break }
            let readiness = waiter.wait(descriptor: socket, forWriting: wantsWrite, timeout: .milliseconds(100))
            if withLibrary({ () -> CInt in serviceSocket(readiness) }) != CInt(MOSQ_ERR_SUCCESS.rawValue) { break }
        }
    }

    private func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { outbox.finish() }
    }

    // MARK: Callbacks (inside a call into libmosquitto, with the library lock held)

    // A callback queues its events in the outbox, delivered in order once the call returns and the
    // lock is released: one read can handle several packets (a CONNACK, then the SUBACK and the
    // retained messages that follow it), and the user sees the connection before what came over it.

    func connected(code: CInt) {
        if code == 0 {
            let (reports, subscriptions) = state.withLock { state in
                state.connected = true
                return (queueingAllButReports(state.policy.connected(now: now), in: &state), state.subscriptions)
            }
            for report in reports { outbox.queue(.connection(report)) }
            for subscription in subscriptions {
                do {
                    try sendSubscription(subscription.filter, qos: subscription.qos)
                } catch {
                    outbox.queue(.subscribed(filter: subscription.filter, refusal: error))
                }
            }
        } else {
            let error = MQTTError.connectionRefused(code, version: configuration.protocolVersion)
            let reports = state.withLock { queueingAllButReports($0.policy.refused(error, now: now), in: &$0) }
            for report in reports { outbox.queue(.connection(report)) }
        }
    }

    func disconnected(code: CInt) {
        let reports = state.withLock { state -> [ReconnectPolicy.Report] in
            state.connected = false
            guard !state.stopRequested else { return [] }
            let error = code == 0 ? nil : MQTTError(call: "mosquitto_loop", mosquittoCode: code)
            return queueingAllButReports(state.policy.connectionLost(error, now: now), in: &state)
        }
        for report in reports { outbox.queue(.connection(report)) }
    }

    /// Queues the actions the network thread performs after the read returns (timers, connects) and
    /// returns the reports, to be queued in the outbox at once (after unlocking).
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
        if let token { outbox.queue(acknowledgement(token: token, mid: mid, reason: reason)) }
    }

    func subscribed(mid: CInt, granted: [CInt]) {
        let filter: String? = state.withLock { state in
            if let filter = state.subscriptionsByMid.removeValue(forKey: mid) { return filter }
            state.earlySubacks[mid] = granted
            return nil
        }
        if let filter { outbox.queue(subscription(filter, granted: granted)) }
    }

    func received(_ message: IncomingMessage) {
        outbox.queue(.message(message))
    }

    /// An error or a warning libmosquitto logged (its callback passes on no other level).
    func logged(text: String) {
        outbox.queue(.libraryLog(text))
    }

    // MARK: Helpers

    /// `mosquitto_subscribe_v5`, with the library lock held (a callback's, or ``withLibrary(_:_:)``'s).
    private func sendSubscription(_ filter: String, qos: QoS) throws(MQTTError) {
        var mid: CInt = 0
        try check("mosquitto_subscribe_v5", mosquitto_subscribe_v5(mosq, &mid, filter, qos.rawValue, 0, nil))
        let early: [CInt]? = state.withLock { state in
            if let granted = state.earlySubacks.removeValue(forKey: mid) { return granted }
            state.subscriptionsByMid[mid] = filter
            return nil
        }
        if let early { outbox.queue(subscription(filter, granted: early)) }
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

/// A client's events, delivered in the order they were queued, by one thread at a time: callbacks
/// queue them while the library lock is held, and the thread that releases it delivers them
/// (``deliverQueued()``). A thread that finds another delivering leaves its events to it, so the
/// order holds across threads, and a delivery that calls back into the client (a handler that
/// publishes) only queues.
final class EventOutbox: Sendable {
    private struct State: Sendable {
        var queued: [MQTTEvent] = []
        var delivering = false
        var finished = false
    }

    private let state = Lock(State())
    private let handler: @Sendable (MQTTEvent) -> Void
    private let finisher: @Sendable () -> Void

    init(deliver: @escaping @Sendable (MQTTEvent) -> Void, finish: @escaping @Sendable () -> Void) {
        handler = deliver
        finisher = finish
    }

    /// Queues `event` for the next ``deliverQueued()``.
    func queue(_ event: MQTTEvent) {
        state.withLock { state in
            if !state.finished { state.queued.append(event) }
        }
    }

    /// Queues `event` and delivers.
    func deliver(_ event: MQTTEvent) {
        queue(event)
        deliverQueued()
    }

    /// Delivers what is queued, unless another thread is delivering (it will deliver these too).
    func deliverQueued() {
        while let events = state.withLock({ state -> [MQTTEvent]? in
            guard !state.delivering, !state.queued.isEmpty else { return nil }
            state.delivering = true
            defer { state.queued = [] }
            return state.queued
        }) {
            for event in events { handler(event) }
            state.withLock { $0.delivering = false }
        }
    }

    /// Delivers what is queued, then ends the stream; later events are dropped.
    func finish() {
        deliverQueued()
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { finisher() }
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
    // libmosquitto logs every packet at debug level: only errors and warnings are made into a String.
    guard let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
    core(userdata)?.logged(text: String(cString: text))
}
