// One connection to a caster on a thread of its own: resolve the name, connect, TLS, send the
// request, read the answer and the RTCM frames; every step non-blocking and abandoned as soon as the
// owner closes the link (a Waker ends each wait). All I/O on the socket (and its TLS session) is
// this thread's: writes the owner asks for (GGA) are queued and written here. What it makes of the
// bytes goes to the owner as events; it holds no timer (the owner's machine does).
import GNSSProtocol
import LinuxSystem

/// What a link tells its owner, from its thread, in order.
enum LinkEvent: Sendable {
    /// Connected, and the request written.
    case requestSent
    /// The answer's head (with the whole sourcetable when it is one), or a refusal.
    case answered(CasterAnswer)
    /// RTCM frames from the stream.
    case frames([RTCMFrame])
    /// The link ended on its own (never after ``CasterLink/close()``): why.
    case failed(NTRIPError)
}

/// Where and how a link connects.
struct LinkTarget: Sendable {
    var host: String
    var port: UInt16
    var tls: TLSContext?
    /// The whole request, written at once.
    var request: [UInt8]
    /// For the error of a 401.
    var user: String?
    var mountpoint: String?
}

/// One connection to a caster and its thread.
final class CasterLink: Sendable {
    struct Shared: Sendable {
        var pendingWrites: [UInt8] = []
        var closeRequested = false
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let id: UInt64
    let target: LinkTarget
    private let waker: Waker
    private let shared = Lock(Shared())
    private let deliver: @Sendable (LinkEvent) -> Void
    private let now: @Sendable () -> Duration
    private let position: @Sendable () -> NTRIPPosition?

    /// Makes the link's eventfd; connects nothing until ``start()``. `now` stamps the frames;
    /// `position` is read when a sourcetable comes (to choose from it).
    init(
        id: UInt64, target: LinkTarget, now: @escaping @Sendable () -> Duration,
        position: @escaping @Sendable () -> NTRIPPosition?, deliver: @escaping @Sendable (LinkEvent) -> Void
    ) throws(SystemError) {
        self.id = id
        self.target = target
        self.now = now
        self.position = position
        self.deliver = deliver
        waker = try Waker()
    }

    /// Starts the link's thread (`pthread_create`), detached: ``ended()`` says when it is done.
    func start() throws(SystemError) {
        let thread = try LoopThread(name: "ntrip-link") { [self] in
            // OpenSSL writes to the socket without MSG_NOSIGNAL: a caster gone is EPIPE, not SIGPIPE.
            blockBrokenPipeOnCurrentThread()
            run()
            finish()
        }
        thread.detach()
    }

    /// Queues `bytes` for the thread to write.
    func send(_ bytes: [UInt8]) {
        shared.withLock { $0.pendingWrites += bytes }
        waker.wake()
    }

    /// Asks the thread to close the connection and end; returns at once. Nothing is delivered after.
    func close() {
        shared.withLock { $0.closeRequested = true }
        waker.wake()
    }

    /// Suspends until the thread has closed the socket and ended.
    func ended() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { shared -> Bool in
                if shared.ended { return true }
                shared.endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private var closeRequested: Bool { shared.withLock { $0.closeRequested } }

    /// Whether the thread has ended.
    var isEnded: Bool { shared.withLock { $0.ended } }

    private func finish() {
        let waiters = shared.withLock { shared -> [CheckedContinuation<Void, Never>] in
            shared.ended = true
            defer { shared.endWaiters = [] }
            return shared.endWaiters
        }
        waker.close()
        for waiter in waiters { waiter.resume() }
    }

    /// Delivers `event` unless the owner has closed the link.
    private func report(_ event: LinkEvent) {
        if !closeRequested { deliver(event) }
    }

    // MARK: - The thread

    private func run() {
        do throws(NTRIPError) {
            guard let stream = try connect() else { return }
            defer { stream.close() }
            guard try stream.writeAll(target.request, waker: waker, cancelled: { self.closeRequested }) else { return }
            report(.requestSent)
            try readAnswer(from: stream)
        } catch {
            report(.failed(error))
        }
    }

    /// Resolves, connects (each address in turn), and makes the TLS handshake; nil when closed first.
    private func connect() throws(NTRIPError) -> CasterStream? {
        let addresses: [SocketAddress]
        do {
            addresses = try SocketAddress.resolve(host: target.host, port: target.port)
        } catch {
            throw .unresolved(error)
        }
        var lastError: SocketError?
        for address in addresses {
            if closeRequested { return nil }
            let connection: SocketConnection
            do {
                guard let connected = try SocketConnection.connect(to: address, wake: waker) else { return nil }
                connection = connected
            } catch {
                lastError = error
                continue
            }
            let stream = CasterStream(connection: connection)
            if let tls = target.tls {
                let finished = try stream.startTLS(context: tls, host: target.host, waker: waker) {
                    self.closeRequested
                }
                guard finished else {
                    stream.close()
                    return nil
                }
            }
            return stream
        }
        throw .connectFailed(lastError ?? .invalidAddress(target.host, reason: "no address to connect to"))
    }

    /// Reads until the answer is done with: a refusal or a sourcetable (delivered, then the link
    /// ends), or the stream's frames until the caster closes or the owner does.
    private func readAnswer(from stream: CasterStream) throws(NTRIPError) {
        var reader = AnswerReader(user: target.user, mountpoint: target.mountpoint)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let pending = shared.withLock { shared -> [UInt8]? in
                guard !shared.pendingWrites.isEmpty else { return nil }
                defer { shared.pendingWrites = [] }
                return shared.pendingWrites
            }
            if let pending {
                guard try stream.writeAll(pending, waker: waker, cancelled: { self.closeRequested }) else { return }
            }
            if closeRequested { return }
            guard let count = try stream.read(into: &buffer, waker: waker) else { continue }
            let outcome = count == 0
                ? reader.finish(at: now(), position: position())
                : reader.consume(buffer[..<count], at: now(), position: position())
            for event in outcome.events { report(event) }
            if outcome.done { return }
        }
    }
}
