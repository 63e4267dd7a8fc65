// The floor of the service benchmark's latency: a service that does nothing. A thread of this program,
// at nice -10 as both services, blocked in read(2) on a pseudo-terminal of its own, sends what each read
// returns at once to its one TCP client over loopback; a thread of this program blocked in poll(2) on
// that client takes it. Each line is timed as the services' epochs are, from its write to the terminal
// to its arrival at the client. No service reading a serial line and writing to a watcher through this
// kernel can be faster: what a service's latency has above this is its own work.

import Foundation
import LinuxSystem

/// What both floors (this one and the MQTT benchmark's) share: the do-nothing service's reader, a thread
/// at nice -10 blocked in read(2) on a pseudo-terminal of its own, handing on what each read returns; and
/// the numbered lines written to that terminal at a steady rate, each timed from its write to its arrival
/// wherever the floor delivers it.
enum FloorLines {
    /// Lines per measurement, and their rate (Hz).
    static let count = 300
    static let rate = 25

    struct Figures {
        var p50 = 0.0
        var p99 = 0.0
        var arrived = 0
    }

    /// Starts the reader, which passes what each read returns to `forward` (the last read, "end", too)
    /// until `forward` returns false or the end came; writes lines "0" to "299" to its terminal, 25 a
    /// second, waits `settle`, and times each line from its write to its arrival as `arrivals` then gives
    /// it. Throws when fewer than half arrived.
    static func measure(
        settle: Duration, tools: ServiceRun, arrivals: () -> [Int: ContinuousClock.Instant],
        forward: @escaping @Sendable (ArraySlice<UInt8>) -> Bool
    ) async throws -> Figures {
        let terminal = try PseudoTerminal()
        defer { withExtendedLifetime(terminal) {} }
        let device = open(terminal.devicePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard device >= 0 else {
            throw ServiceBenchmark.Failure(description: "the floor: cannot open \(terminal.devicePath): errno \(errno)")
        }
        // Closed after the reader has returned (below).
        defer { close(device) }
        let reader = try LoopThread(name: "bench-floor") {
            // On Linux a nice value is a thread's: 0 names the calling thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -10)
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(device, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0, forward(buffer[..<count]), !buffer[..<count].suffix(4).elementsEqual("end\n".utf8)
                else { return }
            }
        }
        // On every way out: "end" lets the reader return.
        defer {
            _ = try? terminal.write(Array("end\n".utf8))
            reader.join()
        }

        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(50)
        var written: [ContinuousClock.Instant] = []
        for number in 0..<count {
            try await clock.sleep(until: start + .milliseconds(1000 * number / rate), tolerance: .zero)
            try terminal.write(Array("\(number)\n".utf8))
            written.append(clock.now)
        }
        try await Task.sleep(for: settle)
        let arrived = arrivals()
        let latencies = written.enumerated().compactMap { number, sent in
            arrived[number].map { tools.milliseconds(sent.duration(to: $0)) }
        }
        guard latencies.count >= count / 2 else {
            throw ServiceBenchmark.Failure(description: "the floor: only \(latencies.count) of \(count) lines arrived")
        }
        return Figures(p50: tools.percentile(latencies, 0.5), p99: tools.percentile(latencies, 0.99),
                       arrived: latencies.count)
    }
}

enum ServiceFloor {
    /// Measures the floor once, with whatever else runs meanwhile (the services, idle, in the bench).
    static func measure(tools: ServiceRun) async throws -> FloorLines.Figures {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        let client = try SocketConnection.connect(to: listener.address)
        defer { client.close() }
        var accepted: SocketConnection?
        for _ in 0..<200 {
            accepted = try listener.accept()
            if accepted != nil { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        guard let server = accepted else {
            throw ServiceBenchmark.Failure(description: "the floor: its client's connection was never accepted")
        }
        defer { server.close() }

        // The client: when each numbered line arrived; "end" (or nothing for 5 s) ends it.
        let arrivals = Lock([Int: ContinuousClock.Instant]())
        let watcher = try LoopThread(name: "bench-floor-in") {
            var pending: [UInt8] = []
            while true {
                guard let bytes = try? client.receive(timeout: .seconds(5)), !bytes.isEmpty else { return }
                let now = ContinuousClock.now
                pending += bytes
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    guard let number = Int(line) else { return }
                    arrivals.withLock { if $0[number] == nil { $0[number] = now } }
                }
            }
        }
        defer { watcher.join() }
        // The service that does nothing: what each read returns goes out at once ("end" too, which ends
        // its client).
        return try await FloorLines.measure(settle: .milliseconds(200), tools: tools) {
            arrivals.withLock { $0 }
        } forward: { bytes in
            let sent = bytes.withUnsafeBytes { bytes in
                Result { () throws(SocketError) in try server.send(bytes) }
            }
            return (try? sent.get()) == bytes.count
        }
    }
}
