// Aiding across a supply cut: the navigation database, position and time saved before the cut and
// sent back after the next power-on (AidingSaveMachine, AidingRestoreMachine), tied to the receiver
// by its identity (MON-VER, SEC-UNIQID).
import GNSSProtocol
import LinuxSystem

extension HardwareSession {
    /// Whether a start after a supply cut can be aided: the board cuts it, a state directory is set,
    /// and the chip takes aiding.
    var aidingRestorable: Bool {
        !board.power.offKeepsBackup && stateDirectory != nil
    }

    // MARK: - Aiding

    /// Saves the navigation database, the last position and the time before the supply is cut.
    func saveAiding() async {
        // A session without a fix has nothing better than the state already saved.
        guard let directory = stateDirectory, board.chip.family.isUBlox, let transport = currentTransport,
            sessionHadFix
        else { return }
        var machine = AidingSaveMachine(identity: nil, position: lastPosition, clock: aidingTime.read().clock)
        var written: AidingState?
        let report = await converse(
            transport: transport, start: { machine.start(now: $0) },
            received: { message, now in
                guard case .ubx(let ubx) = message else { return [] }
                return machine.received(ubx, now: now)
            },
            timer: { machine.timerFired(generation: $0, now: $1) },
            other: { if case .write(let state) = $0 { written = state } })
        guard let report else { return }
        guard let written else {
            notice("aiding not saved: the receiver's identity is unknown (no MON-VER)")
            return
        }
        do {
            try written.save(in: directory)
            plan.withLock { $0.statistics.aidingSaves += 1 }
            if case .complete = report.dump {} else {
                notice("aiding saved with \(report.records) database records (dump: \(report.dump))")
            }
        } catch {
            notice("aiding not saved in \(directory): \(error)")
        }
    }

    /// Restores the saved aiding after a power-on; whether the receiver got it. A missing, corrupt,
    /// foreign or stale state is skipped with a notice and never fails the power-on; only a usable
    /// one costs the identity poll (MON-VER, SEC-UNIQID) that ties it to this receiver.
    func restoreAiding() async -> Bool {
        guard let directory = stateDirectory, let transport = currentTransport else { return false }
        let family = board.chip.family
        let (now, clockError) = aidingTime.read()
        var load = AidingState.load(from: directory, receiver: nil, now: now)
        if let saved = load.state, family.isUBlox {
            guard let identity = await pollIdentity(transport: transport) else {
                notice("aiding state ignored: the receiver did not say who it is (no MON-VER)")
                return false
            }
            if !saved.identity.matches(identity) { load = .foreign(saved.identity) }
        }
        guard let state = load.state else {
            switch load {
            case .missing: break
            case .corrupt:
                notice("aiding state ignored: \(load)")
                try? AidingState.remove(in: directory)
            default:
                notice("aiding state ignored: \(load)")
            }
            plan.withLock { $0.statistics.aidingSkipped += 1 }
            return false
        }
        var machine = AidingRestoreMachine(state: state, family: family, clock: now, clockError: clockError)
        let report = await converse(
            transport: transport, start: { machine.start(now: $0) },
            received: { machine.received($0, now: $1) }, timer: { machine.timerFired(generation: $0, now: $1) })
        guard let report else { return false }
        plan.withLock { $0.statistics.aidingRestores += 1 }
        if !report.refused.isEmpty || report.outcome != .complete {
            notice("aiding restored in part: \(report)")
        }
        return report.timeSent || report.positionAccuracy != nil || report.recordsAccepted > 0
    }

    /// MON-VER and SEC-UNIQID, polled up to three times a second apart: who the receiver is. A
    /// receiver whose supply was just switched on may not listen yet when the first poll goes out (it
    /// boots in up to about a second, longer on a busy machine), and a poll it missed is lost. (Not
    /// the board's acknowledgement time-out: a restore that waits long for a lost poll delays the
    /// power-on's end, and the aiding only saves seconds.)
    private func pollIdentity(transport: any Transport) async -> AidingIdentity? {
        var mark = log.mark
        do {
            var version: Message?
            for _ in 0..<3 where version == nil {
                mark = log.mark
                try await send(UBX.poll(.secUNIQID), through: transport)
                try await send(UBX.poll(.monVER), through: transport)
                version = try await firstMessage(after: mark, within: .seconds(1), where: {
                    if case .ubx(.monVER) = $0 { true } else { false }
                })
            }
            guard case .ubx(.monVER(let monver))? = version else { return nil }
            let unique = try await firstMessage(after: mark, within: .milliseconds(500), where: {
                if case .ubx(.secUniqID) = $0 { true } else { false }
            })
            var uniqueID: [UInt8]?
            if case .ubx(.secUniqID(let id))? = unique { uniqueID = id.uniqueID }
            return AidingIdentity(
                softwareVersion: monver.softwareVersion, hardwareVersion: monver.hardwareVersion, uniqueID: uniqueID)
        } catch {
            return nil
        }
    }
}
