// A connected caster socket, plain or under TLS, read and written without blocking: each call waits
// (poll, through LinuxSystem) for what the socket or the TLS session needs, and gives up when the
// link's waker says the owner closed it.
import LinuxSystem

/// The byte stream of one caster connection; used by the link's thread only.
final class CasterStream: @unchecked Sendable {
    // Touched by the link's thread only.
    let connection: SocketConnection
    private var tls: TLSSession?

    init(connection: SocketConnection) {
        self.connection = connection
    }

    /// The TLS handshake over the socket (`SSL_set_fd`, `SSL_connect`); false when the owner closed
    /// the link first.
    func startTLS(
        context: TLSContext, host: String, waker: Waker, cancelled: () -> Bool
    ) throws(NTRIPError) -> Bool {
        let isAddress = host != "localhost" && (try? SocketAddress(parsing: host, defaultPort: 0)) != nil
        do {
            let session = try TLSSession(
                context: context, descriptor: connection.rawDescriptor, host: host, hostIsAddress: isAddress)
            tls = session
            while true {
                switch try session.handshake() {
                case .done: return true
                case .closed: throw TLSError(kind: .handshake, call: "SSL_connect", reason: "the caster closed")
                case .wantRead:
                    if try wait(readable: true, waker: waker), cancelled() { return false }
                case .wantWrite:
                    if try wait(readable: false, waker: waker), cancelled() { return false }
                }
            }
        } catch {
            throw Self.mapped(error, peer: connection.peer)
        }
    }

    /// Writes all of `bytes` (`send`, or `SSL_write`); false when the owner closed the link first.
    func writeAll(_ bytes: [UInt8], waker: Waker, cancelled: () -> Bool) throws(NTRIPError) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let progress: TLSProgress
            do {
                progress = try bytes.withUnsafeBytes { buffer throws -> TLSProgress in
                    let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
                    if let tls { return try tls.write(rest) }
                    let sent = try connection.send(rest)
                    return sent == 0 ? .wantWrite : .done(sent)
                }
                switch progress {
                case .done(let count): offset += count
                case .closed: throw NTRIPError.closedByCaster
                case .wantRead:
                    if try wait(readable: true, waker: waker), cancelled() { return false }
                case .wantWrite:
                    if try wait(readable: false, waker: waker), cancelled() { return false }
                }
            } catch {
                throw Self.mapped(error, peer: connection.peer)
            }
        }
        return true
    }

    /// Reads what has come (`recv`, or `SSL_read`), waiting for it: the count, 0 at the end of the
    /// stream, nil when the waker was woken (the caller looks at why, then reads again).
    func read(into buffer: inout [UInt8], waker: Waker) throws(NTRIPError) -> Int? {
        do {
            while true {
                let progress = try buffer.withUnsafeMutableBytes { raw throws -> TLSProgress in
                    if let tls { return try tls.read(into: raw) }
                    switch try connection.receive(into: raw) {
                    case .received(let count): return .done(count)
                    case .endOfStream: return .closed
                    case .wouldBlock: return .wantRead
                    }
                }
                switch progress {
                case .done(let count): return count
                case .closed: return 0
                case .wantRead:
                    if try wait(readable: true, waker: waker) { return nil }
                case .wantWrite:
                    if try wait(readable: false, waker: waker) { return nil }
                }
            }
        } catch {
            throw Self.mapped(error, peer: connection.peer)
        }
    }

    /// Ends the session (`SSL_shutdown`, once) and closes the socket: the caster reads the end.
    func close() {
        tls?.shutdown()
        connection.close()
    }

    /// Waits for the socket; true when the waker was woken.
    private func wait(readable: Bool, waker: Waker) throws(SocketError) -> Bool {
        try connection.wait(readable: readable, writable: !readable, wake: waker).woken
    }

    private static func mapped(_ error: any Error, peer: String) -> NTRIPError {
        switch error {
        case let error as NTRIPError: error
        case let error as TLSError: .tls(error)
        case let error as SocketError where error.deviceIsGone: .closedByCaster
        case let error as SocketError: .io(error)
        default: .io(.closed(device: peer))
        }
    }
}
