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
