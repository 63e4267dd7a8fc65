// The simulated receiver's own power save, as the host's PowerSaveCommands drive it: u-blox 8 CFG-PM2
// (parameters) and CFG-RXM lpMode 1 (on) / 0 (off), CFG-PMS presets, u-blox 9 and M10 CFG-VALSET of the
// CFG-PM-* keys, MTK periodic `$PMTK225`. Each is acknowledged (ACK-ACK, `$PMTK001,225,3`), or refused under
// the `refusePowerSave` fault (ACK-NAK, `$PMTK001,225,1`). In power save the receiver sends one fix per update
// period and nothing in between (mode `powerSave`, which draws the board's power-save current); it enters it
// at its first fix when switched on while acquiring.
import GNSSProtocol

/// The power save the host configured since the receiver booted.
struct PowerSaveConfiguration: Sendable, Hashable {
    /// CFG-PM2's parameters (nil: the receiver's default, cyclic tracking at 1 s).
    var pm2: UBXCfgPM2?
    /// CFG-PM-OPERATEMODE and CFG-PM-POSUPDATEPERIOD (s), as CFG-VALSET set them.
    var operateMode: UInt64 = 0
    var positionUpdatePeriod: UInt64 = 0
    /// The update period while power save is on; nil: continuous operation.
    var interval: Duration?
}

extension ReceiverMachine {
    /// Whether a configuration key is in the CFG-PM group (0xD0).
    static func isPowerSaveKey(_ key: UInt32) -> Bool { (key >> 16) & 0xFF == 0xD0 }

    /// Acknowledges a power-save command, or refuses it (faults); returns whether it is to be applied.
    mutating func answerPowerSave(_ id: UBX.MessageID, now: Duration, output: inout ReceiverOutput) -> Bool {
        if ignoreConfiguration { return false }
        let refused = rejectConfiguration || refusePowerSave
        send(refused ? UBXAck(id).nakFrame : UBXAck(id).ackFrame, now: now, output: &output)
        return !refused
    }

    mutating func handlePowerSave(_ message: UBXMessage, now: Duration, output: inout ReceiverOutput) {
        switch message {
        case .cfgPM2(let pm2):
            commands.append("CFG-PM2")
            guard answerPowerSave(.cfgPM2, now: now, output: &output) else { return }
            powerSave.pm2 = pm2
            if powerSave.interval != nil { enterPowerSave(every: pm2Interval, now: now) }
        case .cfgRXM(let rxm):
            commands.append("CFG-RXM \(rxm.lpMode)")
            switch rxm.lpMode {
            case UBXCfgRXM.continuous:
                guard answerPowerSave(.cfgRXM, now: now, output: &output) else { return }
                leavePowerSave(now: now)
            case UBXCfgRXM.powerSave:
                guard answerPowerSave(.cfgRXM, now: now, output: &output) else { return }
                enterPowerSave(every: pm2Interval, now: now)
            default:
                send(UBXAck(.cfgRXM).nakFrame, now: now, output: &output)
            }
        case .cfgPMS(let pms):
            commands.append("CFG-PMS \(pms.powerSetupValue)")
            let interval: Duration?
            switch pms.preset {
            case .fullPower: interval = nil
            case .balanced, .aggressive1Hz: interval = .seconds(1)
            case .aggressive2Hz: interval = .milliseconds(500)
            case .aggressive4Hz: interval = .milliseconds(250)
            case .interval where pms.period > 0: interval = .seconds(Int(pms.period))
            case .interval, .invalid, .other:
                send(UBXAck(.cfgPMS).nakFrame, now: now, output: &output)
                return
            }
            guard answerPowerSave(.cfgPMS, now: now, output: &output) else { return }
            if let interval { enterPowerSave(every: interval, now: now) } else { leavePowerSave(now: now) }
        default:
            return
        }
    }

    /// The update period CFG-PM2 asks for: ON/OFF's update period, cyclic tracking's (or the navigation rate).
    var pm2Interval: Duration {
        guard let pm2 = powerSave.pm2 else { return .seconds(1) }
        return pm2.updatePeriod > 0 ? .milliseconds(Int(pm2.updatePeriod)) : period
    }

    /// After a CFG-VALSET that set CFG-PM keys: OPERATEMODE 1 (ON/OFF) at POSUPDATEPERIOD, 2 (cyclic
    /// tracking) at the navigation rate, 0 off.
    mutating func applyPowerSaveKeys(now: Duration) {
        switch powerSave.operateMode {
        case UBXConfigItem.PowerOperateMode.onOff.rawValue:
            let seconds = powerSave.positionUpdatePeriod
            enterPowerSave(every: seconds > 0 ? .seconds(Int(clamping: seconds)) : period, now: now)
        case UBXConfigItem.PowerOperateMode.cyclicTracking.rawValue:
            enterPowerSave(every: period, now: now)
        default:
            leavePowerSave(now: now)
        }
    }

    /// `$PMTK225`: periodic modes enter power save at run + sleep, 0 leaves it, 4 is perpetual backup.
    mutating func handlePeriodicMode(_ message: PMTKMessage, now: Duration, output: inout ReceiverOutput) {
        func ack(_ flag: Int) {
            send(PMTKMessage.ack(command: PMTKPeriodicMode.number, flag: flag).sentence(), now: now, output: &output)
        }
        guard let periodic = PMTKPeriodicMode(message) else { return ack(0) }
        switch periodic.mode {
        case .perpetualBackup:
            ack(3)
            enter(.perpetualBackup, now: now)
        case .normal:
            ack(3)
            leavePowerSave(now: now)
        case .periodicBackup, .periodicStandby:
            guard let times = periodic.times, times.run > 0, times.sleep >= 0 else { return ack(0) }
            if ignoreConfiguration { return }
            if refusePowerSave { return ack(1) }
            if rejectConfiguration { return ack(2) }
            ack(3)
            enterPowerSave(every: .milliseconds(times.run + times.sleep), now: now)
        case .alwaysLocateStandby, .alwaysLocateBackup:
            if refusePowerSave { return ack(1) }
            // The receiver picks its own rhythm: not modelled beyond the acknowledgement.
            ack(3)
        }
    }

    /// Power save on at `interval`: at once when tracking, at the first fix when still acquiring.
    mutating func enterPowerSave(every interval: Duration, now: Duration) {
        powerSave.interval = max(interval, .milliseconds(25))
        guard mode == .tracking || mode == .powerSave else { return }
        enter(.powerSave, now: now)
        nextEpoch = gridAfter(now)
    }

    mutating func leavePowerSave(now: Duration) {
        powerSave.interval = nil
        guard mode == .powerSave else { return }
        enter(.tracking, now: now)
        nextEpoch = gridAfter(now)
    }
}
