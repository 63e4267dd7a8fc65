// The event loop of a GPSDServer: accepting, reading requests, replies, notices and writability run
// on the loop's thread; reports are written by the source's thread through each client's channel.

import GPSDProtocol
import LinuxSystem
import Signals

/// Poller tokens: the waker, the signal pipe, listeners, then one per client.
private let wakerToken: UInt64 = 0
private let signalsToken: UInt64 = 1
private let firstListenerToken: UInt64 = 16
private let firstClientToken: UInt64 = 1 << 20

/// What a client's scheduled subscription was made for (`?WATCH` "interval" and "accuracy").
struct ScheduledWatch: Equatable {
    var interval: Duration
    var accuracy: Double?
}

/// One connection, as the loop sees it.
final class Client {
    let id: UInt64
    let channel: ClientChannel
    var session = ClientSession()
    /// The client's subscription of the source while it watches.
    var token: SignalToken?
    /// The schedule the subscription was made for (`?WATCH` "interval" and "accuracy"; nil: every epoch).
    var subscribedSchedule: ScheduledWatch?
    /// For a client that watches every epoch: the hold that carries its `"accuracy"` to the receiver,
    /// and the accuracy it was made for.
    var demandToken: SignalToken?
    var heldAccuracy: Double?
    /// The subscription ended with an error; a new one is tried after a pause.
    var awaitsResubscription = false
    /// Registered for writability with the poller.
    var registeredWritable = false
    /// Close once the queued output is written (the client closed its sending side).
    var closeWhenFlushed = false

    init(channel: ClientChannel) {
        id = channel.id
        self.channel = channel
    }

    var peer: String { channel.socket.peer }
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
    private var stopping = false
    private var finished = false
    private var acceptPaused = false
    private var listenersOpen = true
    private var hold: SignalToken?
    private var chrony: ChronyFeed?
    private var retryScheduled = false
    private var statistics = GPSDServerStatistics()
    /// Lines dropped and bytes queued by clients already closed (their channels are gone).
    private var closedDropped = 0
    private var closedMaxQueued = 0
    private var readBuffer = [UInt8](repeating: 0, count: 4096)

    init(server: GPSDServer, signals: SignalWatcher?) throws(SystemError) {
        self.server = server
        self.signals = signals
        configuration = server.configuration
        device = server.source.device
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
            if event.isWritable, clients[client.id] != nil { apply(client.channel.flush(), to: client) }
        }
    }

    private func handle(_ item: InboxItem) {
        switch item {
        case .writable(let id):
            if let client = clients[id] { reconcileInterest(client) }
        case .failed(let id, let reason):
            if let client = clients[id] { close(client, reason: reason) }
        case .tooSlow(let id):
            if let client = clients[id] { disconnectSlow(client) }
        case .ended(let id, let completion):
            guard let client = clients[id] else { return }
            client.token = nil
            releaseDemandHold(client)
            if case .failure(let error) = completion, client.session.wantsSubscription, !stopping {
                configuration.log("client \(client.peer): the source failed: \(error)")
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
                send([GPSDResponse.device(device, activated: activated, sawData: server.memory.snapshot.sawData)],
                     to: client)
            case .failure(let failure):
                statistics.errors += 1
                send([GPSDResponse.error(failure.message)], to: client)
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

    private func deviceActivity(_ active: Bool) {
        statistics.deviceActive = active
        let line: [UInt8]
        if active {
            guard activated == nil else { return }
            activated = configuration.wallClock()
            server.memory.deviceActivated()
            configuration.log("device \(device.path) active")
            line = GPSDResponse.device(device, activated: activated, sawData: false)
        } else {
            guard activated != nil else { return }
            activated = nil
            configuration.log("device \(device.path) closed")
            line = GPSDResponse.deviceClosed(path: device.path)
        }
        for client in clients.values where client.session.policy.enable && client.session.policy.json {
            send([line], to: client)
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
            let channel = ClientChannel(id: nextClientID, socket: connection, queueLimit: configuration.maxQueuedBytes,
                                        maxDroppedLines: configuration.maxDroppedLines)
            let client = Client(channel: channel)
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
            send([GPSDResponse.version(release: configuration.release, revision: configuration.revision)], to: client)
        }
    }

    private func read(_ client: Client) {
        // A few reads per wake-up, so one busy client cannot starve the others.
        for _ in 0..<4 {
            let outcome: ReceiveOutcome
            do {
                outcome = try readBuffer.withUnsafeMutableBytes { try client.channel.socket.receive(into: $0) }
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
                if client.channel.isDrained { close(client, reason: nil) }
                return
            case .received(let count):
                let (lines, effects) = client.session.receive(readBuffer[0..<count], view: serviceView())
                statistics.errors += lines.filter { $0.starts(with: Self.errorPrefix) }.count
                client.channel.policy = client.session.policy
                send(lines, to: client)
                guard clients[client.id] != nil else { return }
                for effect in effects { perform(effect, for: client) }
                updateSubscription(client)
            }
        }
    }

    private static let errorPrefix = Array("{\"class\":\"ERROR\"".utf8)

    private func serviceView() -> ServiceView {
        let memory = server.memory.snapshot
        return ServiceView(
            device: device, activated: activated, sawData: memory.sawData, latestTPV: memory.tpv,
            latestSKY: memory.sky, now: configuration.wallClock(), release: configuration.release,
            revision: configuration.revision, allowsDeviceChanges: configuration.allowDeviceChanges
        )
    }

    private func perform(_ effect: SessionEffect, for client: Client) {
        switch effect {
        case .configure(let change):
            guard let configure = server.source.configure else {
                statistics.errors += 1
                send([GPSDResponse.error("Device configuration is not supported for \(device.path).")], to: client)
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

    /// Subscribes a client that watches and cancels the subscription of one that stopped. Reports
    /// go straight from the source's thread to the client's channel.
    private func updateSubscription(_ client: Client) {
        let wants = client.session.wantsSubscription && !stopping
        let policy = client.session.policy
        let schedule = server.source.scheduled == nil
            ? nil : policy.interval.map { ScheduledWatch(interval: $0, accuracy: policy.accuracy) }
        // A new interval or accuracy is a new subscription (its demand differs): the old one ends first.
        if wants, let token = client.token, client.subscribedSchedule != schedule {
            client.token = nil
            token.cancel()
        }
        if wants, client.token == nil, !client.awaitsResubscription {
            let inbox = server.inbox
            let memory = server.memory
            let channel = client.channel
            let id = client.id
            let path = device.path
            let signal = schedule.flatMap { server.source.scheduled?($0.interval, $0.accuracy) }
                ?? server.source.events
            client.subscribedSchedule = schedule
            client.token = signal.subscribe(
                onValue: { event in
                    memory.record(event)
                    switch channel.deliver(event, path: path) {
                    case .done: break
                    case .needsWritable: inbox.post(.writable(client: id))
                    case .failed(let reason): inbox.post(.failed(client: id, reason: reason))
                    case .tooSlow: inbox.post(.tooSlow(client: id))
                    }
                },
                onCompletion: { inbox.post(.ended(client: id, $0)) }
            )
        } else if !wants, let token = client.token {
            client.token = nil
            token.cancel()
        }
        if !wants { client.awaitsResubscription = false }
        updateDemandHold(client, wants: wants && client.token != nil)
    }

    /// Holds the `"accuracy"` demand of a client that watches every epoch (a new accuracy is a new hold).
    /// A scheduled subscription carries its accuracy itself, and its fixes are the accurate ones.
    private func updateDemandHold(_ client: Client, wants: Bool) {
        let wanted = wants && client.subscribedSchedule == nil ? client.session.policy.accuracy : nil
        guard wanted != client.heldAccuracy else { return }
        releaseDemandHold(client)
        guard let wanted, let hold = server.source.demandHold else { return }
        client.heldAccuracy = wanted
        client.demandToken = hold(wanted)
    }

    private func releaseDemandHold(_ client: Client) {
        let token = client.demandToken
        client.demandToken = nil
        client.heldAccuracy = nil
        token?.cancel()
    }

    private func scheduleResubscription() {
        guard !retryScheduled else { return }
        retryScheduled = true
        let inbox = server.inbox
        Task {
            try? await TimerThreadClock().sleep(for: .seconds(1))
            inbox.post(.resubscribe)
        }
    }

    /// Writes lines from the loop (replies, notices) and acts on the outcome.
    private func send(_ lines: [[UInt8]], to client: Client) {
        apply(client.channel.write(lines), to: client)
    }

    private func apply(_ outcome: ClientChannel.Outcome, to client: Client) {
        switch outcome {
        case .done, .needsWritable:
            reconcileInterest(client)
        case .failed(let reason):
            close(client, reason: reason)
        case .tooSlow:
            disconnectSlow(client)
        }
    }

    /// Watches the socket for writability exactly while bytes wait; closes a half-closed client
    /// once its answers are out.
    private func reconcileInterest(_ client: Client) {
        guard clients[client.id] != nil else { return }
        if client.closeWhenFlushed && client.channel.isDrained {
            close(client, reason: nil)
            return
        }
        let wants = client.channel.wantsWritable
        guard wants != client.registeredWritable else { return }
        client.registeredWritable = wants
        do {
            try server.poller.modify(client.channel.socket.rawDescriptor, token: client.id,
                                     interest: wants ? [.readable, .writable] : .readable)
        } catch {
            close(client, reason: "\(error)")
        }
    }

    private func disconnectSlow(_ client: Client) {
        guard clients[client.id] != nil else { return }
        statistics.slowClientsDisconnected += 1
        close(client, reason: "did not read: \(client.channel.counters.dropped) lines dropped")
    }

    private func close(_ client: Client, reason: String?) {
        guard clients.removeValue(forKey: client.id) != nil else { return }
        if let reason { configuration.log("client \(client.peer) closed: \(reason)") }
        if let token = client.token {
            client.token = nil
            token.cancel()
        }
        releaseDemandHold(client)
        let counters = client.channel.counters
        closedDropped += counters.dropped
        closedMaxQueued = max(closedMaxQueued, counters.maxQueued)
        server.poller.remove(client.channel.socket.rawDescriptor)
        client.channel.close()
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
                    try? await TimerThreadClock().sleep(for: .seconds(1))
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
        for client in clients.values {
            if let token = client.token {
                client.token = nil
                token.cancel()
            }
            releaseDemandHold(client)
        }
        let closing = activated.map { _ in GPSDResponse.deviceClosed(path: device.path) }
        activated = nil
        for client in clients.values {
            let policy = client.session.policy
            let last = policy.enable && policy.json ? closing.map { [$0] } ?? [] : []
            _ = client.channel.endReports(with: last)
        }
        for client in clients.values { close(client, reason: nil) }
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
        server.source.passThroughDemand.set(clients.values.reduce(0) { count, client in
            let policy = client.session.policy
            return count + (policy.enable && (policy.nmea || policy.raw > 0) ? 1 : 0)
        })
        statistics.clients = clients.count
        statistics.watchers = clients.values.reduce(0) { $0 + ($1.token == nil ? 0 : 1) }
        var queued = 0
        var dropped = closedDropped
        var maxQueued = closedMaxQueued
        for client in clients.values {
            let counters = client.channel.counters
            queued += counters.queued
            dropped += counters.dropped
            maxQueued = max(maxQueued, counters.maxQueued)
        }
        statistics.queuedBytes = queued
        statistics.droppedLines = dropped
        statistics.maxQueuedBytesPerClient = maxQueued
        let snapshot = statistics
        server.shared.withLock { $0.statistics = snapshot }
        server.statisticsWaiters.resumeAll()
    }
}
