// Conversations with the receiver: a message-driven machine (power save's negotiation, the aiding
// save and restore) run over the link, its sends, timers and outcome done here, the decisions its own.
import GNSSProtocol

extension HardwareSession {
    // MARK: - Conversations

    /// Runs a message-driven machine over the link: its actions are done in order; each message after
    /// the start goes to `received`, a timer's expiry to `timer`, an action of its own (neither a send,
    /// a timer nor the end) to `other`. Returns the machine's outcome, or nil when the link closed or a
    /// send failed first.
    func converse<Action: ConversationAction>(
        transport: any Transport,
        start: (Duration) -> [Action],
        received: (Message, Duration) -> [Action],
        timer: (UInt64, Duration) -> [Action],
        other: (Action) -> Void = { _ in }
    ) async -> Action.ConversationOutcome? {
        var mark = log.mark
        var actions = start(clock.now())
        var deadline: (generation: UInt64, at: Duration)?
        while true {
            for action in actions {
                switch action.step {
                case .send(let bytes):
                    do { try await send(bytes, through: transport) } catch { return nil }
                case let .arm(generation, at): deadline = (generation, at)
                case .finish(let outcome): return outcome
                case .other: other(action)
                }
            }
            guard let pending = deadline else { return nil }
            let wait = max(pending.at - clock.now(), .zero)
            let found: MessageLog.Found?
            do {
                found = try await log.next(after: mark, within: wait, as: sequenceWorker, where: { _ in true })
            } catch {
                return nil
            }
            if let found {
                mark = found.sequence
                actions = received(found.message, clock.now())
            } else {
                deadline = nil
                actions = timer(pending.generation, clock.now())
            }
        }
    }
}

/// What a message-driven machine's action asks of the link (see `HardwareSession.converse`).
enum ConversationStep<Outcome> {
    case send([UInt8])
    case arm(UInt64, Duration)
    case finish(Outcome)
    /// An action of the machine's own (the aiding state to write).
    case other
}

/// The actions of the power-save and aiding machines, as conversation steps.
protocol ConversationAction {
    associatedtype ConversationOutcome
    var step: ConversationStep<ConversationOutcome> { get }
}

extension PowerSaveNegotiation.Action: ConversationAction {
    var step: ConversationStep<PowerSaveNegotiation.Outcome> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .finish(let outcome): .finish(outcome)
        }
    }
}

extension AidingSaveMachine.Action: ConversationAction {
    var step: ConversationStep<AidingSaveReport> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .write: .other
        case .finish(let report): .finish(report)
        }
    }
}

extension AidingRestoreMachine.Action: ConversationAction {
    var step: ConversationStep<AidingRestoreReport> {
        switch self {
        case .send(let bytes): .send(bytes)
        case let .armTimer(generation, deadline): .arm(generation, deadline)
        case .finish(let report): .finish(report)
        }
    }
}
