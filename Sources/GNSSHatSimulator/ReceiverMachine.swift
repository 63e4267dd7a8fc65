// The simulated receiver as a plain value changed under its lock: lines, host bytes, faults and time go
// in; what it sends (bytes and PPS pulses) comes out in a ReceiverOutput. Modes and time here; what
// it sends in ReceiverMachineOutput.swift; commands in ReceiverMachineCommands.swift.
import GNSSHat
import GNSSProtocol
import LinuxSystem

/// The simulated receiver's state and behaviour: a plain value, changed under the receiver's lock.
struct ReceiverMachine: Sendable {
    let settings: SimulatedReceiver.Settings
    var mode: SimulatedReceiver.Mode = .off
    var modeSince: Duration = .zero
    var timeIn: [SimulatedReceiver.Mode: Duration] = [:]
    /// Every change of mode, oldest first (the most recent `modeRecordLimit`): the receiver's own record
    /// of when it was powered, against which what the host reports can be checked.
    var modeChanges: [SimulatedReceiver.ModeChange] = []
    static let modeRecordLimit = 10_000
    var mainPower = false
    var reset = false
    var standbyLine = false
    var forceOnLine = false
    var extintLine = false
    var bootUntil: Duration?
    var fixAt: Duration?
    var nextEpoch: Duration?
    var ephemerisUntil: Duration?
    var pendingStart: SimulatedReceiver.Start = .cold
    var starts: [SimulatedReceiver.Start] = []
    var period: Duration
    var ubxOutput: Set<UBX.MessageID> = []
    var nmeaOutput = true
    var mtkRates = PMTK.SentenceRates()
    var backupWake: UBXRxmPmReq.WakeSources = []
    var backupUntil: Duration?
    var stallUntil: Duration?
    var silent = false
    var rejectConfiguration = false
    var ignoreConfiguration = false
    var corruptFrames = 0
    /// What the host sends, decoded (only its messages matter here).
    var intake = GNSSDecoder()
    var random: SeededGenerator
    var epochsSent = 0
    var fixesSent = 0
    var commands: [String] = []
    var ppsSequence: UInt64 = 0
    var replayOffset = 0
    /// When this start's first fix came (the accuracy improves from it); nil before it.
    var firstFixAt: Duration?
    // Aiding (ReceiverMachineAiding.swift).
    /// Whether the receiver holds an almanac and position worth dumping (kept in backup RAM like the ephemeris).
    var almanac = false
    /// MGA-ACK for every aiding message (CFG-NAVX5 ackAiding, CFG-NAVSPG-ACKAIDING); lost at boot.
    var ackAiding = false
    /// What aiding arrived since this boot.
    var aiding = AidingIntake()
    var aidingCounts = SimulatedReceiver.AidingCounts()
    var corruptNextDump = false
    // Power save (ReceiverMachinePowerSave.swift).
    var powerSave = PowerSaveConfiguration()
    var refusePowerSave = false
    // RTK (ReceiverMachineRTK.swift).
    var rtk = RTKIntake()

    init(settings: SimulatedReceiver.Settings) {
        self.settings = settings
        period = settings.period
        random = SeededGenerator(seed: settings.seed)
    }

    var isUBlox: Bool {
        if case .ublox = settings.dialect { return true }
        return false
    }

    var protocolVersion: Double {
        if case .ublox(let version) = settings.dialect { return version }
        return 0
    }

    // MARK: Mode changes

    mutating func enter(_ newMode: SimulatedReceiver.Mode, now: Duration) {
        guard newMode != mode else { return }
        timeIn[mode, default: .zero] += now - modeSince
        modeSince = now
        mode = newMode
        if modeChanges.count == Self.modeRecordLimit { modeChanges.removeFirst(Self.modeRecordLimit / 10) }
        modeChanges.append(SimulatedReceiver.ModeChange(at: now, mode: newMode))
        if !newMode.isNavigating { nextEpoch = nil }
    }

    /// Powered up, or woken: boot messages after the boot time, then acquisition, cold or hot.
    mutating func boot(now: Duration) {
        let hot = ephemerisUntil.map { now < $0 } ?? false
        pendingStart = hot ? .hot : .cold
        if !hot { ephemerisUntil = nil }
        // Configuration lives in RAM: a power cycle or a backup wake-up loses it.
        ubxOutput = []
        nmeaOutput = true
        mtkRates = PMTK.SentenceRates()
        period = settings.period
        ackAiding = false
        aiding = AidingIntake()
        powerSave = PowerSaveConfiguration()
        firstFixAt = nil
        // The configuration and the corrections' state go; the counts stay (for tests).
        let counts = (rtk.used, rtk.notUsed, rtk.crcFailed)
        rtk = RTKIntake()
        (rtk.used, rtk.notUsed, rtk.crcFailed) = counts
        intake.reset()
        bootUntil = now + settings.simulation.boot
        enter(.booting, now: now)
    }

    /// Resumes navigation without a reboot (GNSS start, MTK wake-up): the ephemeris is kept.
    mutating func resume(now: Duration) {
        let hot = ephemerisUntil.map { now < $0 } ?? false
        starts.append(hot ? .hot : .cold)
        fixAt = now + (hot ? settings.simulation.hotStart : settings.simulation.coldStart)
        firstFixAt = nil
        enter(.acquiring, now: now)
        nextEpoch = gridAfter(now)
    }

    /// The main supply is cut: without a backup supply the ephemeris, almanac, time and position go too.
    mutating func powerLoss(now: Duration) {
        if !settings.simulation.backupSupply {
            ephemerisUntil = nil
            almanac = false
        }
        bootUntil = nil
        backupUntil = nil
        enter(.off, now: now)
    }

    mutating func setMainPower(_ on: Bool, now: Duration, output: inout ReceiverOutput) {
        guard on != mainPower else { return }
        mainPower = on
        if !on {
            powerLoss(now: now)
        } else if !reset {
            boot(now: now)
        }
    }

    mutating func setReset(_ asserted: Bool, now: Duration, output: inout ReceiverOutput) {
        guard asserted != reset else { return }
        reset = asserted
        guard mainPower else { return }
        if asserted {
            bootUntil = nil
            enter(.off, now: now)
        } else {
            boot(now: now)
        }
    }

    mutating func setStandby(_ asserted: Bool, now: Duration, output: inout ReceiverOutput) {
        guard asserted != standbyLine else { return }
        standbyLine = asserted
        guard mainPower, !reset else { return }
        if asserted, mode == .acquiring || mode == .tracking || mode == .powerSave {
            enter(.standby, now: now)
        } else if !asserted, mode == .standby {
            wakeFromStandby(now: now, output: &output)
        }
    }

    mutating func setForceOn(_ asserted: Bool, now: Duration, output: inout ReceiverOutput) {
        guard asserted != forceOnLine else { return }
        forceOnLine = asserted
        if asserted, mainPower, mode == .perpetualBackup { boot(now: now) }
    }

    mutating func setExtint(_ asserted: Bool, now: Duration, output: inout ReceiverOutput) {
        guard asserted != extintLine else { return }
        extintLine = asserted
        if asserted, mode == .backup, backupWake.contains(.extint0) { boot(now: now) }
    }

    mutating func wakeFromStandby(now: Duration, output: inout ReceiverOutput) {
        resume(now: now)
        send(PMTKMessage.system(message: 2).sentence(), now: now, output: &output)
    }

    // MARK: Time

    /// The epoch after `time` on the grid of the output period (the power save's update period in power save).
    func gridAfter(_ time: Duration) -> Duration {
        let step = mode == .powerSave ? (powerSave.interval ?? period) : period
        let periodNanos = max(step.clampedNanoseconds, 1_000_000)
        let nanos = time.clampedNanoseconds
        return .nanoseconds((nanos / periodNanos + 1) * periodNanos)
    }

    func nextDeadline() -> Duration? {
        var candidates: [Duration] = []
        if mode == .booting, let bootUntil { candidates.append(bootUntil) }
        if mode == .acquiring || mode == .tracking || mode == .powerSave, let nextEpoch {
            candidates.append(nextEpoch)
        }
        if mode == .backup, let backupUntil { candidates.append(backupUntil) }
        return candidates.min()
    }

    /// Handles everything due by `now`: the end of a boot, a backup duration, navigation
    /// epochs (only the latest of several missed ones is sent, as a receiver would).
    mutating func advance(to now: Duration, output: inout ReceiverOutput) {
        if mode == .booting, let until = bootUntil, until <= now {
            bootUntil = nil
            starts.append(pendingStart)
            fixAt = until + (pendingStart == .hot ? settings.simulation.hotStart : settings.simulation.coldStart)
            enter(.acquiring, now: until)
            sendBootMessages(now: until, output: &output)
            nextEpoch = gridAfter(until)
        }
        if mode == .backup, let until = backupUntil, until <= now {
            backupUntil = nil
            boot(now: until)
            advance(to: now, output: &output)
            return
        }
        guard mode == .acquiring || mode == .tracking || mode == .powerSave, let due = nextEpoch, due <= now
        else { return }
        var epoch = due
        while gridAfter(epoch) <= now { epoch = gridAfter(epoch) }
        nextEpoch = gridAfter(epoch)
        sendEpoch(at: epoch, output: &output)
    }

    // MARK: Faults

    mutating func inject(_ fault: SimulatedReceiver.Fault, now: Duration, output: inout ReceiverOutput) {
        switch fault {
        case .garbage(let count):
            guard mode.isNavigating || mode == .gnssStopped, !silent else { return }
            for _ in 0..<count { output.bytes.append(UInt8.random(in: 0...255, using: &random)) }
        case .corruptFrames(let count): corruptFrames += count
        case .stall(let duration): stallUntil = now + duration
        case .silent: silent = true
        case .rejectConfiguration: rejectConfiguration = true
        case .ignoreConfiguration: ignoreConfiguration = true
        case .corruptDatabaseRecord: corruptNextDump = true
        case .refusePowerSave: refusePowerSave = true
        }
    }

    mutating func clearFaults() {
        silent = false
        rejectConfiguration = false
        ignoreConfiguration = false
        corruptFrames = 0
        stallUntil = nil
        corruptNextDump = false
        refusePowerSave = false
    }
}
