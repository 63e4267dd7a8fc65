// Feeds chrony's SOCK reference clock: every in-band epoch time and PPS edge becomes one
// `sock_sample` datagram. The feed holds a subscription of the source, so the receiver stays on
// while a chrony socket is configured.

import GPSDProtocol
import LinuxSystem
import Signals

final class ChronyFeed: Sendable {
    private struct State {
        var serial: DatagramSocket?
        var pps: DatagramSocket?
        /// Wall-clock seconds of the last failed connect, so a missing chronyd is retried once a second.
        var lastSerialAttempt: Int64 = .min
        var lastPPSAttempt: Int64 = .min
        var token: SignalToken?
        var reported: Set<String> = []
        /// `stop()` ran: a socket connected after it is closed, not kept.
        var stopped = false
    }

    private let serialPath: String?
    private let ppsPath: String?
    private let log: @Sendable (String) -> Void
    private let state = Lock(State())

    init(source: GPSDSource, serialPath: String?, ppsPath: String?, log: @escaping @Sendable (String) -> Void) {
        self.serialPath = serialPath
        self.ppsPath = ppsPath
        self.log = log
        let token = source.events.subscribe { [weak self] event in self?.deliver(event) }
        state.withLock { $0.token = token }
    }

    func stop() {
        let (token, serial, pps) = state.withLock { state in
            defer {
                state.token = nil
                state.serial = nil
                state.pps = nil
                state.stopped = true
            }
            return (state.token, state.serial, state.pps)
        }
        token?.cancel()
        serial?.close()
        pps?.close()
    }

    /// Runs on the source's thread: sends at once (datagrams never block).
    private func deliver(_ event: GPSDEvent) {
        switch event {
        case .timeOffset(let offset):
            if let serialPath { send(offset, isPulse: false, path: serialPath, pps: false) }
        case .pulse(let offset):
            if let ppsPath { send(offset, isPulse: false, path: ppsPath, pps: true) }
        case .batch(let events):
            for event in events { deliver(event) }
        default:
            break
        }
    }

    private func send(_ offset: TimeOffset, isPulse: Bool, path: String, pps: Bool) {
        // gpsd's convention: the whole offset (true minus system time), pulse 0, for PPS too, since
        // the edge's second is known from the receiver.
        let sample = ChronySample(systemTime: offset.clock, offset: Double(offset.real - offset.clock) / 1e9,
                                  isPulse: isPulse)
        guard let socket = socket(path: path, pps: pps, now: offset.clock / 1_000_000_000) else { return }
        do {
            try socket.send(sample.datagram)
        } catch {
            log("chrony socket \(path): \(error); reconnecting")
            state.withLock { state in
                if pps { state.pps = nil } else { state.serial = nil }
            }
            socket.close()
        }
    }

    /// The socket to `path`, connected now if there is none and the last try was before the second `now`.
    /// The state changes under the lock; connecting and the log line happen after it is released.
    private func socket(path: String, pps: Bool, now: Int64) -> DatagramSocket? {
        let step = state.withLock { state -> Step in
            if let socket = pps ? state.pps : state.serial { return .use(socket) }
            let last = pps ? state.lastPPSAttempt : state.lastSerialAttempt
            guard now != last, !state.stopped else { return .wait }
            if pps { state.lastPPSAttempt = now } else { state.lastSerialAttempt = now }
            return .connect
        }
        switch step {
        case .use(let socket): return socket
        case .wait: return nil
        case .connect: break
        }
        guard let socket = try? DatagramSocket.connect(to: path) else {
            let first = state.withLock { $0.reported.insert(path).inserted }
            if first { log("chrony socket \(path): nobody listens (is chronyd up?)") }
            return nil
        }
        let kept = state.withLock { state -> Bool in
            state.reported.remove(path)
            guard !state.stopped else { return false }
            if pps { state.pps = socket } else { state.serial = socket }
            return true
        }
        guard kept else {
            socket.close()
            return nil
        }
        return socket
    }

    /// What `socket(path:pps:now:)` decided under the lock.
    private enum Step {
        /// The connected socket.
        case use(DatagramSocket)
        /// None yet: connect now.
        case connect
        /// None, and tried this second already (or stopped).
        case wait
    }
}
