// What went wrong talking to a broker: a libmosquitto error code, or a broker's refusal (a CONNACK,
// PUBACK or SUBACK reason code), each with the text libmosquitto gives for it.
internal import CMosquitto
internal import LinuxSystem

/// An MQTT failure: which libmosquitto call or broker answer it came from, its code, and the reason
/// in libmosquitto's words (`mosquitto_strerror`, `mosquitto_reason_string`, `mosquitto_connack_string`).
public struct MQTTError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where a failure's code comes from.
    public enum Code: Hashable, Sendable {
        /// A libmosquitto error (`MOSQ_ERR_*`) returned by a call or given to a callback.
        case library(LibraryCode)
        /// The broker refused the connection: the CONNACK's return code (MQTT 3.1.1) or reason code (5.0).
        case connectionRefused(ReasonCode)
        /// The broker refused a QoS 1 message: its PUBACK's reason code (MQTT 5.0 only; a 3.1.1 broker
        /// acknowledges what it drops).
        case publishRefused(ReasonCode)
        /// The broker refused a subscription: the SUBACK's code for it (0x80 in 3.1.1, the reason in 5.0).
        case subscriptionRefused(ReasonCode)
        /// A system call failed (`MOSQ_ERR_ERRNO`): its `errno`.
        case system(CInt)
    }

    /// The libmosquitto call or the broker packet (`CONNACK`, `PUBACK`, `SUBACK`) it came from.
    public var call: String
    public var code: Code
    /// libmosquitto's text for the code, and for a refusal what it means for the user.
    public var reason: String

    public init(call: String, code: Code, reason: String) {
        self.call = call
        self.code = code
        self.reason = reason
    }

    /// The error a libmosquitto call returned (`mosquitto_strerror`; the C library's message for the
    /// calling thread's `errno` for `MOSQ_ERR_ERRNO`).
    init(call: String, mosquittoCode: CInt) {
        self.call = call
        if mosquittoCode == CInt(MOSQ_ERR_ERRNO.rawValue) {
            let errno = Errno.current
            code = .system(errno.rawValue)
            reason = errno.message
        } else {
            code = .library(LibraryCode(rawValue: mosquittoCode))
            reason = String(cString: mosquitto_strerror(mosquittoCode))
        }
    }

    /// A system call that failed through LinuxSystem (making the network thread, its eventfd).
    init(_ failure: FailedCall) {
        call = failure.call
        code = .system(failure.errno?.rawValue ?? 0)
        reason = failure.errno?.message ?? "failed"
    }

    /// A CONNACK refusal. `reasonCode` is a 3.1.1 return code (1-5, `mosquitto_connack_string`) or a 5.0
    /// reason code (0x80 and up, `mosquitto_reason_string`), as `version` says.
    static func connectionRefused(_ reasonCode: CInt, version: MQTTProtocolVersion) -> MQTTError {
        let code = ReasonCode(connack: reasonCode, version: version)
        let text = version == .v311
            ? String(cString: mosquitto_connack_string(reasonCode)) : String(cString: mosquitto_reason_string(reasonCode))
        return MQTTError(call: "CONNACK", code: .connectionRefused(code), reason: text)
    }

    /// A refusal in a PUBACK or SUBACK (`mosquitto_reason_string`; 3.1.1's SUBACK failure is 0x80).
    static func refused(_ packet: String, reasonCode: CInt) -> MQTTError {
        let code = ReasonCode(rawValue: UInt8(truncatingIfNeeded: reasonCode))
        let text = String(cString: mosquitto_reason_string(reasonCode))
        return MQTTError(call: packet, code: packet == "SUBACK" ? .subscriptionRefused(code) : .publishRefused(code),
                         reason: text)
    }

    /// Whether retrying with the same settings cannot help until someone changes them: a wrong
    /// password, an identity the broker does not authorise, a banned client, a TLS certificate the
    /// client does not trust. (The reconnect policy still retries, with its back-off, and says so.)
    public var isAuthorisationFailure: Bool {
        switch code {
        case let .connectionRefused(reason):
            return reason == .badUsernameOrPassword || reason == .notAuthorized || reason == .banned
                || reason == .badAuthenticationMethod
        case let .library(library):
            return library == .authentication || library == .tls || library == .tlsHandshake
        case .publishRefused, .subscriptionRefused, .system:
            return false
        }
    }

    public var description: String {
        switch code {
        case let .library(library): "\(call): \(reason) (\(library))"
        case let .connectionRefused(reasonCode): "the broker refused the connection: \(reason) (CONNACK \(reasonCode))"
        case let .publishRefused(reasonCode): "the broker refused a message: \(reason) (PUBACK \(reasonCode))"
        case let .subscriptionRefused(reasonCode): "the broker refused a subscription: \(reason) (SUBACK \(reasonCode))"
        case let .system(number): "\(call): \(reason) (errno \(number))"
        }
    }
}

/// A libmosquitto error code (`enum mosq_err_t`, `MOSQ_ERR_*`).
public struct LibraryCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: CInt
    public init(rawValue: CInt) { self.rawValue = rawValue }

    /// `MOSQ_ERR_NOMEM`: out of memory.
    public static let noMemory = LibraryCode(rawValue: CInt(MOSQ_ERR_NOMEM.rawValue))
    /// `MOSQ_ERR_PROTOCOL`: a protocol error talking to the broker.
    public static let protocolError = LibraryCode(rawValue: CInt(MOSQ_ERR_PROTOCOL.rawValue))
    /// `MOSQ_ERR_INVAL`: an invalid argument (a topic with wildcards, an empty host).
    public static let invalid = LibraryCode(rawValue: CInt(MOSQ_ERR_INVAL.rawValue))
    /// `MOSQ_ERR_NO_CONN`: not connected (a QoS 0 message while the broker is away).
    public static let noConnection = LibraryCode(rawValue: CInt(MOSQ_ERR_NO_CONN.rawValue))
    /// `MOSQ_ERR_CONN_REFUSED`: the broker refused the connection.
    public static let connectionRefused = LibraryCode(rawValue: CInt(MOSQ_ERR_CONN_REFUSED.rawValue))
    /// `MOSQ_ERR_CONN_LOST`: the connection was lost.
    public static let connectionLost = LibraryCode(rawValue: CInt(MOSQ_ERR_CONN_LOST.rawValue))
    /// `MOSQ_ERR_TLS`: a TLS error (an unreadable CA file, a certificate that does not verify).
    public static let tls = LibraryCode(rawValue: CInt(MOSQ_ERR_TLS.rawValue))
    /// `MOSQ_ERR_PAYLOAD_SIZE`: a payload too large.
    public static let payloadSize = LibraryCode(rawValue: CInt(MOSQ_ERR_PAYLOAD_SIZE.rawValue))
    /// `MOSQ_ERR_NOT_SUPPORTED`: not supported by this build of libmosquitto.
    public static let notSupported = LibraryCode(rawValue: CInt(MOSQ_ERR_NOT_SUPPORTED.rawValue))
    /// `MOSQ_ERR_AUTH`: authentication failed.
    public static let authentication = LibraryCode(rawValue: CInt(MOSQ_ERR_AUTH.rawValue))
    /// `MOSQ_ERR_ACL_DENIED`: an access control list denied it.
    public static let aclDenied = LibraryCode(rawValue: CInt(MOSQ_ERR_ACL_DENIED.rawValue))
    /// `MOSQ_ERR_ERRNO`: a system call failed (see ``MQTTError/Code/system(_:)``).
    public static let errno = LibraryCode(rawValue: CInt(MOSQ_ERR_ERRNO.rawValue))
    /// `MOSQ_ERR_EAI`: the host name did not resolve (`getaddrinfo`).
    public static let lookup = LibraryCode(rawValue: CInt(MOSQ_ERR_EAI.rawValue))
    /// `MOSQ_ERR_MALFORMED_UTF8`: a topic that is not valid UTF-8.
    public static let malformedUTF8 = LibraryCode(rawValue: CInt(MOSQ_ERR_MALFORMED_UTF8.rawValue))
    /// `MOSQ_ERR_KEEPALIVE`: the broker did not answer within the keep-alive.
    public static let keepalive = LibraryCode(rawValue: CInt(MOSQ_ERR_KEEPALIVE.rawValue))
    /// `MOSQ_ERR_TLS_HANDSHAKE`: the TLS handshake failed.
    public static let tlsHandshake = LibraryCode(rawValue: CInt(MOSQ_ERR_TLS_HANDSHAKE.rawValue))
    /// `MOSQ_ERR_OVERSIZE_PACKET`: larger than the broker accepts.
    public static let oversizePacket = LibraryCode(rawValue: CInt(MOSQ_ERR_OVERSIZE_PACKET.rawValue))

    public var description: String {
        switch self {
        case .noMemory: "MOSQ_ERR_NOMEM"
        case .protocolError: "MOSQ_ERR_PROTOCOL"
        case .invalid: "MOSQ_ERR_INVAL"
        case .noConnection: "MOSQ_ERR_NO_CONN"
        case .connectionRefused: "MOSQ_ERR_CONN_REFUSED"
        case .connectionLost: "MOSQ_ERR_CONN_LOST"
        case .tls: "MOSQ_ERR_TLS"
        case .payloadSize: "MOSQ_ERR_PAYLOAD_SIZE"
        case .notSupported: "MOSQ_ERR_NOT_SUPPORTED"
        case .authentication: "MOSQ_ERR_AUTH"
        case .aclDenied: "MOSQ_ERR_ACL_DENIED"
        case .errno: "MOSQ_ERR_ERRNO"
        case .lookup: "MOSQ_ERR_EAI"
        case .malformedUTF8: "MOSQ_ERR_MALFORMED_UTF8"
        case .keepalive: "MOSQ_ERR_KEEPALIVE"
        case .tlsHandshake: "MOSQ_ERR_TLS_HANDSHAKE"
        case .oversizePacket: "MOSQ_ERR_OVERSIZE_PACKET"
        default: "MOSQ_ERR \(rawValue)"
        }
    }
}

/// An MQTT 5.0 reason code (`enum mqtt5_return_codes`, `MQTT_RC_*`); a 3.1.1 CONNACK return code
/// is mapped onto the 5.0 code of the same meaning.
public struct ReasonCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `MQTT_RC_UNSPECIFIED` (0x80): also 3.1.1's SUBACK failure.
    public static let unspecified = ReasonCode(rawValue: 0x80)
    /// `MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION` (0x84; 3.1.1 return code 1).
    public static let unsupportedProtocolVersion = ReasonCode(rawValue: 0x84)
    /// `MQTT_RC_CLIENTID_NOT_VALID` (0x85; 3.1.1 return code 2).
    public static let clientIdentifierNotValid = ReasonCode(rawValue: 0x85)
    /// `MQTT_RC_BAD_USERNAME_OR_PASSWORD` (0x86; 3.1.1 return code 4).
    public static let badUsernameOrPassword = ReasonCode(rawValue: 0x86)
    /// `MQTT_RC_NOT_AUTHORIZED` (0x87; 3.1.1 return code 5): also a publish or subscription an ACL denies.
    public static let notAuthorized = ReasonCode(rawValue: 0x87)
    /// `MQTT_RC_SERVER_UNAVAILABLE` (0x88; 3.1.1 return code 3).
    public static let serverUnavailable = ReasonCode(rawValue: 0x88)
    /// `MQTT_RC_SERVER_BUSY` (0x89).
    public static let serverBusy = ReasonCode(rawValue: 0x89)
    /// `MQTT_RC_BANNED` (0x8A).
    public static let banned = ReasonCode(rawValue: 0x8A)
    /// `MQTT_RC_BAD_AUTHENTICATION_METHOD` (0x8C).
    public static let badAuthenticationMethod = ReasonCode(rawValue: 0x8C)
    /// `MQTT_RC_TOPIC_NAME_INVALID` (0x90).
    public static let topicNameInvalid = ReasonCode(rawValue: 0x90)
    /// `MQTT_RC_QUOTA_EXCEEDED` (0x97).
    public static let quotaExceeded = ReasonCode(rawValue: 0x97)

    /// The reason code of a CONNACK: 5.0 codes as they are, 3.1.1 return codes 1-5 mapped.
    init(connack code: CInt, version: MQTTProtocolVersion) {
        guard version == .v311 else {
            self.init(rawValue: UInt8(truncatingIfNeeded: code))
            return
        }
        switch code {
        case 1: self = .unsupportedProtocolVersion
        case 2: self = .clientIdentifierNotValid
        case 3: self = .serverUnavailable
        case 4: self = .badUsernameOrPassword
        case 5: self = .notAuthorized
        default: self = .unspecified
        }
    }

    /// Whether the code means success (below 0x80).
    public var isSuccess: Bool { rawValue < 0x80 }

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "0x" + (hex.count < 2 ? "0" + hex : hex)
    }
}
