// What a u-blox receiver says about itself and about the commands it was sent: MON-VER (its versions),
// ACK-ACK and ACK-NAK, and the INF-* texts.

/// UBX-MON-VER (0A 04): software and hardware versions and extension strings.
public struct UBXMonVER: Hashable, Sendable {
    public var softwareVersion: String
    public var hardwareVersion: String
    /// Extension strings such as `FWVER=SPG 3.01`, `PROTVER=18.00`, `MOD=NEO-M8N`.
    public var extensions: [String]

    public init(softwareVersion: String, hardwareVersion: String, extensions: [String] = []) {
        self.softwareVersion = softwareVersion
        self.hardwareVersion = hardwareVersion
        self.extensions = extensions
    }

    public init(payload p: UnsafeRawBufferPointer) throws(DecodeError) {
        guard p.count >= 40, (p.count - 40) % 30 == 0 else {
            throw .ubxLength(messageClass: 0x0A, id: 0x04, length: p.count)
        }
        softwareVersion = p.fixedString(0, 30)
        hardwareVersion = p.fixedString(30, 10)
        extensions = stride(from: 40, to: p.count, by: 30).map { p.fixedString($0, 30) }
    }

    /// The value of an extension `KEY=value` (e.g. `PROTVER`), if present.
    public func extensionValue(_ key: String) -> String? {
        for item in extensions {
            let utf8 = Array(item.utf8)
            if let equals = utf8.firstIndex(of: UInt8(ascii: "=")),
                String(decoding: utf8[..<equals], as: UTF8.self) == key
            {
                return String(decoding: utf8[(equals + 1)...], as: UTF8.self)
            }
        }
        return nil
    }

    /// The protocol version (`PROTVER=18.00` gives 18.0), if the receiver reports it.
    public var protocolVersion: Double? {
        guard let text = extensionValue("PROTVER") else { return nil }
        let trimmed = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
        return trimmed.withUnsafeBytes { ASCII.parseDouble($0) }
    }

    public var payload: [UInt8] {
        var w = LittleEndianWriter(capacity: 40 + 30 * extensions.count)
        w.fixedString(softwareVersion, width: 30)
        w.fixedString(hardwareVersion, width: 10)
        for item in extensions { w.fixedString(item, width: 30) }
        return w.bytes
    }

    public var frame: [UInt8] { UBX.frame(.monVER, payload: payload) }
}

/// UBX-ACK-ACK (05 01) or UBX-ACK-NAK (05 00): the class and id of the acknowledged message.
public struct UBXAck: Hashable, Sendable {
    public var acknowledged: UBX.MessageID

    public init(_ acknowledged: UBX.MessageID) {
        self.acknowledged = acknowledged
    }

    public init(payload p: UnsafeRawBufferPointer, id: UInt8) throws(DecodeError) {
        guard p.count == 2 else { throw .ubxLength(messageClass: 0x05, id: id, length: p.count) }
        acknowledged = UBX.MessageID(p.u8(0), p.u8(1))
    }

    public var payload: [UInt8] { [acknowledged.messageClass, acknowledged.id] }
    public var ackFrame: [UInt8] { UBX.frame(.ackAck, payload: payload) }
    public var nakFrame: [UInt8] { UBX.frame(.ackNak, payload: payload) }
}

/// UBX-INF-* (04 00...04): a text message from the receiver.
public struct UBXInf: Hashable, Sendable {
    public enum Level: UInt8, Hashable, Sendable {
        case error = 0
        case warning = 1
        case notice = 2
        case test = 3
        case debug = 4
    }

    public var level: Level
    public var text: String

    public init(level: Level, text: String) {
        self.level = level
        self.text = text
    }

    public var payload: [UInt8] { Array(text.utf8) }
    public var frame: [UInt8] { UBX.frame(UBX.MessageID(0x04, level.rawValue), payload: payload) }
}
