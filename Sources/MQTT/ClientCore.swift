// The shared core of an MQTTClient: libmosquitto's handle under one lock, the client's state, its
// network thread (connects, reconnects as ``ReconnectPolicy`` says, waits in LinuxSystem's
// `ReadinessWaiter`), and libmosquitto's callbacks, which queue their events in the ``EventOutbox``.
internal import CMosquitto
internal import LinuxSystem

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
