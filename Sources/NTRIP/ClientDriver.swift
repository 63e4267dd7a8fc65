// The thin driver around ConnectionMachine: every event (the signal's start and stop, a position, a
// link's news, a timer) goes through one inbox and is handled one at a time, in order, by the thread
// that posted it when no other is handling (as MQTT's bridge inbox does): lock, transition, unlock,
// then perform the actions in order: open or close a link (a thread each), write a GGA, arm a timer
// (a task sleeping on the injected clock), log. Frames are sent to the signal by the handler, so one
// thread sends at a time and no lock is held while subscribers run.
import GNSSProtocol
import LinuxSystem
import Signals

final class ClientDriver: Sendable {
    enum Event: Sendable {
        case start(SignalEmitter<RTCMFrame>, tls: TLSContext?)
        case stop(CheckedContinuation<[CasterLink], Never>)
        case positionArrived
        case link(UInt64, LinkEvent)
        case timer(ConnectionTimer, generation: UInt64)
    }

    private struct State: Sendable {
        var machine: ConnectionMachine
        var status: NTRIPStatus
        var queue: [Event] = []
        var handling = false
        var emitter: SignalEmitter<RTCMFrame>?
        var tls: TLSContext?
        var links: [UInt64: CasterLink] = [:]
        /// Links closed and perhaps not ended yet: a stop waits for them.
        var closing: [CasterLink] = []
        var timers: [ConnectionTimer: Task<Void, Never>] = [:]
        var positionObserver: UInt64?
    }

    let configuration: NTRIPConfiguration
    let position: PositionFeed
    let now: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void
    private let log: @Sendable (NTRIPReport) -> Void
    private let state: Lock<State>

    init(
        configuration: NTRIPConfiguration, position: PositionFeed, now: @escaping @Sendable () -> Duration,
        sleepUntil: @escaping @Sendable (Duration) async throws -> Void, log: @escaping @Sendable (NTRIPReport) -> Void
    ) {
        self.configuration = configuration
        self.position = position
        self.now = now
        self.sleepUntil = sleepUntil
        self.log = log
        let machine = ConnectionMachine(settings: .init(configuration))
        state = Lock(State(machine: machine, status: NTRIPStatus(caster: machine.casterName)))
    }

    var status: NTRIPStatus { state.withLock { $0.status } }

    // MARK: - The signal's hooks

    /// The first subscriber: checks what cannot work (the password file, the CA file), then lets the
    /// machine connect. Throws ``NTRIPConfigurationError`` or ``TLSError``: the subscribers get it.
    func start(_ emitter: SignalEmitter<RTCMFrame>) throws {
        _ = try configuration.credentials()
        let tls = configuration.caster.usesTLS ? try TLSContext(caFile: configuration.caFile) : nil
        post(.start(emitter, tls: tls))
    }

    /// The last subscriber left (after the linger): closes the connection and waits until its
    /// thread has closed the socket.
    func stop() async {
        let links = await withCheckedContinuation { post(.stop($0)) }
        for link in links { await link.ended() }
    }

    // MARK: - The inbox

    func post(_ event: Event) {
        let handling = state.withLock { state -> Bool in
            state.queue.append(event)
            if state.handling { return false }
            state.handling = true
            return true
        }
        guard handling else { return }
        while true {
            let next = state.withLock { state -> Event? in
                if state.queue.isEmpty {
                    state.handling = false
                    return nil
                }
                return state.queue.removeFirst()
            }
            guard let next else { return }
            handle(next)
        }
    }

    private func handle(_ event: Event) {
        let time = now()
        var frames: [RTCMFrame] = []
        var emitter: SignalEmitter<RTCMFrame>?
        var stopped: CheckedContinuation<[CasterLink], Never>?
        let actions = state.withLock { state -> [ConnectionMachine.Action] in
            var actions: [ConnectionMachine.Action]
            switch event {
            case .start(let runEmitter, let tls):
                state.emitter = runEmitter
                state.tls = tls
                actions = state.machine.start(hasPosition: position.latest != nil, now: time)
            case .stop(let continuation):
                stopped = continuation
                actions = state.machine.stop(now: time)
                state.emitter = nil
            case .positionArrived:
                actions = state.machine.positionArrived(now: time)
            case .link(let id, .requestSent):
                actions = state.machine.requestSent(link: id, now: time)
            case .link(let id, .answered(let answer)):
                actions = state.machine.answered(link: id, answer, now: time)
            case .link(let id, .frames(let received)):
                guard case .streaming(let attempt, _) = state.machine.phase, attempt.link == id else { return [] }
                frames = received
                emitter = state.emitter
                state.status.framesReceived += received.count
                state.status.lastFrameAt = time
                actions = state.machine.framesReceived(link: id, now: time)
            case .link(let id, .failed(let error)):
                actions = state.machine.linkFailed(link: id, error, now: time)
            case .timer(let timer, let generation):
                actions = state.machine.timerFired(timer, generation: generation, now: time)
            }
            state.status.phase = state.machine.phase.status
            state.status.caster = state.machine.casterName
            state.status.chosen = state.machine.chosen
            state.status.failuresInARow = state.machine.failuresInARow
            state.status.lastError = state.machine.lastError
            return actions
        }
        if let emitter { for frame in frames { emitter.send(frame) } }
        watchPosition()
        for action in actions { perform(action) }
        if let stopped { stopped.resume(returning: finishStop()) }
    }

    /// While the machine waits for a position, the feed's next update is an event.
    private func watchPosition() {
        let needed = state.withLock { state -> Bool in
            let waiting = state.machine.phase == .waitingForPosition
            if !waiting, let observer = state.positionObserver {
                position.stopObserving(observer)
                state.positionObserver = nil
            }
            return waiting && state.positionObserver == nil
        }
        guard needed else { return }
        let id = position.observe { [weak self] _ in self?.post(.positionArrived) }
        state.withLock { $0.positionObserver = id }
        // A position that came before the observer was in place.
        if position.latest != nil { post(.positionArrived) }
    }

    /// After a stop: every timer cancelled; the links closed, to wait for.
    private func finishStop() -> [CasterLink] {
        state.withLock { state in
            for task in state.timers.values { task.cancel() }
            state.timers = [:]
            let links = state.closing + state.links.values
            for link in state.links.values { link.close() }
            state.links = [:]
            state.closing = []
            state.tls = nil
            return links
        }
    }

    // MARK: - Actions

    private func perform(_ action: ConnectionMachine.Action) {
        switch action {
        case .connect(let attempt):
            open(attempt)
        case .sendGGA(let id):
            guard let position = position.latest, let link = state.withLock({ $0.links[id] }) else { return }
            link.send(position.ggaSentence(now: WallClock.now()))
        case .close(let id):
            state.withLock { state in
                guard let link = state.links.removeValue(forKey: id) else { return }
                link.close()
                state.closing.removeAll { $0.isEnded }
                state.closing.append(link)
            }
        case .arm(let timer, let generation, let deadline):
            let sleepUntil = sleepUntil
            let task = Task { [weak self] in
                guard (try? await sleepUntil(deadline)) != nil else { return }
                self?.post(.timer(timer, generation: generation))
            }
            let previous = state.withLock { $0.timers.updateValue(task, forKey: timer) }
            previous?.cancel()
        case .cancel(let timer):
            state.withLock { $0.timers.removeValue(forKey: timer) }?.cancel()
        case .report(let report):
            log(report)
        }
    }

    /// Makes and starts the link of `attempt`; a failure to is the link's failure.
    private func open(_ attempt: LinkAttempt) {
        let mountpoint: String? = if case .stream(let name) = attempt.purpose { name } else { nil }
        do {
            let credentials = try configuration.credentials()
            let gga = position.latest?.ggaSentence(now: WallClock.now())
            let request = NTRIPRequest.bytes(
                caster: configuration.caster, mountpoint: mountpoint, version: configuration.version,
                softwareVersion: configuration.softwareVersion, credentials: credentials,
                gga: configuration.ggaInterval == nil ? nil : gga)
            let target = LinkTarget(
                host: configuration.caster.host, port: configuration.caster.port, tls: state.withLock { $0.tls },
                request: request, user: configuration.caster.user, mountpoint: mountpoint)
            let link = try CasterLink(id: attempt.link, target: target, now: now, position: { [position] in
                position.latest
            }) { [weak self] event in
                self?.post(.link(attempt.link, event))
            }
            state.withLock { $0.links[attempt.link] = link }
            try link.start()
        } catch {
            let failure: NTRIPError = switch error {
            case let error as NTRIPConfigurationError: .configuration(error)
            case let error as SystemError: .system(error)
            default: .system(.closed(device: "ntrip link"))
            }
            state.withLock { $0.queue.append(.link(attempt.link, .failed(failure))) }
        }
    }
}
