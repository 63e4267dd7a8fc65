// UBX: u-blox's binary protocol. Message types keep the wire's integers (so encoding is lossless)
// and expose values in SI units and degrees through computed properties. This file holds the framing
// and the message enum; the messages are in one file per class (UBXNav, UBXLegacy, UBXNavECEF,
// UBXMonitor, UBXConfig, UBXPowerSave, UBXReceiverManager, UBXAiding).

/// Constants and frame helpers for UBX (`B5 62 | class | id | length u16 LE | payload | CK_A CK_B`).
public enum UBX {
    public static let sync: (UInt8, UInt8) = (0xB5, 0x62)

    /// Message classes.
    public enum Class {
        public static let nav: UInt8 = 0x01
        public static let rxm: UInt8 = 0x02
        public static let inf: UInt8 = 0x04
        public static let ack: UInt8 = 0x05
        public static let cfg: UInt8 = 0x06
        public static let mon: UInt8 = 0x0A
        public static let tim: UInt8 = 0x0D
    }

    /// A class and id pair, e.g. `UBX.MessageID.navPVT`.
    public struct MessageID: Hashable, Sendable, CustomStringConvertible {
        public var messageClass: UInt8
        public var id: UInt8

        public init(_ messageClass: UInt8, _ id: UInt8) {
            self.messageClass = messageClass
            self.id = id
        }

        public static let navStatus = MessageID(0x01, 0x03)
        public static let navDOP = MessageID(0x01, 0x04)
        public static let navPVT = MessageID(0x01, 0x07)
        public static let navTimeUTC = MessageID(0x01, 0x21)
        public static let navSAT = MessageID(0x01, 0x35)
        public static let navEOE = MessageID(0x01, 0x61)
        public static let rxmRTCM = MessageID(0x02, 0x32)
        public static let rxmPMREQ = MessageID(0x02, 0x41)
        public static let infError = MessageID(0x04, 0x00)
        public static let infWarning = MessageID(0x04, 0x01)
        public static let infNotice = MessageID(0x04, 0x02)
        public static let infTest = MessageID(0x04, 0x03)
        public static let infDebug = MessageID(0x04, 0x04)
        public static let ackNak = MessageID(0x05, 0x00)
        public static let ackAck = MessageID(0x05, 0x01)
        public static let cfgPRT = MessageID(0x06, 0x00)
        public static let cfgMSG = MessageID(0x06, 0x01)
        public static let cfgRST = MessageID(0x06, 0x04)
        public static let cfgRATE = MessageID(0x06, 0x08)
        public static let cfgVALSET = MessageID(0x06, 0x8A)
        public static let cfgVALGET = MessageID(0x06, 0x8B)
        public static let monVER = MessageID(0x0A, 0x04)

        public var description: String { UBX.name(messageClass: messageClass, id: id) }
    }

    /// The u-blox name of a message (`NAV-PVT`), or its numbers (`0x01-0x07`).
    public static func name(messageClass: UInt8, id: UInt8) -> String {
        switch (messageClass, id) {
        case (0x01, 0x03): return "NAV-STATUS"
        case (0x01, 0x04): return "NAV-DOP"
        case (0x01, 0x07): return "NAV-PVT"
        case (0x01, 0x21): return "NAV-TIMEUTC"
        case (0x01, 0x02): return "NAV-POSLLH"
        case (0x01, 0x06): return "NAV-SOL"
        case (0x01, 0x12): return "NAV-VELNED"
        case (0x01, 0x20): return "NAV-TIMEGPS"
        case (0x01, 0x30): return "NAV-SVINFO"
        case (0x01, 0x14): return "NAV-HPPOSLLH"
        case (0x28, 0x00): return "HNR-PVT"
        case (0x01, 0x35): return "NAV-SAT"
        case (0x01, 0x61): return "NAV-EOE"
        case (0x02, 0x32): return "RXM-RTCM"
        case (0x02, 0x41): return "RXM-PMREQ"
        case (0x04, 0x00): return "INF-ERROR"
        case (0x04, 0x01): return "INF-WARNING"
        case (0x04, 0x02): return "INF-NOTICE"
        case (0x04, 0x03): return "INF-TEST"
        case (0x04, 0x04): return "INF-DEBUG"
        case (0x05, 0x00): return "ACK-NAK"
        case (0x05, 0x01): return "ACK-ACK"
        case (0x06, 0x00): return "CFG-PRT"
        case (0x06, 0x01): return "CFG-MSG"
        case (0x06, 0x04): return "CFG-RST"
        case (0x06, 0x08): return "CFG-RATE"
        case (0x06, 0x8A): return "CFG-VALSET"
        case (0x06, 0x8B): return "CFG-VALGET"
        case (0x0A, 0x04): return "MON-VER"
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x40): return "MGA-INI"
        case (0x13, 0x60): return "MGA-ACK"
        case (0x13, 0x80): return "MGA-DBD"
        case (0x27, 0x03): return "SEC-UNIQID"
        case (0x06, 0x11): return "CFG-RXM"
        case (0x06, 0x23): return "CFG-NAVX5"
        case (0x06, 0x3B): return "CFG-PM2"
        case (0x06, 0x86): return "CFG-PMS"
        default:
            var bytes = Array("0x".utf8)
            ASCII.appendHexByte(messageClass, to: &bytes)
            bytes.append(contentsOf: "-0x".utf8)
            ASCII.appendHexByte(id, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Whether a length can belong to a class and id; the framer drops a header that fails this at once
    /// instead of waiting for a payload that will never come. Length 0 (a poll) is always plausible.
    @inlinable
    public static func isPlausible(messageClass: UInt8, id: UInt8, length: Int) -> Bool {
        if length == 0 { return true }
        switch (messageClass, id) {
        case (0x01, 0x03): return length == 16
        case (0x01, 0x04): return length == 18
        case (0x01, 0x07): return length == 92 || length == 84
        case (0x01, 0x21): return length == 20
        case (0x01, 0x02): return length == 28
        case (0x01, 0x06): return length == 52
        case (0x01, 0x12): return length == 36
        case (0x01, 0x20): return length == 16
        case (0x01, 0x14): return length == 36
        case (0x28, 0x00): return length == 72
        case (0x01, 0x35), (0x01, 0x30): return length >= 8 && (length - 8) % 12 == 0
        case (0x05, 0x00), (0x05, 0x01): return length == 2
        case (0x02, 0x32): return length == 8
        case (0x0A, 0x04): return length >= 40 && (length - 40) % 30 == 0
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x60): return length == 8
        case (0x27, 0x03): return length == 9 || length == 10
        case (0x06, 0x11): return length == 2
        case (0x06, 0x23): return length == 40 || length == 44
        case (0x06, 0x3B): return length == 44 || length == 48
        case (0x06, 0x86): return length == 8
        default: return true
        }
    }

    /// A complete frame around `payload`: sync, class, id, length, payload, checksum.
    public static func frame(_ message: MessageID, payload: some Collection<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = []
        appendFrame(message, payload: payload, to: &bytes)
        return bytes
    }

    /// Appends a complete frame around `payload` to `bytes`.
    public static func appendFrame(_ message: MessageID, payload: some Collection<UInt8>, to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.reserveCapacity(start + payload.count + 8)
        bytes.append(0xB5)
        bytes.append(0x62)
        bytes.append(message.messageClass)
        bytes.append(message.id)
        bytes.append(UInt8(truncatingIfNeeded: payload.count))
        bytes.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        bytes.append(contentsOf: payload)
        let sum = bytes.withUnsafeBytes { ubxChecksum(UnsafeRawBufferPointer(rebasing: $0[(start + 2)...])) }
        bytes.append(sum.a)
        bytes.append(sum.b)
    }

    /// A poll: the message id with an empty payload (`B5 62 0A 04 00 00 0E 34` polls MON-VER).
    public static func poll(_ message: MessageID) -> [UInt8] {
        frame(message, payload: EmptyCollection())
    }
}

// MARK: - the message enum

/// A decoded UBX message.
public enum UBXMessage: Hashable, Sendable {
    case navPVT(UBXNavPVT)
    case navSAT(UBXNavSAT)
    case navSVINFO(UBXNavSVINFO)
    case navStatus(UBXNavStatus)
    case navDOP(UBXNavDOP)
    case navTimeUTC(UBXNavTimeUTC)
    case navSOL(UBXNavSOL)
    case navPOSLLH(UBXNavPOSLLH)
    case navVELNED(UBXNavVELNED)
    case navTimeGPS(UBXNavTimeGPS)
    case navHPPOSLLH(UBXNavHPPOSLLH)
    case hnrPVT(UBXHnrPVT)
    case monVER(UBXMonVER)
    case ack(UBXAck)
    case nak(UBXAck)
    case inf(UBXInf)
    case cfgValGet(UBXCfgValGet)
    case cfgValSet(UBXCfgValSet)
    case cfgMsg(UBXCfgMsg)
    case cfgPrt(UBXCfgPrt)
    case cfgRate(UBXCfgRate)
    case cfgRst(UBXCfgRst)
    case rxmPMREQ(UBXRxmPmReq)
    case rxmRTCM(UBXRxmRTCM)
    // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
    case mgaDBD(UBXMgaDBD)
    case mgaAck(UBXMgaAck)
    case mgaIniTimeUTC(UBXMgaIniTimeUTC)
    case mgaIniPosLLH(UBXMgaIniPosLLH)
    case secUniqID(UBXSecUniqID)
    case cfgRXM(UBXCfgRXM)
    case cfgPM2(UBXCfgPM2)
    case cfgPMS(UBXCfgPMS)
    case cfgNavX5(UBXCfgNavX5)
    /// A message with an empty payload: a poll from the host (or NAV-EOE-like markers are not empty).
    case poll(UBX.MessageID)
    /// Anything else, kept whole: class, id and payload.
    case other(UBX.MessageID, payload: ArraySlice<UInt8>)

    /// The class and id of this message.
    public var messageID: UBX.MessageID {
        switch self {
        case .navPVT: return .navPVT
        case .navSAT: return .navSAT
        case .navSVINFO: return .navSVINFO
        case .navStatus: return .navStatus
        case .navDOP: return .navDOP
        case .navTimeUTC: return .navTimeUTC
        case .navSOL: return .navSOL
        case .navPOSLLH: return .navPOSLLH
        case .navVELNED: return .navVELNED
        case .navTimeGPS: return .navTimeGPS
        case .navHPPOSLLH: return .navHPPOSLLH
        case .hnrPVT: return .hnrPVT
        case .monVER: return .monVER
        case .ack: return .ackAck
        case .nak: return .ackNak
        case .inf(let inf): return UBX.MessageID(0x04, inf.level.rawValue)
        case .cfgValGet: return .cfgVALGET
        case .cfgValSet: return .cfgVALSET
        case .cfgMsg: return .cfgMSG
        case .cfgPrt: return .cfgPRT
        case .cfgRate: return .cfgRATE
        case .cfgRst: return .cfgRST
        case .rxmPMREQ: return .rxmPMREQ
        case .rxmRTCM: return .rxmRTCM
        case .mgaDBD: return .mgaDBD
        case .mgaAck: return .mgaACK
        case .mgaIniTimeUTC, .mgaIniPosLLH: return .mgaINI
        case .secUniqID: return .secUNIQID
        case .cfgRXM: return .cfgRXM
        case .cfgPM2: return .cfgPM2
        case .cfgPMS: return .cfgPMS
        case .cfgNavX5: return .cfgNAVX5
        case .poll(let id): return id
        case .other(let id, _): return id
        }
    }

    /// Decodes a whole frame (sync to checksum; the framer has verified the checksum).
    public init(frame: ArraySlice<UInt8>) throws(DecodeError) {
        guard frame.count >= 8 else { throw .truncated }
        let start = frame.startIndex
        let id = UBX.MessageID(frame[start + 2], frame[start + 3])
        let payload = frame[(start + 6)..<(frame.endIndex - 2)]
        do {
            self = try payload.withUnsafeBytes { p in try UBXMessage.decode(id, p, payload) }
        } catch let error as DecodeError {
            throw error
        } catch {
            // withUnsafeBytes rethrows untyped; decode throws nothing else.
            throw .truncated
        }
    }

    static func decode(
        _ id: UBX.MessageID, _ p: UnsafeRawBufferPointer, _ slice: ArraySlice<UInt8>
    )
        throws(DecodeError) -> UBXMessage
    {
        if p.isEmpty { return .poll(id) }
        switch (id.messageClass, id.id) {
        case (0x01, 0x07): return .navPVT(try UBXNavPVT(payload: p))
        case (0x01, 0x35): return .navSAT(try UBXNavSAT(payload: p))
        case (0x01, 0x30): return .navSVINFO(try UBXNavSVINFO(payload: p))
        case (0x01, 0x03): return .navStatus(try UBXNavStatus(payload: p))
        case (0x01, 0x04): return .navDOP(try UBXNavDOP(payload: p))
        case (0x01, 0x21): return .navTimeUTC(try UBXNavTimeUTC(payload: p))
        case (0x01, 0x06): return .navSOL(try UBXNavSOL(payload: p))
        case (0x01, 0x02): return .navPOSLLH(try UBXNavPOSLLH(payload: p))
        case (0x01, 0x12): return .navVELNED(try UBXNavVELNED(payload: p))
        case (0x01, 0x20): return .navTimeGPS(try UBXNavTimeGPS(payload: p))
        case (0x01, 0x14): return .navHPPOSLLH(try UBXNavHPPOSLLH(payload: p))
        case (0x28, 0x00): return .hnrPVT(try UBXHnrPVT(payload: p))
        case (0x0A, 0x04): return .monVER(try UBXMonVER(payload: p))
        case (0x05, 0x01): return .ack(try UBXAck(payload: p, id: 0x01))
        case (0x05, 0x00): return .nak(try UBXAck(payload: p, id: 0x00))
        case (0x04, 0x00...0x04):
            // The text is ASCII; drop trailing NULs some firmware adds.
            var end = p.count
            while end > 0 && p[end - 1] == 0 { end -= 1 }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: p[0..<end]), as: UTF8.self)
            return .inf(UBXInf(level: UBXInf.Level(rawValue: id.id) ?? .notice, text: text))
        case (0x06, 0x8B): return .cfgValGet(try UBXCfgValGet(payload: p))
        case (0x06, 0x8A): return .cfgValSet(try UBXCfgValSet(payload: p))
        case (0x06, 0x01) where p.count != 2: return .cfgMsg(try UBXCfgMsg(payload: p))
        case (0x06, 0x00) where p.count != 1: return .cfgPrt(try UBXCfgPrt(payload: p))
        case (0x06, 0x08): return .cfgRate(try UBXCfgRate(payload: p))
        case (0x06, 0x04): return .cfgRst(try UBXCfgRst(payload: p))
        case (0x02, 0x41): return .rxmPMREQ(try UBXRxmPmReq(payload: p))
        case (0x02, 0x32): return .rxmRTCM(try UBXRxmRTCM(payload: p))
        // Aiding and power save (UBXAiding.swift, UBXPowerSave.swift).
        case (0x13, 0x80): return .mgaDBD(try UBXMgaDBD(payload: p))
        case (0x13, 0x60): return .mgaAck(try UBXMgaAck(payload: p))
        case (0x13, 0x40): return try decodeMgaINI(p, slice)
        case (0x27, 0x03): return .secUniqID(try UBXSecUniqID(payload: p))
        case (0x06, 0x11): return .cfgRXM(try UBXCfgRXM(payload: p))
        case (0x06, 0x3B): return .cfgPM2(try UBXCfgPM2(payload: p))
        case (0x06, 0x86): return .cfgPMS(try UBXCfgPMS(payload: p))
        // CFG-NAVX5 version 3 (44 bytes) adds fields this package does not know: kept whole.
        case (0x06, 0x23) where p.count == 40: return .cfgNavX5(try UBXCfgNavX5(payload: p))
        default: return .other(id, payload: slice)
        }
    }

    /// The payload bytes of this message.
    public var payload: [UInt8] {
        switch self {
        case .navPVT(let m): return m.payload
        case .navSAT(let m): return m.payload
        case .navSVINFO(let m): return m.payload
        case .navStatus(let m): return m.payload
        case .navDOP(let m): return m.payload
        case .navTimeUTC(let m): return m.payload
        case .navSOL(let m): return m.payload
        case .navPOSLLH(let m): return m.payload
        case .navVELNED(let m): return m.payload
        case .navTimeGPS(let m): return m.payload
        case .navHPPOSLLH(let m): return m.payload
        case .hnrPVT(let m): return m.payload
        case .monVER(let m): return m.payload
        case .ack(let m), .nak(let m): return m.payload
        case .inf(let m): return m.payload
        case .cfgValGet(let m): return m.payload
        case .cfgValSet(let m): return m.payload
        case .cfgMsg(let m): return m.payload
        case .cfgPrt(let m): return m.payload
        case .cfgRate(let m): return m.payload
        case .cfgRst(let m): return m.payload
        case .rxmPMREQ(let m): return m.payload
        case .rxmRTCM(let m): return m.payload
        case .mgaDBD(let m): return m.payload
        case .mgaAck(let m): return m.payload
        case .mgaIniTimeUTC(let m): return m.payload
        case .mgaIniPosLLH(let m): return m.payload
        case .secUniqID(let m): return m.payload
        case .cfgRXM(let m): return m.payload
        case .cfgPM2(let m): return m.payload
        case .cfgPMS(let m): return m.payload
        case .cfgNavX5(let m): return m.payload
        case .poll: return []
        case .other(_, let payload): return Array(payload)
        }
    }

    /// The complete frame of this message.
    public var frame: [UInt8] { UBX.frame(messageID, payload: payload) }
}
