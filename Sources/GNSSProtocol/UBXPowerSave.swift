// UBX power save: u-blox 8's UBX-CFG-RXM (low-power mode), UBX-CFG-PM2 (its parameters) and
// UBX-CFG-PMS (presets); UBX-CFG-NAVX5, whose `ackAiding` makes a u-blox 8 acknowledge aiding
// messages; and the configuration keys u-blox 9 and M10 take for the same by CFG-VALSET.
//
// Layouts from the u-blox 8 / M8 receiver description (UBX-13003221) as pyubx2 1.4.0 spells them, and
// u-blox's ubxlib (gnss/src/u_gnss_pwr.c: "44 bytes for the version 1 message or the full 48 for the
// version 2 message" of CFG-PM2; gnss/src/u_gnss_mga.c: CFG-NAVX5 mask1 bit 10 and `ackAiding` at
// offset 17, CFG-NAVSPG-ACKAIDING for receivers with the configuration database).

extension UBX.MessageID {
    public static let cfgRXM = UBX.MessageID(0x06, 0x11)
    public static let cfgNAVX5 = UBX.MessageID(0x06, 0x23)
    public static let cfgPM2 = UBX.MessageID(0x06, 0x3B)
    public static let cfgPMS = UBX.MessageID(0x06, 0x86)
}

// MARK: - CFG-RXM

/// UBX-CFG-RXM (06 11, 2 bytes): the receiver's low-power mode (u-blox 8; deprecated on later ones).
public struct UBXCfgRXM: Hashable, Sendable {
    public static let messageID = UBX.MessageID.cfgRXM

    /// `lpMode` values.
    public static let continuous: UInt8 = 0
    public static let powerSave: UInt8 = 1

    /// Reserved; u-blox says to set it to 8.
    public var reserved: UInt8
    /// 0 continuous, 1 power save (the parameters of CFG-PM2 apply).
    public var lpMode: UInt8

    public init(lpMode: UInt8, reserved: UInt8 = 8) {
        self.lpMode = lpMode
        self.reserved = reserved
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 2 else { throw .ubxLength(messageClass: 0x06, id: 0x11, length: p.count) }
        self.init(lpMode: p.u8(1), reserved: p.u8(0))
    }

    public var payload: [UInt8] { [reserved, lpMode] }
    public var frame: [UInt8] { UBX.frame(.cfgRXM, payload: payload) }
}

// MARK: - CFG-PM2

/// UBX-CFG-PM2 (06 3B): power save parameters, in force while CFG-RXM says power save (u-blox 8).
///
/// Version 1 is 44 bytes; version 2 adds `extintInactivityMs` (48 bytes). A u-blox 8 answers a poll
/// with the form it knows; ``extintInactivity`` is `nil` for the 44-byte form.
public struct UBXCfgPM2: Hashable, Sendable {
    public static let messageID = UBX.MessageID.cfgPM2

    /// How the receiver saves power (`mode`, flags bits 17-18).
    public enum Mode: UInt32, Hashable, Sendable {
        /// ON/OFF operation: off between fixes (update periods of ten seconds and more).
        case onOff = 0
        /// Cyclic tracking: tracks at a low duty cycle (update periods of about 1-10 s).
        case cyclicTracking = 1
    }

    public var version: UInt8
    /// Longest time in the acquisition state before it gives up, seconds (0: no limit).
    public var maxStartupStateDur: UInt8
    /// Bit field: optTarget b1-3, extintSel b4, extintWake b5, extintBackup b6, extintInactive b7,
    /// limitPeakCurr b8-9, waitTimeFix b10, updateRTC b11, updateEPH b12, doNotEnterOff b16, mode b17-18.
    public var flags: UInt32
    /// Time between position fixes, ms (0: as fast as the navigation rate, cyclic tracking only).
    public var updatePeriod: UInt32
    /// Time between acquisition attempts when the receiver could not get a fix, ms.
    public var searchPeriod: UInt32
    /// Offset of the update grid relative to the GPS week start, ms.
    public var gridOffset: UInt32
    /// Time to stay in tracking after a fix (ON/OFF), s.
    public var onTime: UInt16
    /// Minimum time in acquisition, s.
    public var minAcqTime: UInt16
    /// Version 2 only: inactivity time-out on EXTINT, ms.
    public var extintInactivity: UInt32?

    public init(
        version: UInt8, maxStartupStateDur: UInt8 = 0, flags: UInt32, updatePeriod: UInt32, searchPeriod: UInt32,
        gridOffset: UInt32 = 0, onTime: UInt16, minAcqTime: UInt16, extintInactivity: UInt32? = nil
    ) {
        self.version = version
        self.maxStartupStateDur = maxStartupStateDur
        self.flags = flags
        self.updatePeriod = updatePeriod
        self.searchPeriod = searchPeriod
        self.gridOffset = gridOffset
        self.onTime = onTime
        self.minAcqTime = minAcqTime
        self.extintInactivity = extintInactivity
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 44 || p.count == 48 else {
            throw .ubxLength(messageClass: 0x06, id: 0x3B, length: p.count)
        }
        self.init(
            version: p.u8(0), maxStartupStateDur: p.u8(2), flags: p.u32(4), updatePeriod: p.u32(8),
            searchPeriod: p.u32(12), gridOffset: p.u32(16), onTime: p.u16(20), minAcqTime: p.u16(22),
            extintInactivity: p.count == 48 ? p.u32(44) : nil)
    }

    // Flag bits, named as u-blox names them.
    public static let extintSelect: UInt32 = 1 << 4
    public static let extintWake: UInt32 = 1 << 5
    public static let extintBackup: UInt32 = 1 << 6
    public static let extintInactive: UInt32 = 1 << 7
    public static let waitTimeFix: UInt32 = 1 << 10
    public static let updateRTC: UInt32 = 1 << 11
    public static let updateEphemeris: UInt32 = 1 << 12
    public static let doNotEnterOff: UInt32 = 1 << 16

    /// ON/OFF or cyclic tracking (flags bits 17-18; the reserved values read as cyclic tracking).
    public var mode: Mode {
        get { (flags >> 17) & 0x3 == 0 ? .onOff : .cyclicTracking }
        set { flags = (flags & ~(0x3 << 17)) | (newValue.rawValue << 17) }
    }

    /// Optimisation target (flags bits 1-3): 0 performance, 1 power save.
    public var optimisationTarget: UInt8 {
        get { UInt8((flags >> 1) & 0x7) }
        set { flags = (flags & ~(0x7 << 1)) | ((UInt32(newValue) & 0x7) << 1) }
    }

    /// Peak current limit (flags bits 8-9): 0 disabled, 1 enabled.
    public var limitPeakCurrent: UInt8 {
        get { UInt8((flags >> 8) & 0x3) }
        set { flags = (flags & ~(0x3 << 8)) | ((UInt32(newValue) & 0x3) << 8) }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 48)
        w.u8(version)
        w.u8(0)
        w.u8(maxStartupStateDur)
        w.u8(0)
        w.u32(flags)
        w.u32(updatePeriod)
        w.u32(searchPeriod)
        w.u32(gridOffset)
        w.u16(onTime)
        w.u16(minAcqTime)
        w.zeros(20)
        if let extintInactivity { w.u32(extintInactivity) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgPM2, payload: payload) }
}

// MARK: - CFG-PMS

/// UBX-CFG-PMS (06 86, 8 bytes): a power mode preset (u-blox 8 from protocol 18).
public struct UBXCfgPMS: Hashable, Sendable {
    public static let messageID = UBX.MessageID.cfgPMS

    /// `powerSetupValue`.
    public enum Preset: Hashable, Sendable {
        case fullPower
        case balanced
        /// Off between fixes every ``UBXCfgPMS/period`` seconds, on for ``UBXCfgPMS/onTime``.
        case interval
        case aggressive1Hz
        case aggressive2Hz
        case aggressive4Hz
        /// 0xFF: the receiver reports a configuration no preset describes.
        case invalid
        case other(UInt8)

        public init(rawValue: UInt8) {
            switch rawValue {
            case 0: self = .fullPower
            case 1: self = .balanced
            case 2: self = .interval
            case 3: self = .aggressive1Hz
            case 4: self = .aggressive2Hz
            case 5: self = .aggressive4Hz
            case 0xFF: self = .invalid
            default: self = .other(rawValue)
            }
        }

        public var rawValue: UInt8 {
            switch self {
            case .fullPower: 0
            case .balanced: 1
            case .interval: 2
            case .aggressive1Hz: 3
            case .aggressive2Hz: 4
            case .aggressive4Hz: 5
            case .invalid: 0xFF
            case .other(let value): value
            }
        }
    }

    public var version: UInt8
    public var powerSetupValue: UInt8
    /// Interval preset only (else 0): position update period and on time, seconds.
    public var period: UInt16
    public var onTime: UInt16

    public init(version: UInt8 = 0, preset: Preset, period: UInt16 = 0, onTime: UInt16 = 0) {
        self.version = version
        self.powerSetupValue = preset.rawValue
        self.period = period
        self.onTime = onTime
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 8 else { throw .ubxLength(messageClass: 0x06, id: 0x86, length: p.count) }
        self.init(version: p.u8(0), preset: Preset(rawValue: p.u8(1)), period: p.u16(2), onTime: p.u16(4))
    }

    public var preset: Preset { Preset(rawValue: powerSetupValue) }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 8)
        w.u8(version)
        w.u8(powerSetupValue)
        w.u16(period)
        w.u16(onTime)
        w.zeros(2)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgPMS, payload: payload) }
}

// MARK: - CFG-NAVX5

/// UBX-CFG-NAVX5 (06 23, 40 bytes): navigation engine expert settings (u-blox 8). Only the fields whose
/// bit is set in ``mask1`` / ``mask2`` are applied; GNSSHat sends it to turn ``ackAiding`` on.
public struct UBXCfgNavX5: Hashable, Sendable {
    public static let messageID = UBX.MessageID.cfgNAVX5

    /// mask1 bit 10: apply ``ackAiding``.
    public static let applyAckAiding: UInt16 = 1 << 10

    public var version: UInt16
    public var mask1: UInt16
    public var mask2: UInt32
    public var minSVs: UInt8
    public var maxSVs: UInt8
    /// dBHz.
    public var minCNO: UInt8
    public var iniFix3D: UInt8
    /// 1: acknowledge every aiding (MGA) message with UBX-MGA-ACK.
    public var ackAiding: UInt8
    public var wknRollover: UInt16
    public var sigAttenCompMode: UInt8
    public var usePPP: UInt8
    /// AssistNow Autonomous (bit 0).
    public var aopCfg: UInt8
    /// Metres.
    public var aopOrbMaxErr: UInt16
    public var useAdr: UInt8

    public init(
        version: UInt16 = 0, mask1: UInt16, mask2: UInt32 = 0, minSVs: UInt8 = 0, maxSVs: UInt8 = 0,
        minCNO: UInt8 = 0, iniFix3D: UInt8 = 0, ackAiding: UInt8 = 0, wknRollover: UInt16 = 0,
        sigAttenCompMode: UInt8 = 0, usePPP: UInt8 = 0, aopCfg: UInt8 = 0, aopOrbMaxErr: UInt16 = 0,
        useAdr: UInt8 = 0
    ) {
        self.version = version
        self.mask1 = mask1
        self.mask2 = mask2
        self.minSVs = minSVs
        self.maxSVs = maxSVs
        self.minCNO = minCNO
        self.iniFix3D = iniFix3D
        self.ackAiding = ackAiding
        self.wknRollover = wknRollover
        self.sigAttenCompMode = sigAttenCompMode
        self.usePPP = usePPP
        self.aopCfg = aopCfg
        self.aopOrbMaxErr = aopOrbMaxErr
        self.useAdr = useAdr
    }

    /// Turns acknowledgements of aiding messages on (or off), changing nothing else.
    public static func ackAiding(_ on: Bool) -> UBXCfgNavX5 {
        UBXCfgNavX5(mask1: applyAckAiding, ackAiding: on ? 1 : 0)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 40 else { throw .ubxLength(messageClass: 0x06, id: 0x23, length: p.count) }
        self.init(
            version: p.u16(0), mask1: p.u16(2), mask2: p.u32(4), minSVs: p.u8(10), maxSVs: p.u8(11),
            minCNO: p.u8(12), iniFix3D: p.u8(14), ackAiding: p.u8(17), wknRollover: p.u16(18),
            sigAttenCompMode: p.u8(20), usePPP: p.u8(26), aopCfg: p.u8(27), aopOrbMaxErr: p.u16(30),
            useAdr: p.u8(39))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 40)
        w.u16(version)
        w.u16(mask1)
        w.u32(mask2)
        w.zeros(2)
        w.u8(minSVs)
        w.u8(maxSVs)
        w.u8(minCNO)
        w.u8(0)
        w.u8(iniFix3D)
        w.zeros(2)
        w.u8(ackAiding)
        w.u16(wknRollover)
        w.u8(sigAttenCompMode)
        w.zeros(5)
        w.u8(usePPP)
        w.u8(aopCfg)
        w.zeros(2)
        w.u16(aopOrbMaxErr)
        w.zeros(7)
        w.u8(useAdr)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgNAVX5, payload: payload) }
}

// MARK: - Configuration keys (u-blox 9 and M10, by CFG-VALSET)

extension UBXConfigItem {
    /// CFG-PM-OPERATEMODE values (E1).
    public enum PowerOperateMode: UInt64, Hashable, Sendable {
        /// Normal operation, no power save.
        case full = 0
        /// PSMOO: ON/OFF operation (periods of tens of seconds and more; RAM is cleared while off).
        case onOff = 1
        /// PSMCT: cyclic tracking (periods of about 0.5-10 s).
        case cyclicTracking = 2
    }

    // CFG-PM-*: power management (key ids from pyubx2's configuration database and ubxlib).
    /// U4, s: position update period (0: no periodic updates).
    public static let pmPosUpdatePeriod: UInt32 = 0x40D0_0002
    /// U4, s: acquisition retry period after a failed acquisition.
    public static let pmAcqPeriod: UInt32 = 0x40D0_0003
    /// U4, s: offset of the update grid from the GPS week start.
    public static let pmGridOffset: UInt32 = 0x40D0_0004
    /// U2, s: time to stay in tracking after a fix.
    public static let pmOnTime: UInt32 = 0x30D0_0005
    /// U1, s: minimum acquisition time.
    public static let pmMinAcqTime: UInt32 = 0x20D0_0006
    /// U1, s: maximum acquisition time (u-blox warns that under about 45 s hurts ephemeris collection).
    public static let pmMaxAcqTime: UInt32 = 0x20D0_0007
    /// L: stay on (tracking) instead of entering the off state between fixes.
    public static let pmDoNotEnterOff: UInt32 = 0x10D0_0008
    /// L: wait for a time fix before entering power save.
    public static let pmWaitTimeFix: UInt32 = 0x10D0_0009
    /// L: wake to update the ephemeris.
    public static let pmUpdateEph: UInt32 = 0x10D0_000A
    /// E1: which EXTINT pin (0 EXTINT0, 1 EXTINT1).
    public static let pmExtintSel: UInt32 = 0x20D0_000B
    /// L: EXTINT high keeps the receiver awake.
    public static let pmExtintWake: UInt32 = 0x10D0_000C
    /// L: EXTINT low puts it into backup.
    public static let pmExtintBackup: UInt32 = 0x10D0_000D
    /// L: EXTINT inactivity puts it into backup.
    public static let pmExtintInactive: UInt32 = 0x10D0_000E
    /// U4, ms: EXTINT inactivity time-out.
    public static let pmExtintInactivity: UInt32 = 0x40D0_000F
    /// L: limit the peak current.
    public static let pmLimitPeakCurr: UInt32 = 0x10D0_0010
    /// L: acknowledge every aiding (MGA) message with UBX-MGA-ACK (CFG-NAVSPG-ACKAIDING).
    public static let navspgAckAiding: UInt32 = 0x1011_0025
}
