// Feeds chrony's SOCK reference clock: every in-band epoch time and PPS edge becomes one
// `sock_sample` datagram. The feed holds a subscription of the source, so the receiver stays on
// while a chrony socket is configured.

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
        default:
            break
        }
    }

    private func send(_ offset: TimeOffset, isPulse: Bool, path: String, pps: Bool) {
        // gpsd's convention: the whole offset (true minus system time), pulse 0, for PPS too, since
        // the edge's second is known from the receiver.
        let sample = ChronySample(systemTime: offset.clock, offset: Double(offset.real - offset.clock) / 1e9,
                                  isPulse: isPulse)
        let now = offset.clock / 1_000_000_000
        let socket: DatagramSocket? = state.withLock { state in
            if let socket = pps ? state.pps : state.serial { return socket }
            let last = pps ? state.lastPPSAttempt : state.lastSerialAttempt
            guard now != last else { return nil }
            if pps { state.lastPPSAttempt = now } else { state.lastSerialAttempt = now }
            guard let socket = try? DatagramSocket.connect(to: path) else {
                if state.reported.insert(path).inserted { log("chrony socket \(path): nobody listens (is chronyd up?)") }
                return nil
            }
            state.reported.remove(path)
            if pps { state.pps = socket } else { state.serial = socket }
            return socket
        }
        guard let socket else { return }
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
}
