// The receiver's own power save, for a wanted fix interval: the commands that enter and leave it for a
// chip family, and the negotiation that sends them one by one and reads the replies (an ACK: on to the
// next; a NAK or silence: refused, and the power plan falls back to the duty cycle). Pure values: no I/O,
// no clock (times are offsets on the caller's monotonic clock).
//
// u-blox 8: CFG-PM2 (ON/OFF operation for intervals of 10 s and more, cyclic tracking below), then CFG-RXM
// lpMode 1 (power save); leaving is CFG-RXM lpMode 0. u-blox 9 and M10: CFG-VALSET of CFG-PM-OPERATEMODE
// (PSMOO with CFG-PM-POSUPDATEPERIOD and CFG-PM-ACQPERIOD, or PSMCT at the navigation rate); leaving sets
// OPERATEMODE 0. (The ZED-F9P has no power save and some MAX-M10S firmware refuses it: both NAK.) MTK:
// `$PMTK225,2,run,sleep,secondRun,secondSleep` (periodic standby); leaving is `$PMTK225,0`.
public import GNSSProtocol

/// One command of a power-save plan and the reply that accepts it.
public struct PowerSaveCommand: Hashable, Sendable {
    public enum Reply: Hashable, Sendable {
        /// UBX ACK-ACK (or ACK-NAK) for this message.
        case ubx(UBX.MessageID)
        /// `$PMTK001,number,3` (any other flag refuses).
        case pmtk(Int)
    }

    public var bytes: [UInt8]
    public var reply: Reply

    public init(bytes: [UInt8], reply: Reply) {
        self.bytes = bytes
        self.reply = reply
    }
}

/// The commands that put a receiver into its own power save for a fix interval, and take it out again.
public struct PowerSaveCommands: Hashable, Sendable {
    public var enter: [PowerSaveCommand]
    public var leave: [PowerSaveCommand]

    /// Intervals from this up use ON/OFF operation (the receiver off between fixes); shorter ones cyclic
    /// tracking. u-blox's guidance: ON/OFF for periods of about 10 s and more.
    public static let onOffThreshold = Duration.seconds(10)
    /// MTK: how long each periodic run lasts, and the longer run after a failed acquisition (to collect
    /// ephemeris). GlobalTop's example uses 3 s and 18 s; a run long enough for a hot fix is the point.
    public static let mtkRun = 5_000
    public static let mtkSecondRun = 30_000

    public init(enter: [PowerSaveCommand], leave: [PowerSaveCommand]) {
        self.enter = enter
        self.leave = leave
    }

    /// The commands for `family` and a fix every `interval`, or nil when the family has no power save
    /// for it (an interval under a second; MTK: not longer than one run). `protocolVersion` picks CFG-PM2's
    /// form on u-blox 8 (48 bytes from protocol 23, 44 before).
    public static func plan(family: Board.ChipFamily, interval: Duration, protocolVersion: Double? = nil)
        -> PowerSaveCommands?
    {
        let milliseconds = interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000
        guard milliseconds >= 1000 else { return nil }
        let onOff = interval >= onOffThreshold
        switch family {
        case .ubloxGen8:
            var pm2 = UBXCfgPM2(
                version: (protocolVersion ?? 18) >= 23 ? 2 : 1, flags: UBXCfgPM2.updateEphemeris,
                updatePeriod: UInt32(clamping: onOff ? milliseconds : 1000),
                searchPeriod: UInt32(clamping: milliseconds),
                onTime: 0, minAcqTime: 0, extintInactivity: (protocolVersion ?? 18) >= 23 ? 0 : nil)
            pm2.mode = onOff ? .onOff : .cyclicTracking
            return PowerSaveCommands(
                enter: [
                    PowerSaveCommand(bytes: pm2.frame, reply: .ubx(.cfgPM2)),
                    PowerSaveCommand(bytes: UBXCfgRXM(lpMode: UBXCfgRXM.powerSave).frame, reply: .ubx(.cfgRXM)),
                ],
                leave: [PowerSaveCommand(bytes: UBXCfgRXM(lpMode: 0).frame, reply: .ubx(.cfgRXM))])
        case .ubloxGen9, .ubloxM10:
            let seconds = UInt64(milliseconds / 1000)
            var items = [
                UBXConfigItem(
                    key: UBXConfigItem.pmOperateMode,
                    value: (onOff ? UBXConfigItem.PowerOperateMode.onOff : .cyclicTracking).rawValue)
            ]
            if onOff {
                items += [
                    UBXConfigItem(key: UBXConfigItem.pmPosUpdatePeriod, value: seconds),
                    UBXConfigItem(key: UBXConfigItem.pmAcqPeriod, value: seconds),
                ]
            }
            let full = UBXConfigItem(
                key: UBXConfigItem.pmOperateMode, value: UBXConfigItem.PowerOperateMode.full.rawValue)
            return PowerSaveCommands(
                enter: [PowerSaveCommand(bytes: UBXCfgValSet(items: items).frame, reply: .ubx(.cfgVALSET))],
                leave: [PowerSaveCommand(bytes: UBXCfgValSet(items: [full]).frame, reply: .ubx(.cfgVALSET))])
        case .mtk:
            let total = Int(clamping: milliseconds)
            guard total > mtkRun else { return nil }
            let sleep = total - mtkRun
            let mode = PMTKPeriodicMode.periodicStandby(
                run: mtkRun, sleep: sleep, secondRun: mtkSecondRun, secondSleep: sleep)
            return PowerSaveCommands(
                enter: [PowerSaveCommand(bytes: mode.sentence, reply: .pmtk(PMTKPeriodicMode.number))],
                leave: [
                    PowerSaveCommand(
                        bytes: PMTKPeriodicMode(mode: .normal).sentence, reply: .pmtk(PMTKPeriodicMode.number))
                ])
        }
    }
}

/// Sends a list of power-save commands one at a time and reads the replies: every command acknowledged
/// is ``Outcome/active``; a NAK, a PMTK001 flag other than 3, or no reply within the time-out is
/// ``Outcome/refused(_:)`` and the rest is not sent.
public struct PowerSaveNegotiation: Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Every command was acknowledged.
        case active
        /// The receiver refused one (or did not answer): the reason, for the plan's explanation.
        case refused(String)
    }

    public enum Action: Hashable, Sendable {
        case send([UInt8])
        /// Call ``timerFired(generation:now:)`` at `deadline` (one timer; a new one replaces the old).
        case armTimer(generation: UInt64, deadline: Duration)
        case finish(Outcome)
    }

    private var commands: [PowerSaveCommand]
    private var current: PowerSaveCommand?
    private var generation: UInt64 = 0
    public let timeout: Duration
    public private(set) var isFinished = false

    public init(commands: [PowerSaveCommand], timeout: Duration = .seconds(1)) {
        self.commands = commands
        self.timeout = timeout
    }

    public mutating func start(now: Duration) -> [Action] {
        guard current == nil, !isFinished else { return [] }
        return next(now: now)
    }

    public mutating func received(_ message: Message, now: Duration) -> [Action] {
        guard let current else { return [] }
        switch (current.reply, message) {
        case (.ubx(let id), .ubx(.ack(let ack))) where ack.acknowledged == id:
            return next(now: now)
        case (.ubx(let id), .ubx(.nak(let nak))) where nak.acknowledged == id:
            return finish(.refused("\(id) was refused (ACK-NAK)"))
        case (.pmtk(let number), .nmea(.pmtk(let pmtk))):
            guard let (command, flag) = pmtk.acknowledgement, command == number else { return [] }
            return flag == .succeeded ? next(now: now) : finish(.refused("PMTK\(number): \(flag)"))
        default:
            return []
        }
    }

    public mutating func timerFired(generation fired: UInt64, now: Duration) -> [Action] {
        guard fired == generation, let current else { return [] }
        let name: String
        switch current.reply {
        case .ubx(let id): name = "\(id)"
        case .pmtk(let number): name = "PMTK\(number)"
        }
        return finish(.refused("no reply to \(name) within \(timeout)"))
    }

    private mutating func next(now: Duration) -> [Action] {
        guard !commands.isEmpty else { return finish(.active) }
        let command = commands.removeFirst()
        current = command
        generation += 1
        return [.send(command.bytes), .armTimer(generation: generation, deadline: now + timeout)]
    }

    private mutating func finish(_ outcome: Outcome) -> [Action] {
        current = nil
        isFinished = true
        generation += 1
        return [.finish(outcome)]
    }
}
