// UBX configuration (class 06): the configuration database of u-blox 9 and M10 (CFG-VALSET, CFG-VALGET
// and their items) and the older per-message commands (CFG-MSG, CFG-PRT, CFG-RATE, CFG-RST). Power
// save's configuration messages are in UBXPowerSave.swift.

/// One configuration item of the gen 9 / M10 configuration database: a key id and its value.
/// Bits 28-30 of the key give the value's size (1 bit, 1, 2, 4 or 8 bytes).
public struct UBXConfigItem: Hashable, Sendable {
    public var key: UInt32
    /// The value's bits, zero-extended (signed and float values are their bit patterns).
    public var value: UInt64

    public init(key: UInt32, value: UInt64) {
        self.key = key
        self.value = value
    }

    /// Bytes the value takes on the wire, or `nil` for a size code u-blox does not define.
    public static func valueSize(key: UInt32) -> Int? {
        switch (key >> 28) & 0x7 {
        case 1, 2: return 1
        case 3: return 2
        case 4: return 4
        case 5: return 8
        default: return nil
        }
    }

    /// Well-known keys (gen 9 / M10).
    public static let rateMeas: UInt32 = 0x3021_0001
    public static let msgoutNavPVTI2C: UInt32 = 0x2091_0006
    public static let msgoutNavPVTUART1: UInt32 = 0x2091_0007
    public static let msgoutNavSATI2C: UInt32 = 0x2091_0015
    public static let uart1Baudrate: UInt32 = 0x4052_0001
    public static let pmOperateMode: UInt32 = 0x20D0_0001
    public static let hwAntCfgPwrdown: UInt32 = 0x10A3_0033
    /// RTCM 3 input on UART1 and on I2C (CFG-UART1INPROT-RTCM3X, CFG-I2CINPROT-RTCM3X; 1 bit).
    public static let uart1InputRTCM3: UInt32 = 0x1073_0004
    public static let i2cInputRTCM3: UInt32 = 0x1071_0004
    /// RXM-RTCM output rate on I2C and on UART1 (CFG-MSGOUT-UBX_RXM_RTCM_I2C, _UART1; U1).
    public static let rxmRTCMOutputI2C: UInt32 = 0x2091_0268
    public static let rxmRTCMOutputUART1: UInt32 = 0x2091_0269
    /// The differential corrections' timeout, seconds (CFG-NAVSPG-CONSTR_DGNSSTO; U1).
    public static let navspgDGNSSTimeout: UInt32 = 0x2011_00C4
    /// RTK float only (2) or fixed where it can (3) (CFG-NAVHPG-DGNSSMODE; E1).
    public static let navhpgDGNSSMode: UInt32 = 0x2014_0011

    static func decodeList(
        _ p: UnsafeRawBufferPointer, from start: Int, messageID: UBX.MessageID
    ) throws(DecodeError)
        -> [UBXConfigItem]
    {
        var items: [UBXConfigItem] = []
        var offset = start
        while offset < p.count {
            guard offset + 4 <= p.count else {
                throw .ubxLength(messageClass: messageID.messageClass, id: messageID.id, length: p.count)
            }
            let key = p.u32(offset)
            guard let size = valueSize(key: key) else {
                throw .ubxField(messageClass: messageID.messageClass, id: messageID.id, offset: offset)
            }
            guard offset + 4 + size <= p.count else {
                throw .ubxLength(messageClass: messageID.messageClass, id: messageID.id, length: p.count)
            }
            var value: UInt64 = 0
            for index in 0..<size { value |= UInt64(p.u8(offset + 4 + index)) << UInt64(8 * index) }
            items.append(UBXConfigItem(key: key, value: value))
            offset += 4 + size
        }
        return items
    }

    func append(to w: inout LittleEndianWriter) {
        w.u32(key)
        let size = UBXConfigItem.valueSize(key: key) ?? 1
        for index in 0..<size { w.u8(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }
}

/// Configuration layers of CFG-VALSET (a mask) and CFG-VALGET (one value).
public struct UBXConfigLayers: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let ram = UBXConfigLayers(rawValue: 0x01)
    public static let bbr = UBXConfigLayers(rawValue: 0x02)
    public static let flash = UBXConfigLayers(rawValue: 0x04)
}

/// UBX-CFG-VALSET (06 8A): set configuration items (protocol 27+; at most 64 items).
public struct UBXCfgValSet: Hashable, Sendable {
    public var version: UInt8
    public var layers: UBXConfigLayers
    /// Transaction action (version 1 only): 0 none, 1 begin, 2 continue, 3 apply.
    public var transaction: UInt8
    public var items: [UBXConfigItem]

    public init(layers: UBXConfigLayers = .ram, items: [UBXConfigItem], version: UInt8 = 0, transaction: UInt8 = 0) {
        self.version = version
        self.layers = layers
        self.transaction = transaction
        self.items = items
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 4 else { throw .ubxLength(messageClass: 0x06, id: 0x8A, length: p.count) }
        version = p.u8(0)
        layers = UBXConfigLayers(rawValue: p.u8(1))
        transaction = p.u8(2)
        items = try UBXConfigItem.decodeList(p, from: 4, messageID: .cfgVALSET)
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 4 + 12 * items.count)
        w.u8(version); w.u8(layers.rawValue); w.u8(transaction); w.u8(0)
        for item in items { item.append(to: &w) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgVALSET, payload: payload) }
}

/// UBX-CFG-VALGET (06 8B): a request (version 0, keys) or the receiver's response (version 1, items).
public enum UBXCfgValGet: Hashable, Sendable {
    /// Layer: 0 RAM, 1 BBR, 2 flash, 7 default.
    case request(layer: UInt8, position: UInt16, keys: [UInt32])
    case response(layer: UInt8, position: UInt16, items: [UBXConfigItem])

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 4 else { throw .ubxLength(messageClass: 0x06, id: 0x8B, length: p.count) }
        let layer = p.u8(1)
        let position = p.u16(2)
        switch p.u8(0) {
        case 0:
            guard (p.count - 4) % 4 == 0 else { throw .ubxLength(messageClass: 0x06, id: 0x8B, length: p.count) }
            self = .request(
                layer: layer, position: position, keys: stride(from: 4, to: p.count, by: 4).map { p.u32($0) })
        case 1:
            self = .response(
                layer: layer, position: position, items: try UBXConfigItem.decodeList(p, from: 4, messageID: .cfgVALGET)
            )
        default:
            throw .ubxField(messageClass: 0x06, id: 0x8B, offset: 0)
        }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter()
        switch self {
        case .request(let layer, let position, let keys):
            w.u8(0); w.u8(layer); w.u16(position)
            for key in keys { w.u32(key) }
        case .response(let layer, let position, let items):
            w.u8(1); w.u8(layer); w.u16(position)
            for item in items { item.append(to: &w) }
        }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgVALGET, payload: payload) }
}

/// UBX-CFG-MSG (06 01): output rate of one message, per port (8 bytes) or on the current port (3 bytes).
public struct UBXCfgMsg: Hashable, Sendable {
    public var message: UBX.MessageID
    /// Rates for I2C (DDC), UART1, UART2, USB, SPI and a reserved port; one entry in the short form.
    public var rates: [UInt8]

    public init(message: UBX.MessageID, rates: [UInt8]) {
        self.message = message
        self.rates = rates
    }

    /// The 8-byte form with one rate on every port.
    public init(message: UBX.MessageID, rateOnAllPorts rate: UInt8) {
        self.init(message: message, rates: [rate, rate, rate, rate, rate, 0])
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 8 || p.count == 3 || p.count == 2 else {
            throw .ubxLength(messageClass: 0x06, id: 0x01, length: p.count)
        }
        message = UBX.MessageID(p.u8(0), p.u8(1))
        rates = (2..<p.count).map { p.u8($0) }
    }

    public var payload: [UInt8] { [message.messageClass, message.id] + rates }
    public var frame: [UInt8] { UBX.frame(.cfgMSG, payload: payload) }
}

/// UBX-CFG-PRT (06 00): port configuration (20 bytes), or a poll for one port (1 byte).
public struct UBXCfgPrt: Hashable, Sendable {
    /// 0 I2C (DDC), 1 UART1, 2 UART2, 3 USB, 4 SPI.
    public var portID: UInt8
    public var txReady: UInt16
    /// UART mode bits (`0x08D0` is 8N1).
    public var mode: UInt32
    public var baudRate: UInt32
    /// Protocol masks: UBX b0, NMEA b1, RTCM2 b2, RTCM3 b5.
    public var inProtocols: UInt16
    public var outProtocols: UInt16
    public var flags: UInt16

    public static let protocolUBX: UInt16 = 0x01
    public static let protocolNMEA: UInt16 = 0x02
    public static let protocolRTCM3: UInt16 = 0x20

    public init(
        portID: UInt8, baudRate: UInt32 = 0, inProtocols: UInt16, outProtocols: UInt16, mode: UInt32 = 0,
        txReady: UInt16 = 0, flags: UInt16 = 0
    ) {
        self.portID = portID
        self.txReady = txReady
        self.mode = mode
        self.baudRate = baudRate
        self.inProtocols = inProtocols
        self.outProtocols = outProtocols
        self.flags = flags
    }

    /// A UART port at `baudRate`, 8N1.
    public static func uart(
        _ portID: UInt8 = 1, baudRate: UInt32, inProtocols: UInt16, outProtocols: UInt16
    )
        -> UBXCfgPrt
    {
        UBXCfgPrt(
            portID: portID, baudRate: baudRate, inProtocols: inProtocols, outProtocols: outProtocols, mode: 0x08D0)
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 20 else { throw .ubxLength(messageClass: 0x06, id: 0x00, length: p.count) }
        self.init(
            portID: p.u8(0), baudRate: p.u32(8), inProtocols: p.u16(12), outProtocols: p.u16(14), mode: p.u32(4),
            txReady: p.u16(2), flags: p.u16(16))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 20)
        w.u8(portID); w.u8(0); w.u16(txReady); w.u32(mode); w.u32(baudRate); w.u16(inProtocols); w.u16(outProtocols)
        w.u16(flags); w.zeros(2)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgPRT, payload: payload) }
}

/// UBX-CFG-RATE (06 08): measurement and navigation rate.
public struct UBXCfgRate: Hashable, Sendable {
    /// Measurement period, ms; navigation solutions per measurement; time reference (0 UTC, 1 GPS, ...).
    public var measRate: UInt16
    public var navRate: UInt16
    public var timeRef: UInt16

    public init(measRate: UInt16, navRate: UInt16 = 1, timeRef: UInt16 = 1) {
        self.measRate = measRate
        self.navRate = navRate
        self.timeRef = timeRef
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 6 else { throw .ubxLength(messageClass: 0x06, id: 0x08, length: p.count) }
        self.init(measRate: p.u16(0), navRate: p.u16(2), timeRef: p.u16(4))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 6)
        w.u16(measRate); w.u16(navRate); w.u16(timeRef)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgRATE, payload: payload) }
}

/// UBX-CFG-RST (06 04): reset or GNSS stop/start. The receiver does not acknowledge it.
public struct UBXCfgRst: Hashable, Sendable {
    /// 0x0000 hot start, 0x0001 warm, 0xFFFF cold.
    public var navBbrMask: UInt16
    /// 0x00 hardware reset, 0x01 software reset, 0x02 GNSS only, 0x04 hardware after shutdown,
    /// 0x08 GNSS stop, 0x09 GNSS start.
    public var resetMode: UInt8

    public init(navBbrMask: UInt16, resetMode: UInt8) {
        self.navBbrMask = navBbrMask
        self.resetMode = resetMode
    }

    /// Stops GNSS, keeping the receiver powered (`B5 62 06 04 04 00 00 00 08 00 16 74`).
    public static let gnssStop = UBXCfgRst(navBbrMask: 0, resetMode: 0x08)
    /// Starts GNSS again (`B5 62 06 04 04 00 00 00 09 00 17 76`).
    public static let gnssStart = UBXCfgRst(navBbrMask: 0, resetMode: 0x09)

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count == 4 else { throw .ubxLength(messageClass: 0x06, id: 0x04, length: p.count) }
        self.init(navBbrMask: p.u16(0), resetMode: p.u8(2))
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 4)
        w.u16(navBbrMask); w.u8(resetMode); w.u8(0)
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.cfgRST, payload: payload) }
}
