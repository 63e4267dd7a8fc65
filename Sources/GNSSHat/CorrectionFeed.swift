// The Receiver's corrections feed: the CorrectionsMachine's events in (source, power, demand, fix
// mode), its actions done (a callback subscription of the source, cancelled), and each frame written
// to the receiver's link. Writes run one at a time on a task of their own, never on the source's
// thread and never on the reader's; a slow link keeps the newest `queueLimit` frames and drops older.
import GNSSProtocol
import LinuxSystem
import Signals

final class CorrectionFeed: Sendable {
    /// The most frames waiting to be written: about two epochs of a four-system MSM stream with its
    /// station and bias messages. Older frames are dropped when newer ones come (stale corrections
    /// are worse than none: the receiver would use them late).
    static let queueLimit = 16

    private struct State {
        var machine: CorrectionsMachine
        var source: RefCountedSignal<RTCM3Frame>?
        var token: SignalToken?
        var transport: (any Transport)?
        var queue: [RTCM3Frame] = []
        var writing = false
        var status = CorrectionStatus()
        var waiters: [(condition: @Sendable (CorrectionStatus) -> Bool,
                       continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Lock<State>
    private let clock: ReceiverClock

    init(boardTakesRTCM: Bool, clock: ReceiverClock) {
        var initial = State(machine: CorrectionsMachine(boardTakesRTCM: boardTakesRTCM))
        initial.status.notWantedBecause = initial.machine.reason
        state = Lock(initial)
        self.clock = clock
    }

    // MARK: - Events

    /// Attaches `source` (nil: detaches the current one).
    func attach(_ source: RefCountedSignal<RTCM3Frame>?) {
        handle(.source(attached: source != nil)) { state in
            state.source = source
            state.status.sourceAttached = source != nil
        }
    }

    /// The receiver is powered and configured, reached through `transport`; or (nil) it powers off.
    func power(_ transport: (any Transport)?) {
        handle(.power(on: transport != nil)) { state in
            state.transport = transport
            if transport == nil {
                state.status.framesDropped += state.queue.count
                state.queue.removeAll()
            }
        }
    }

    func demand(needsRTK: Bool) {
        handle(.demand(needsRTK: needsRTK))
    }

    /// The mode of the latest fix (only a change does anything).
    func fixMode(_ mode: FixMode) {
        let kind: CorrectionsMachine.FixModeKind = mode == .threeD ? .threeD : .lessThan3D
        guard state.withLock({ ($0.machine.hasThreeDFix ? .threeD : .lessThan3D) != kind }) else { return }
        handle(.fixMode(kind))
    }

    /// An RXM-RTCM report from the receiver.
    func confirm(_ report: UBXRxmRTCM) {
        update { $0.status.confirm(report) }
    }

    var status: CorrectionStatus { state.withLock { $0.status } }

    /// Suspends until the status satisfies `condition`.
    func wait(until condition: @escaping @Sendable (CorrectionStatus) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if condition(state.status) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Cancels the subscription (the Receiver shuts down).
    func release() {
        let token = state.withLock { state -> SignalToken? in
            defer { state.token = nil }
            return state.token
        }
        token?.cancel()
    }

    // MARK: - Machine

    /// Changes the state, hands `event` to the machine, and does its actions outside the lock.
    private func handle(_ event: CorrectionsMachine.Event, _ change: (inout State) -> Void = { _ in }) {
        typealias Outcome = (actions: [CorrectionsMachine.Action], source: RefCountedSignal<RTCM3Frame>?,
                             old: SignalToken?)
        let (actions, source, oldToken) = update { state -> Outcome in
            change(&state)
            let actions = state.machine.handle(event)
            var old: SignalToken?
            if actions.contains(.unsubscribe) {
                old = state.token
                state.token = nil
            }
            state.status.subscribed = state.machine.subscription != nil
            state.status.notWantedBecause = state.machine.reason
            return (actions, state.source, old)
        }
        oldToken?.cancel()
        for case .subscribe(let generation) in actions {
            guard let source else { continue }
            subscribe(source, generation: generation)
        }
    }

    private func subscribe(_ source: RefCountedSignal<RTCM3Frame>, generation: UInt64) {
        let token = source.subscribe(
            onSample: { [weak self] sample in
                // A replayed frame is old: only live ones go to the receiver.
                guard sample.age == .zero else { return }
                self?.offer(sample.value, generation: generation)
            },
            onCompletion: { [weak self] completion in
                guard let self else { return }
                if case .failure(let error) = completion {
                    self.update { $0.status.lastError = "corrections source: \(error)" }
                }
                self.handle(.sourceEnded(generation: generation))
            })
        let stale = update { state -> Bool in
            guard state.machine.subscription == generation else { return true }
            state.token = token
            state.status.subscriptions += 1
            return false
        }
        // Unsubscribed again before the token was kept.
        if stale { token.cancel() }
    }

    // MARK: - Writing

    private func offer(_ frame: RTCM3Frame, generation: UInt64) {
        let startWriter = update { state -> Bool in
            guard state.machine.subscription == generation, state.transport != nil else { return false }
            state.status.framesReceived += 1
            state.queue.append(frame.owned)
            if state.queue.count > Self.queueLimit {
                state.status.framesDropped += state.queue.count - Self.queueLimit
                state.queue.removeFirst(state.queue.count - Self.queueLimit)
            }
            guard !state.writing else { return false }
            state.writing = true
            return true
        }
        guard startWriter else { return }
        // Work of the session's from now until the queue is empty: a driver of a manual clock waits for it.
        let worker = clock.beginWork()
        Task { [self] in
            defer { clock.endWork(worker) }
            await drain()
        }
    }

    private func drain() async {
        while true {
            let next = update { state -> (RTCM3Frame, any Transport)? in
                guard let transport = state.transport, !state.queue.isEmpty else {
                    state.writing = false
                    return nil
                }
                return (state.queue.removeFirst(), transport)
            }
            guard let (frame, transport) = next else { return }
            let bytes = Array(frame.bytes)
            do {
                try await transport.sendCorrections(bytes)
                let now = clock.now()
                update { state in
                    state.status.framesWritten += 1
                    state.status.bytesWritten += bytes.count
                    state.status.lastMessageWritten = frame.messageNumber
                    state.status.lastWrittenAt = now
                }
            } catch {
                update { state in
                    state.status.framesDropped += 1
                    state.status.lastError = "writing corrections to \(transport.name): \(error)"
                }
            }
        }
    }

    /// Changes the state under the lock and resumes the waiters whose condition now holds.
    @discardableResult
    private func update<T>(_ change: (inout State) -> T) -> T {
        let (result, ready) = state.withLock { state -> (T, [CheckedContinuation<Void, Never>]) in
            let result = change(&state)
            var ready: [CheckedContinuation<Void, Never>] = []
            let status = state.status
            state.waiters.removeAll { waiter in
                guard waiter.condition(status) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return (result, ready)
        }
        for waiter in ready { waiter.resume() }
        return result
    }
}
