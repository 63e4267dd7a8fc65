// TLS over a caster connection's descriptor, with OpenSSL (`SSL_set_fd`): the peer's certificate must
// chain to the system's CA store (or a given CA file) and name the host. Non-blocking: each call
// says whether it needs the socket readable or writable first; the link's thread waits for that.
internal import COpenSSL

/// Why TLS failed, with the OpenSSL call and its reason.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The context or session could not be set up (a CA file that cannot be read).
        case setup
        /// The caster's certificate did not verify: wrong CA, expired, another host's.
        case certificateVerification
        /// The handshake failed otherwise (no common protocol, the peer is no TLS server).
        case handshake
        /// A read or write on the TLS session failed.
        case io
    }

    public var kind: Kind
    /// The OpenSSL call: `SSL_connect`, `SSL_CTX_load_verify_locations`, ...
    public var call: String
    /// OpenSSL's reason (`X509_verify_cert_error_string`, or the error queue's text).
    public var reason: String

    public init(kind: Kind, call: String, reason: String) {
        self.kind = kind
        self.call = call
        self.reason = reason
    }

    public var description: String {
        switch kind {
        case .setup: "TLS setup failed (\(call)): \(reason)"
        case .certificateVerification: "the caster's TLS certificate did not verify: \(reason)"
        case .handshake: "TLS handshake failed (\(call)): \(reason)"
        case .io: "TLS I/O failed (\(call)): \(reason)"
        }
    }

    /// The reasons on OpenSSL's error queue (`ERR_get_error`, `ERR_error_string_n`), emptied.
    static func queuedReasons(or fallback: String) -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}

/// A client TLS context: TLS 1.2 or later, peer verification on, the CA store loaded once.
final class TLSContext: @unchecked Sendable {
    // Read-only after init; OpenSSL locks a context's shared state itself.
    let context: OpaquePointer

    /// `SSL_CTX_new(TLS_client_method())`, then `SSL_CTX_load_verify_locations(caFile)` or
    /// `SSL_CTX_set_default_verify_paths` (the system's store).
    init(caFile: String?) throws(TLSError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError(kind: .setup, call: "SSL_CTX_new", reason: TLSError.queuedReasons(or: "out of memory"))
        }
        self.context = context
        _ = cssl_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        cssl_ctx_ignore_unexpected_eof(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw TLSError(kind: .setup, call: "SSL_CTX_load_verify_locations",
                               reason: "\(caFile): " + TLSError.queuedReasons(or: "cannot be read"))
            }
        } else if SSL_CTX_set_default_verify_paths(context) != 1 {
            throw TLSError(kind: .setup, call: "SSL_CTX_set_default_verify_paths",
                           reason: TLSError.queuedReasons(or: "no system CA store"))
        }
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// What a non-blocking TLS call needs before it can go on.
enum TLSProgress: Sendable, Equatable {
    case done(Int)
    case wantRead
    case wantWrite
    /// The peer closed the session (close_notify, or the end of the TCP stream).
    case closed
}

/// One TLS session over a connected socket; used by one thread at a time.
final class TLSSession: @unchecked Sendable {
    // Touched only by the link's thread.
    private let ssl: OpaquePointer

    /// `SSL_new`, `SSL_set_fd(fd)`, the server name (SNI) for a host name, and the host check:
    /// `SSL_set1_host` for a name, `X509_VERIFY_PARAM_set1_ip_asc` for an address.
    init(context: TLSContext, descriptor: CInt, host: String, hostIsAddress: Bool) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            throw TLSError(kind: .setup, call: "SSL_new", reason: TLSError.queuedReasons(or: "out of memory"))
        }
        self.ssl = ssl
        guard SSL_set_fd(ssl, descriptor) == 1 else {
            throw TLSError(kind: .setup, call: "SSL_set_fd", reason: TLSError.queuedReasons(or: "failed"))
        }
        if hostIsAddress {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                throw TLSError(kind: .setup, call: "X509_VERIFY_PARAM_set1_ip_asc", reason: "not an address: \(host)")
            }
        } else {
            _ = cssl_set_server_name(ssl, host)
            guard SSL_set1_host(ssl, host) == 1 else {
                throw TLSError(kind: .setup, call: "SSL_set1_host", reason: TLSError.queuedReasons(or: host))
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    /// `SSL_connect`: the handshake, the certificate and host checks included.
    func handshake() throws(TLSError) -> TLSProgress {
        ERR_clear_error()
        let result = SSL_connect(ssl)
        if result == 1 { return .done(0) }
        return try progress(of: result, call: "SSL_connect", kind: .handshake)
    }

    /// `SSL_read` into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> TLSProgress {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, CInt(clamping: buffer.count))
        if result > 0 { return .done(Int(result)) }
        return try progress(of: result, call: "SSL_read", kind: .io)
    }

    /// `SSL_write` of `bytes` (all or nothing, as OpenSSL writes by default).
    func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) -> TLSProgress {
        guard !bytes.isEmpty else { return .done(0) }
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, CInt(clamping: bytes.count))
        if result > 0 { return .done(Int(result)) }
        return try progress(of: result, call: "SSL_write", kind: .io)
    }

    /// `SSL_shutdown`, once, without waiting for the peer's answer.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func progress(of result: CInt, call: String, kind: TLSError.Kind) throws(TLSError) -> TLSProgress {
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
            // The TCP stream ended (or reset) under the session.
            if kind == .io { return .closed }
            throw TLSError(kind: kind, call: call, reason: "the connection closed during the handshake")
        default:
            let verification = SSL_get_verify_result(ssl)
            if kind == .handshake && verification != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verification))
                ERR_clear_error()
                throw TLSError(kind: .certificateVerification, call: call, reason: reason)
            }
            throw TLSError(kind: kind, call: call, reason: TLSError.queuedReasons(or: "SSL error \(code)"))
        }
    }
}
