// The receiver's own power save: its commands sent and their acknowledgements awaited
// (PowerSaveNegotiation), on entering the plan and on leaving it.
import LinuxSystem

extension HardwareSession {
    // MARK: - Power save

    /// Sends the receiver's power-save commands; the refusal's reason, or nil when it took them.
    func enterPowerSave(interval: Duration) async -> String? {
        guard let transport = currentTransport else { return "no link" }
        guard let commands = PowerSaveCommands.plan(
            family: board.chip.family, interval: interval, protocolVersion: statistics.protocolVersion)
        else { return "the \(board.chip.family) has no power save GNSSHat knows" }
        var negotiation = PowerSaveNegotiation(commands: commands.enter)
        let outcome = await converse(
            transport: transport, start: { negotiation.start(now: $0) },
            received: { negotiation.received($0, now: $1) }, timer: { negotiation.timerFired(generation: $0, now: $1) })
        switch outcome {
        case .active:
            updatePlan { $0.powerSaveLeave = commands.leave }
            recordPower(.powerSave, .demand)
            return nil
        case .refused(let reason): return reason
        case nil: return "the link closed"
        }
    }

    func leavePowerSave() async {
        guard let leave = plan.withLock({ $0.powerSaveLeave }), let transport = currentTransport else { return }
        updatePlan { $0.powerSaveLeave = nil }
        var negotiation = PowerSaveNegotiation(commands: leave)
        let outcome = await converse(
            transport: transport, start: { negotiation.start(now: $0) },
            received: { negotiation.received($0, now: $1) }, timer: { negotiation.timerFired(generation: $0, now: $1) })
        if case .refused(let reason)? = outcome { notice("leaving the receiver's power save: \(reason)") }
        // Refused or not, the plan goes on as if it had left (the next power cycle resets it).
        recordPower(.on, .demand)
    }
}
