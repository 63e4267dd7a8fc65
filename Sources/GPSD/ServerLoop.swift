// The event loop of a GPSDServer: everything here runs on the loop's thread.

import PiHardware
import Signals

/// Poller tokens: the waker, the signal pipe, listeners, then one per client.
private let wakerToken: UInt64 = 0
private let signalsToken: UInt64 = 1
private let firstListenerToken: UInt64 = 16
private let firstClientToken: UInt64 = 1 << 20

/// One connection.
final class Client {
    let id: UInt64
    let socket: SocketConnection
    var session = ClientSession()
    var output: OutputQueue
    /// The client's subscription of the source while it watches.
    var token: SignalToken?
    /// The subscription ended with an error; a new one is tried after a pause.
    var awaitsResubscription = false
    /// Registered for writability (output is waiting).
    var wantsWrite = false
    /// Close once the queued output is written (the client closed its sending side).
    var closeWhenFlushed = false

    init(id: UInt64, socket: SocketConnection, queueLimit: Int) {
        self.id = id
        self.socket = socket
        output = OutputQueue(limit: queueLimit)
    }
}

/// The loop's state. Made on the thread that starts the loop and then used only by the loop's
/// thread, which is why it may be handed to that thread once (`@unchecked Sendable`).
final class ServerLoop: @unchecked Sendable {
    private let server: GPSDServer
    private let signals: SignalWatcher?
    private let configuration: GPSDServerConfiguration
    private var device: GPSDDevice
    private var clients: [UInt64: Client] = [:]
    private var nextClientID = firstClientToken
    private var activated: Int64?
    private var sawData = false
    private var latestTPV: [UInt8]?
    private var latestSKY: [UInt8]?
    private var dirty: Set<UInt64> = []
    private var stopping = false
    private var finished = false
    private var acceptPaused = false
    private var listenersOpen: Bool
    private var hold: SignalToken?
    private var chrony: ChronyFeed?
    private var retryScheduled = false
    private var statistics = GPSDServerStatistics()
    private var readBuffer = [UInt8](repeating: 0, count: 4096)

    init(server: GPSDServer, signals: SignalWatcher?) throws(SocketError) {
        self.server = server
        self.signals = signals
        configuration = server.configuration
        device = server.source.device
        listenersOpen = true
        try server.poller.add(server.inbox.waker.rawDescriptor, token: wakerToken, interest: .readable)
        if let signals {
            try server.poller.add(signals.rawDescriptor, token: signalsToken, interest: .readable)
        }
        for (index, listener) in server.listeners.enumerated() {
            try server.poller.add(listener.rawDescriptor, token: firstListenerToken + UInt64(index), interest: .readable)
        }
    }

    func run() {
        let inbox = server.inbox
        let source = server.source
        let task = Task {
            for await active in source.activity() { inbox.post(.activity(active)) }
        }
        server.shared.withLock { $0.activityTask = task }
        if configuration.keepOn { holdOn() }
        if configuration.chronySocket != nil || configuration.chronyPPSSocket != nil {
            chrony = ChronyFeed(source: source, serialPath: configuration.chronySocket,
                                ppsPath: configuration.chronyPPSSocket, log: configuration.log)
        }
        for address in server.addresses { configuration.log("listening on \(address)") }
        while !finished {
            let events: [Poller.Event]
            do {
                events = try server.poller.wait(timeout: nil)
            } catch {
                configuration.log("event loop failed: \(error); stopping")
                beginStop()
                continue
            }
            for event in events { handle(event) }
            flushDirty()
            publish()
        }
        for client in clients.values { close(client, reason: nil) }
        server.poller.close()
        publish()
        server.finished()
    }

    // MARK: - Events

    private func handle(_ event: Poller.Event) {
        switch event.token {
        case wakerToken:
            server.inbox.waker.drain()
            for item in server.inbox.take() { handle(item) }
        case signalsToken:
            if let received = signals?.drain(), !received.isEmpty {
                configuration.log("received \(received.map { "\($0)" }.joined(separator: ", ")); shutting down")
                beginStop()
            }
        case firstListenerToken..<firstClientToken:
            let index = Int(event.token - firstListenerToken)
            if index < server.listeners.count { accept(from: server.listeners[index]) }
        default:
            guard let client = clients[event.token] else { return }
            if event.isReadable || event.isHangUp { read(client) }
            if event.isWritable, clients[client.id] != nil { flush(client) }
        }
    }

    private func handle(_ item: InboxItem) {
        switch item {
        case .event(let id, let event):
            record(event)
            guard let client = clients[id] else { return }
            for line in client.session.lines(for: event, path: device.path) { enqueue(line, to: client) }
        case .ended(let id, let completion):
            guard let client = clients[id] else { return }
            client.token = nil
            if case .failure(let error) = completion, client.session.wantsSubscription, !stopping {
                configuration.log("client \(client.socket.peer): the source failed: \(error)")
                client.awaitsResubscription = true
                scheduleResubscription()
            }
        case .activity(let active):
            deviceActivity(active)
        case .configured(let id, let result):
            guard let client = clients[id] else { return }
            switch result {
            case .success(let updated):
                device = updated
                enqueue(GPSDResponse.device(device, activated: activated, sawData: sawData), to: client)
            case .failure(let failure):
                statistics.errors += 1
                enqueue(GPSDResponse.error(failure.message), to: client)
            }
        case .stop:
            beginStop()
        case .sourceStopped:
            finished = true
        case .rehold:
            if configuration.keepOn && !stopping { holdOn() }
        case .resubscribe:
            retryScheduled = false
            for client in clients.values where client.awaitsResubscription {
                client.awaitsResubscription = false
                updateSubscription(client)
            }
        }
    }

    /// Keeps the latest TPV and SKY for POLL.
    private func record(_ event: GPSDEvent) {
        switch event {
        case .tpv(let line):
            latestTPV = line
            sawData = true
        case .sky(let line):
            latestSKY = line
            sawData = true
        default:
            break
        }
    }

    private func deviceActivity(_ active: Bool) {
        statistics.deviceActive = active
        if active {
            guard activated == nil else { return }
            activated = configuration.wallClock()
            sawData = false
            configuration.log("device \(device.path) active")
            let line = GPSDResponse.device(device, activated: activated, sawData: false)
            for client in clients.values where client.session.policy.enable && client.session.policy.json {
                enqueue(line, to: client)
            }
        } else {
            guard activated != nil else { return }
            activated = nil
            configuration.log("device \(device.path) closed")
            let line = GPSDResponse.deviceClosed(path: device.path)
            for client in clients.values where client.session.policy.enable && client.session.policy.json {
                enqueue(line, to: client)
            }
        }
    }

    // MARK: - Clients

    private func accept(from listener: SocketListener) {
        while true {
            let connection: SocketConnection?
            do {
                connection = try listener.accept()
            } catch .outOfDescriptors(let failure) {
                configuration.log("accept paused until a connection closes: \(failure)")
                pauseAccepting()
                return
            } catch {
                configuration.log("accept on \(listener.address) failed: \(error)")
                return
            }
            guard let connection else { return }
            guard !stopping, clients.count < configuration.maxClients else {
                statistics.refused += 1
                connection.close()
                continue
            }
            let client = Client(id: nextClientID, socket: connection, queueLimit: configuration.maxQueuedBytes)
            nextClientID += 1
            do {
                try server.poller.add(connection.rawDescriptor, token: client.id, interest: .readable)
            } catch {
                configuration.log("cannot watch \(connection.peer): \(error)")
                connection.close()
                continue
            }
            clients[client.id] = client
            statistics.accepted += 1
            enqueue(GPSDResponse.version(release: configuration.release, revision: configuration.revision), to: client)
        }
    }

    private func read(_ client: Client) {
        // A few reads per wake-up, so one busy client cannot starve the others.
        for _ in 0..<4 {
            let outcome: ReceiveOutcome
            do {
                outcome = try readBuffer.withUnsafeMutableBytes { try client.socket.receive(into: $0) }
            } catch {
                close(client, reason: "\(error)")
                return
            }
            switch outcome {
            case .wouldBlock:
                return
            case .endOfStream:
                // Answer what it asked before it closed its side, then close.
                client.closeWhenFlushed = true
                flush(client)
                if clients[client.id] != nil, client.output.isEmpty { close(client, reason: nil) }
                return
            case .received(let count):
                let view = serviceView()
                let (lines, effects) = client.session.receive(readBuffer[0..<count], view: view)
                for line in lines {
                    if line.starts(with: Array("{\"class\":\"ERROR\"".utf8)) { statistics.errors += 1 }
                    enqueue(line, to: client)
                }
                for effect in effects { perform(effect, for: client) }
                updateSubscription(client)
                guard clients[client.id] != nil else { return }
            }
        }
    }

    private func serviceView() -> ServiceView {
        ServiceView(
            device: device, activated: activated, sawData: sawData, latestTPV: latestTPV, latestSKY: latestSKY,
            now: configuration.wallClock(), release: configuration.release, revision: configuration.revision,
            allowsDeviceChanges: configuration.allowDeviceChanges
        )
    }

    private func perform(_ effect: SessionEffect, for client: Client) {
        switch effect {
        case .configure(let change):
            guard let configure = server.source.configure else {
                statistics.errors += 1
                enqueue(GPSDResponse.error("Device configuration is not supported for \(device.path)."), to: client)
                return
            }
            let inbox = server.inbox
            let id = client.id
            Task {
                do {
                    inbox.post(.configured(client: id, .success(try await configure(change))))
                } catch {
                    inbox.post(.configured(client: id, .failure(ConfigureFailure(message: "\(error)"))))
                }
            }
        }
    }

    /// Subscribes a client that watches and cancels the subscription of one that stopped.
    private func updateSubscription(_ client: Client) {
        let wants = client.session.wantsSubscription && !stopping
        if wants, client.token == nil, !client.awaitsResubscription {
            let inbox = server.inbox
            let id = client.id
            client.token = server.source.events.subscribe(
                onValue: { inbox.post(.event(client: id, $0)) },
                onCompletion: { inbox.post(.ended(client: id, $0)) }
            )
        } else if !wants, let token = client.token {
            client.token = nil
            token.cancel()
        }
        if !wants { client.awaitsResubscription = false }
    }

    private func scheduleResubscription() {
        guard !retryScheduled else { return }
        retryScheduled = true
        let inbox = server.inbox
        Task {
            try? await Task.sleep(for: .seconds(1))
            inbox.post(.resubscribe)
        }
    }

    private func enqueue(_ line: [UInt8], to client: Client) {
        let dropped = client.output.append(line)
        if dropped > 0 {
            statistics.droppedLines += dropped
            if client.output.dropped > configuration.maxDroppedLines {
                statistics.slowClientsDisconnected += 1
                close(client, reason: "did not read: \(client.output.dropped) lines dropped")
                return
            }
        }
        statistics.maxQueuedBytesPerClient = max(statistics.maxQueuedBytesPerClient, client.output.queuedBytes)
        dirty.insert(client.id)
    }

    private func flushDirty() {
        guard !dirty.isEmpty else { return }
        let ids = dirty
        dirty.removeAll(keepingCapacity: true)
        for id in ids {
            if let client = clients[id] { flush(client) }
        }
    }

    private func flush(_ client: Client) {
        let empty: Bool
        do {
            empty = try client.output.write { bytes throws(SocketError) in try client.socket.send(bytes) }
        } catch {
            close(client, reason: "\(error)")
            return
        }
        if empty && client.closeWhenFlushed {
            close(client, reason: nil)
            return
        }
        if empty != client.wantsWrite { return }
        client.wantsWrite = !empty
        do {
            try server.poller.modify(client.socket.rawDescriptor, token: client.id,
                                     interest: empty ? .readable : [.readable, .writable])
        } catch {
            close(client, reason: "\(error)")
        }
    }

    private func close(_ client: Client, reason: String?) {
        guard clients.removeValue(forKey: client.id) != nil else { return }
        if let reason { configuration.log("client \(client.socket.peer) closed: \(reason)") }
        if let token = client.token {
            client.token = nil
            token.cancel()
        }
        server.poller.remove(client.socket.rawDescriptor)
        client.socket.close()
        dirty.remove(client.id)
        statistics.closed += 1
        if acceptPaused { resumeAccepting() }
    }

    // MARK: - Accepting and stopping

    private func pauseAccepting() {
        guard !acceptPaused else { return }
        acceptPaused = true
        statistics.acceptPauses += 1
        for listener in server.listeners { server.poller.remove(listener.rawDescriptor) }
    }

    private func resumeAccepting() {
        guard acceptPaused, listenersOpen else { return }
        acceptPaused = false
        for (index, listener) in server.listeners.enumerated() {
            try? server.poller.add(listener.rawDescriptor, token: firstListenerToken + UInt64(index), interest: .readable)
        }
    }

    private func holdOn() {
        let inbox = server.inbox
        hold = server.source.events.hold { completion in
            // The receiver failed: hold again after a pause, so time service comes back by itself.
            if case .failure = completion {
                Task {
                    try? await Task.sleep(for: .seconds(1))
                    inbox.post(.rehold)
                }
            }
        }
    }

    private func beginStop() {
        guard !stopping else { return }
        stopping = true
        listenersOpen = false
        for listener in server.listeners {
            server.poller.remove(listener.rawDescriptor)
            listener.close()
        }
        // The receiver is about to go off: tell watchers as gpsd does when a device closes.
        if activated != nil {
            activated = nil
            let line = GPSDResponse.deviceClosed(path: device.path)
            for client in clients.values where client.session.policy.enable && client.session.policy.json {
                enqueue(line, to: client)
            }
        }
        for client in clients.values {
            flush(client)
            close(client, reason: nil)
        }
        hold?.cancel()
        hold = nil
        chrony?.stop()
        chrony = nil
        let source = server.source
        let inbox = server.inbox
        let log = configuration.log
        Task {
            await source.shutdown()
            log("receiver powered off")
            inbox.post(.sourceStopped)
        }
    }

    private func publish() {
        statistics.clients = clients.count
        statistics.watchers = clients.values.reduce(0) { $0 + ($1.token == nil ? 0 : 1) }
        statistics.queuedBytes = clients.values.reduce(0) { $0 + $1.output.queuedBytes }
        let snapshot = statistics
        server.shared.withLock { $0.statistics = snapshot }
    }
}
