// UBX receiver manager (class 02): RXM-PMREQ, the request that puts a receiver into backup or to sleep
// for a while (power save's configuration is in UBXPowerSave.swift).

/// UBX-RXM-PMREQ (02 41): power management request, in the 8-byte or the 16-byte (wake sources) form.
/// The receiver does not acknowledge it; any traffic on a wake source wakes it.
public struct UBXRxmPmReq: Hashable, Sendable {
    public struct WakeSources: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let uartRX = WakeSources(rawValue: 0x08)
        public static let extint0 = WakeSources(rawValue: 0x20)
        public static let extint1 = WakeSources(rawValue: 0x40)
        public static let spiCS = WakeSources(rawValue: 0x80)
    }

    /// Duration of the request, ms (0 = until woken).
    public var duration: UInt32
    /// backup b1, force b2.
    public var flags: UInt32
    /// Wake sources; `nil` selects the 8-byte form.
    public var wakeupSources: WakeSources?

    public static let flagBackup: UInt32 = 0x02
    public static let flagForce: UInt32 = 0x04

    public init(duration: UInt32, flags: UInt32, wakeupSources: WakeSources?) {
        self.duration = duration
        self.flags = flags
        self.wakeupSources = wakeupSources
    }

    /// Backup until woken, 8-byte form (`B5 62 02 41 08 00 00 00 00 00 02 00 00 00 4D 3B`).
    public static let backupUntilWoken = UBXRxmPmReq(duration: 0, flags: flagBackup, wakeupSources: nil)

    /// Backup until woken by the given sources (16-byte form, protocol 18+).
    public static func backup(wakeupSources: WakeSources, duration: UInt32 = 0, force: Bool = true) -> UBXRxmPmReq {
        UBXRxmPmReq(duration: duration, flags: flagBackup | (force ? flagForce : 0), wakeupSources: wakeupSources)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        switch p.count {
        case 8:
            self.init(duration: p.u32(0), flags: p.u32(4), wakeupSources: nil)
        case 16:
            guard p.u8(0) == 0 else { throw .ubxField(messageClass: 0x02, id: 0x41, offset: 0) }
            self.init(duration: p.u32(4), flags: p.u32(8), wakeupSources: WakeSources(rawValue: p.u32(12)))
        default:
            throw .ubxLength(messageClass: 0x02, id: 0x41, length: p.count)
        }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 16)
        if let wakeupSources {
            w.u8(0); w.zeros(3); w.u32(duration); w.u32(flags); w.u32(wakeupSources.rawValue)
        } else {
            w.u32(duration); w.u32(flags)
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.rxmPMREQ, payload: payload) }
}

/// UBX-RXM-RTCM (02 32): the receiver's word on one RTCM 3 message it received (protocol 20.01+,
/// output when `CFG-MSGOUT-UBX_RXM_RTCM_*` enables it): whether its CRC failed and whether the
/// navigation used it.
public struct UBXRxmRTCM: Hashable, Sendable {
    /// What the receiver did with the message (`flags` bits 1-2, `msgUsed`).
    public enum Use: UInt8, Hashable, Sendable {
        /// Not reported (older firmware).
        case unknown = 0
        /// Received, not used.
        case notUsed = 1
        /// Used by the navigation.
        case used = 2
    }

    /// Message version (0x02).
    public var version: UInt8
    /// crcFailed b0, msgUsed b1-2.
    public var flags: UInt8
    /// The sub-type of a 4072 message, else 0.
    public var subType: UInt16
    /// The reference station id the message carries (0 when none).
    public var refStation: UInt16
    /// The RTCM message number (1005, 1077, ...).
    public var msgType: UInt16

    public init(msgType: UInt16, refStation: UInt16, use: Use, crcFailed: Bool = false, subType: UInt16 = 0,
                version: UInt8 = 2) {
        self.version = version
        flags = (crcFailed ? 0x01 : 0) | use.rawValue << 1
        self.subType = subType
        self.refStation = refStation
        self.msgType = msgType
    }

    public var crcFailed: Bool { flags & 0x01 != 0 }
    public var use: Use { Use(rawValue: flags >> 1 & 0x03) ?? .unknown }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 8 else { throw .ubxLength(messageClass: 0x02, id: 0x32, length: p.count) }
        version = p.u8(0)
        flags = p.u8(1)
        subType = p.u16(2)
        refStation = p.u16(4)
        msgType = p.u16(6)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 8)
        w.u8(version); w.u8(flags); w.u16(subType); w.u16(refStation); w.u16(msgType)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.rxmRTCM, payload: payload) }
}
