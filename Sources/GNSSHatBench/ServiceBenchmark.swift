// `service`: gnss-hat serve and Debian's gpsd side by side, each reading its own pseudo-terminal fed
// the same receiver stream (10 Hz, paced as a 115200-baud UART; ours's half an epoch after gpsd's, see
// `stagger`), each watched by one TCP client in this process. Per stream (NMEA, UBX) and service:
//   - NMEA: last byte of an epoch (GLL) -> that epoch's last TPV at the client: p50, p99;
//   - UBX: last byte of NAV-PVT -> the first TPV carrying its position: p50, p99. Both services
//     report a UBX epoch's position on NAV-PVT (gpsd does not wait for NAV-TIMEUTC, so measuring
//     from the epoch's last byte gave gpsd negative latencies); NAV-PVT goes out in one write, so
//     its first and last byte leave at the same moment;
//   - first position-bearing message (RMC, NAV-PVT) -> first TPV carrying that epoch's position
//     (ours runs with --early-position; gpsd reports NMEA at the end of the cycle, UBX on NAV-PVT);
//   - resident memory and CPU time of each service while streaming (CPU time: the scheduler's
//     nanosecond account of every thread, see ThreadCounters); resident memory counts the
//     clean pages of the executable and shared libraries mapped in, so the private dirty memory
//     (smaps_rollup: the heap, stacks, relocated data) is printed beside it. Ours is the static
//     binary users install (scripts/build-static.sh, which bench.sh runs): the Swift runtime in
//     it is laid out for the service (scripts/profile-order.sh); the release build, with the
//     shared Swift libraries, maps nearly twice as much (12.9 against 7.0 MB, measured);
//   - the headline, counted rather than timed: instructions per epoch (both services under valgrind's
//     callgrind, a run of 50 epochs and one of the measured epochs, the difference per extra epoch) and
//     wake-ups per epoch (every thread's voluntary context switches over the measured epochs, threads
//     that start or end meanwhile included, sampled once per epoch: see ThreadCounters); printed last;
//   - context switches per epoch, voluntary and involuntary (information: preemptions count the load);
//   - wake-ups per second while no client watches (context switches of every thread), and which
//     threads (by name) woke;
//   - the floor under both services' latency: a service that does nothing (ServiceFloor), measured in
//     each run before the stream, both services idle. Times are information only (`target=info`): on
//     this shared machine the floor scores about what either service does.
// Runs: NMEA and UBX with one watching client each (under callgrind, then timed), NMEA with 20 (timed).
// Both services run at nice -10: gpsd sets it itself when started as root (as here), ours too
// (serve's --nice default); unprivileged, both would keep the nice value they were given.
// Environment: GNSSHAT_BENCH_GNSS_HAT (the gnss-hat to measure; default: the one beside this
// program), GNSSHAT_BENCH_RUNS (runs per stream, medians reported, default 3),
// GNSSHAT_BENCH_SERVICE_EPOCHS (epochs measured per run after 20 of warm-up, default 300),
// GNSSHAT_BENCH_SERVICE_PROFILE=DIR (only the callgrind runs, profiles kept in DIR; no timing is
// printed), GNSSHAT_BENCH_SERVICE_CALLGRIND=0 (no callgrind runs, no instructions lines),
// GNSSHAT_BENCH_SERVICE_RUNS=nmea,ubx,nmea-20 (the runs to make), GNSSHAT_BENCH_STAGGER (milliseconds
// between the two services' streams, default 50; 0 writes both at the same moments),
// GNSSHAT_BENCH_THREADS (set: print each service's CPU time and switches by thread name).

import Foundation
import LinuxSystem
import Synchronization

enum ServiceBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let runs = max(1, Int(environment["GNSSHAT_BENCH_RUNS"] ?? "") ?? 3)
    static let measured = max(50, Int(environment["GNSSHAT_BENCH_SERVICE_EPOCHS"] ?? "") ?? 300)
    static let warmUp = 20
    /// How long after the first side's stream the second side's is written (GNSSHAT_BENCH_STAGGER, in
    /// milliseconds; default half an epoch). Written at the same moments, the two sides handled each
    /// epoch's end together on this machine's two cores (and, in `mqtt`, in one broker and one
    /// subscriber), so each side's latency tail measured the other's work as much as its own; half an
    /// epoch apart, each handles its end alone, as it would on a Pi, and the rest of the other's
    /// stream still arrives meanwhile.
    static let stagger = Duration.milliseconds(Int(environment["GNSSHAT_BENCH_STAGGER"] ?? "") ?? 50)
    /// Bytes per second of a 115200-baud 8N1 UART.
    static let bytesPerSecond = 11_520.0

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One configuration: a stream and how many clients watch each service.
    struct Configuration {
        let stream: ServiceStream
        let watchers: Int
        /// `nmea`, `ubx`, `nmea-20`: the name GNSSHAT_BENCH_SERVICE_RUNS takes.
        var name: String { watchers == 1 ? stream.rawValue : "\(stream.rawValue)-\(watchers)" }
        /// How the bench lines name it: `nmea`, `ubx`, `nmea 20 watchers`.
        var label: String { watchers == 1 ? stream.rawValue : "\(stream.rawValue) \(watchers) watchers" }
    }

    static let configurations = [
        Configuration(stream: .nmea, watchers: 1), Configuration(stream: .ubx, watchers: 1),
        Configuration(stream: .nmea, watchers: 20),
    ]

    static func run() async throws {
        let gnssHat = environment["GNSSHAT_BENCH_GNSS_HAT"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("gnss-hat")
        guard FileManager.default.isExecutableFile(atPath: gnssHat.path) else {
            throw Failure(description: "\(gnssHat.path) is missing: scripts/bench.sh builds it "
                + "(scripts/build-static.sh; GNSSHAT_BENCH_GNSS_HAT names the binary to measure)")
        }
        print("service: ours is \(gnssHat.path)")
        let gpsd = URL(fileURLWithPath: "/usr/sbin/gpsd")
        guard FileManager.default.isExecutableFile(atPath: gpsd.path) else {
            throw Failure(description: "/usr/sbin/gpsd is missing: install Debian's gpsd (scripts/setup.sh does)")
        }
        let profile = environment["GNSSHAT_BENCH_SERVICE_PROFILE"].map { URL(fileURLWithPath: $0) }
        if let profile { try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true) }
        let selected = environment["GNSSHAT_BENCH_SERVICE_RUNS"]?.split(separator: ",").map(String.init)
        var idle: [(ours: Double, gpsd: Double)] = []
        var idleThreads: [String: Double] = [:]
        var memory: [(ours: Double, gpsd: Double, oursPeak: Double, gpsdPeak: Double)] = []
        var privateDirty: [(ours: Double, gpsd: Double)] = []
        // The headline: what a Pi pays per epoch, counted exactly (callgrind's instructions, the
        // threads' voluntary context switches), by stream.
        var instructions: [ServiceStream: (ours: Double, gpsd: Double)] = [:]
        var wakeUps: [ServiceStream: (ours: Double, gpsd: Double)] = [:]
        // Without GNSSHAT_BENCH_SERVICE_PROFILE the profiles go to a directory removed at the end;
        // GNSSHAT_BENCH_SERVICE_CALLGRIND=0 leaves them out (no instructions lines).
        let temporaryProfiles = profile != nil || environment["GNSSHAT_BENCH_SERVICE_CALLGRIND"] == "0" ? nil
            : FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-bench-callgrind-\(UUID())")
        defer { if let temporaryProfiles { try? FileManager.default.removeItem(at: temporaryProfiles) } }
        for configuration in configurations where selected?.contains(configuration.name) ?? true {
            let stream = configuration.stream
            var results: [(ours: Measurement, gpsd: Measurement)] = []
            var floors: [FloorLines.Figures] = []
            if configuration.watchers == 1, let directory = profile ?? temporaryProfiles {
                let (ours, peer) = try await instructionsPerEpoch(configuration, gnssHat: gnssHat, gpsd: gpsd,
                                                                  profiles: directory)
                instructions[stream] = (ours, peer)
                if profile != nil {
                    print(countLine("service \(configuration.label) instructions per epoch", ours: ours, gpsd: peer,
                                    target: "<=0.25"))
                    continue
                }
            }
            for _ in 0..<runs {
                let run = try await ServiceRun(
                    stream: stream, watchers: configuration.watchers, gnssHat: gnssHat, gpsd: gpsd,
                    epochs: measured, profile: nil
                ).run()
                results.append((run.ours, run.gpsd))
                if let floor = run.floor { floors.append(floor) }
                if configuration.watchers == 1 {
                    idle.append((run.ours.idleWakeups, run.gpsd.idleWakeups))
                    for (thread, rate) in run.ours.idleWakeupsByThread { idleThreads[thread, default: 0] += rate }
                    privateDirty.append((run.ours.privateDirty, run.gpsd.privateDirty))
                    memory.append((run.ours.rss, run.gpsd.rss, run.ours.peakRSS, run.gpsd.peakRSS))
                }
            }
            func figure(_ key: KeyPath<Measurement, Double>) -> (Double, Double) {
                (median(results.map { $0.ours[keyPath: key] }), median(results.map { $0.gpsd[keyPath: key] }))
            }
            let coverage = results.map { "ours \($0.ours.epochs)/\(measured) gpsd \($0.gpsd.epochs)/\(measured)" }
            let churn = results.map {
                "ours +\($0.ours.threadsStarted)/-\($0.ours.threadsEnded) gpsd +\($0.gpsd.threadsStarted)/-"
                    + "\($0.gpsd.threadsEnded)"
            }
            print("service \(configuration.label): \(results.count) runs of \(measured) epochs at 10 Hz, 115200 baud, "
                + "\(configuration.watchers) watching client(s) per service; TPV epochs measured per run (at the "
                + "first client): \(coverage.joined(separator: "; ")); threads started/ended while streaming: "
                + churn.joined(separator: "; "))
            // What any service pays besides its own work (see ServiceFloor); every run measured it.
            print(String(format: "service \(configuration.label): the floor, a service that does nothing "
                + "(read(2) on a pseudo-terminal -> send(2) to its TCP client; %d lines at %d Hz, both services "
                + "idle): p50 %.3f ms, p99 %.3f ms (medians of the runs); arrived ", FloorLines.count,
                FloorLines.rate, median(floors.map(\.p50)), median(floors.map(\.p99)))
                + floors.map { "\($0.arrived)/\(FloorLines.count)" }.joined(separator: ", "))
            let label = configuration.label
            let lastByte = stream == .ubx ? "NAV-PVT last-byte->TPV" : "last-byte->TPV"
            var (ours, peer) = figure(\.lastByteP50)
            Bench.report("service \(label) \(lastByte) p50", ours: ours, peer: "gpsd", peerValue: peer,
                         unit: "ms", target: "info")
            (ours, peer) = figure(\.lastByteP99)
            Bench.report("service \(label) \(lastByte) p99", ours: ours, peer: "gpsd", peerValue: peer,
                         unit: "ms", target: "info")
            // Time is information only: on this shared VM a service that does nothing (the floor above)
            // scores about what either service does; what a Pi pays is counted in the headline lines.
            (ours, peer) = figure(\.firstPositionP50)
            Bench.report("service \(label) first-position->TPV p50", ours: ours, peer: "gpsd",
                         peerValue: peer, unit: "ms", target: "info")
            (ours, peer) = figure(\.firstPositionP99)
            Bench.report("service \(label) first-position->TPV p99", ours: ours, peer: "gpsd",
                         peerValue: peer, unit: "ms", target: "info")
            (ours, peer) = figure(\.cpuSeconds)
            Bench.report("service \(label) CPU time while streaming", ours: ours, peer: "gpsd",
                         peerValue: peer, unit: "s", target: "info")
            (ours, peer) = figure(\.switchesPerEpoch)
            Bench.report("service \(label) context switches per epoch (voluntary and preempted)", ours: ours,
                         peer: "gpsd", peerValue: peer, unit: "switches", target: "info")
            if configuration.watchers == 1 { wakeUps[stream] = figure(\.wakeUpsPerEpoch) }
        }
        if !memory.isEmpty { printMemoryAndIdle(memory, privateDirty, idle, idleThreads) }
        // The headline lines, last: instructions (callgrind, exact) and wake-ups (medians of the runs).
        for stream in ServiceStream.allCases {
            guard let (ours, peer) = instructions[stream] else { continue }
            print(countLine("service \(stream.rawValue) instructions per epoch", ours: ours, gpsd: peer,
                            target: "<=0.25"))
        }
        for stream in [ServiceStream.ubx, .nmea] {
            guard let (ours, peer) = wakeUps[stream] else { continue }
            print(countLine("service \(stream.rawValue) wake-ups per epoch", ours: ours, gpsd: peer,
                            target: "ours<=2"))
        }
    }

    /// The memory lines and the wake-ups while nobody watches, medians of the runs.
    static func printMemoryAndIdle(
        _ memory: [(ours: Double, gpsd: Double, oursPeak: Double, gpsdPeak: Double)],
        _ privateDirty: [(ours: Double, gpsd: Double)], _ idle: [(ours: Double, gpsd: Double)],
        _ idleThreads: [String: Double]
    ) {
        Bench.report("service resident memory while streaming", ours: median(memory.map(\.ours)), peer: "gpsd",
                     peerValue: median(memory.map(\.gpsd)), unit: "MB", target: "<=1")
        Bench.report("service peak resident memory", ours: median(memory.map(\.oursPeak)), peer: "gpsd",
                     peerValue: median(memory.map(\.gpsdPeak)), unit: "MB", target: "<=1")
        Bench.report("service private dirty memory while streaming", ours: median(privateDirty.map(\.ours)),
                     peer: "gpsd", peerValue: median(privateDirty.map(\.gpsd)), unit: "MB", target: "-")
        let oursIdle = median(idle.map(\.ours))
        let gpsdIdle = median(idle.map(\.gpsd))
        print("bench service wake-ups while nobody watches: ours=\(Bench.format(oursIdle)) /s "
            + "gpsd=\(Bench.format(gpsdIdle)) /s target=ours 0")
        // Which of our threads woke, averaged over the runs: a libdispatch thread (named after its
        // root queue) here would mean a task ran on libdispatch's pool, whose monitor wakes the
        // process each second.
        let runCount = Double(max(idle.count, 1))
        let woke = idleThreads.filter { $0.value > 0 }.sorted { $0.value > $1.value }
            .map { "\($0.key) \(Bench.format($0.value / runCount)) /s" }
        print("service wake-ups while nobody watches, ours by thread: "
            + (woke.isEmpty ? "none" : woke.joined(separator: ", ")))
    }

    /// A headline line: `bench NAME: ours=X gpsd=Y ratio=R target=T`, no unit (counts per epoch).
    static func countLine(_ name: String, ours: Double, gpsd: Double, target: String) -> String {
        let ratio = gpsd == 0 ? Double.infinity : ours / gpsd
        return "bench \(name): ours=\(Bench.format(ours)) gpsd=\(Bench.format(gpsd)) "
            + "ratio=\(String(format: "%.2f", ratio)) target=\(target)"
    }

    /// Instructions per epoch of both services under callgrind: a run of 50 epochs and one of
    /// `measured` (at least 100), profiles in `profiles`; the difference over the epochs between, so
    /// that start-up and shut-down cancel out.
    static func instructionsPerEpoch(
        _ configuration: Configuration, gnssHat: URL, gpsd: URL, profiles: URL
    ) async throws -> (ours: Double, gpsd: Double) {
        var totals: [(ours: Double, gpsd: Double)] = []
        let long = max(measured, 100)
        for epochs in [50, long] {
            let run = try await ServiceRun(
                stream: configuration.stream, watchers: configuration.watchers, gnssHat: gnssHat, gpsd: gpsd,
                epochs: epochs, profile: profiles.appendingPathComponent("\(configuration.name)-\(epochs)")
            ).run()
            totals.append((run.ours.instructions, run.gpsd.instructions))
        }
        let epochs = Double(long - 50)
        return ((totals[1].ours - totals[0].ours) / epochs, (totals[1].gpsd - totals[0].gpsd) / epochs)
    }

    /// One service's figures in one run.
    struct Measurement {
        var lastByteP50 = 0.0
        var lastByteP99 = 0.0
        var firstPositionP50 = 0.0
        var firstPositionP99 = 0.0
        /// Epochs with a TPV, of those measured.
        var epochs = 0
        /// MB resident at the end of streaming, and the peak.
        var rss = 0.0
        var peakRSS = 0.0
        /// CPU time of every thread while streaming (see ``ThreadCounters``).
        var cpuSeconds = 0.0
        /// Context switches of every thread while streaming, per epoch streamed (see ``ThreadCounters``).
        var switchesPerEpoch = 0.0
        /// The voluntary ones: how often a thread slept and was woken, per epoch streamed.
        var wakeUpsPerEpoch = 0.0
        /// Threads started and ended while streaming (an ended one's last epoch is not counted).
        var threadsStarted = 0
        var threadsEnded = 0
        /// Instructions of the whole process, start to exit (profile runs only).
        var instructions = 0.0
        /// MB of private dirty pages at the end of streaming (`/proc/PID/smaps_rollup`).
        var privateDirty = 0.0
        var idleWakeups = 0.0
        /// Wake-ups per second while idle, per thread name (`/proc/PID/task/TID/comm`).
        var idleWakeupsByThread: [String: Double] = [:]
    }
}

/// When each epoch's TPVs reached the client: the first carrying the position, and the last one.
final class Arrivals: Sendable {
    private struct State {
        var firstPosition: [Int: ContinuousClock.Instant] = [:]
        var last: [Int: ContinuousClock.Instant] = [:]
    }

    private let state = Lock(State())

    func record(epoch: Int, hasPosition: Bool, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            state.last[epoch] = instant
            if hasPosition && state.firstPosition[epoch] == nil { state.firstPosition[epoch] = instant }
        }
    }

    var firstPosition: [Int: ContinuousClock.Instant] { state.withLock { $0.firstPosition } }
    var last: [Int: ContinuousClock.Instant] { state.withLock { $0.last } }
}

/// One run: both services on one stream.
struct ServiceRun {
    let stream: ServiceStream
    /// Clients watching each service; the first one's arrivals are timed.
    let watchers: Int
    let gnssHat: URL
    let gpsd: URL
    /// Epochs measured, after `ServiceBenchmark.warmUp` more.
    let epochs: Int
    /// Where callgrind writes both services' profiles (nil: no profile, the services run as they are).
    let profile: URL?

    /// The seed of the streams `feed` writes.
    static let streamSeed: UInt64 = 7

    /// Index 0 is gpsd, 1 is ours. The floor (ServiceFloor) is measured first, both services idle, unless
    /// the run profiles.
    func run() async throws
        -> (ours: ServiceBenchmark.Measurement, gpsd: ServiceBenchmark.Measurement, floor: FloorLines.Figures?)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-bench-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminals = [try PseudoTerminal(), try PseudoTerminal()]
        // Open to the end: released after its last use (the last write), a terminal would drop an epoch's
        // end its reader had not taken yet, and the service would see its line hang up.
        defer { withExtendedLifetime(terminals) {} }
        let boardPath = try Self.writeBoard(on: terminals[1].devicePath,
                                            title: "the service benchmark's pseudo-terminal", in: directory)
        let ports = [try freePort(), try freePort()]
        if let profile {
            try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        }
        let gpsdProcess = try launch(gpsd, ["-N", "-n", "-b", "-S", "\(ports[0])", terminals[0].devicePath],
                                     profile: profile?.appendingPathComponent("gpsd.callgrind"))
        // gpsd keeps SIGTERM blocked when its parent's thread had it blocked: SIGKILL ends it.
        defer { kill(gpsdProcess.processIdentifier, SIGKILL) }
        let oursProcess = try launch(gnssHat, [
            "serve", "--board", boardPath, "--listen", "127.0.0.1:\(ports[1])", "--early-position", "--linger", "1",
        ], profile: profile?.appendingPathComponent("ours.callgrind"))
        defer { if oursProcess.isRunning { kill(oursProcess.processIdentifier, SIGKILL) } }
        let pids = [gpsdProcess.processIdentifier, oursProcess.processIdentifier]

        // Each service's clients, the timed one first.
        var clients: [SocketConnection] = []
        var extraClients: [SocketConnection] = []
        for port in ports { clients.append(try await connect(port: port)) }
        for port in ports {
            for _ in 1..<watchers { extraClients.append(try await connect(port: port)) }
        }
        for client in clients + extraClients {
            try client.sendAll(Array("?WATCH={\"enable\":true,\"json\":true};\n".utf8))
            try await waitForLine(client, containing: "\"class\":\"WATCH\"")
        }
        for (pid, terminal) in zip(pids, terminals) { try await waitUntilOpen(pid, terminal.devicePath) }
        try await Task.sleep(for: .milliseconds(200))
        let floor = profile == nil ? try await ServiceFloor.measure(tools: self) : nil

        // Readers: one thread timestamps every TPV on both connections as it arrives.
        let arrivals = [Arrivals(), Arrivals()]
        let stop = Atomic<Bool>(false)
        let poller = try Poller()
        // The other clients are read (and their lines dropped) so that they never fall behind.
        for (index, client) in (clients + extraClients).enumerated() {
            try poller.add(client.rawDescriptor, token: UInt64(index), interest: .readable)
        }
        let connections = clients + extraClients
        let reader = try LoopThread(name: "bench-reader") {
            var buffers: [[UInt8]] = [[], []]
            var scratch = [UInt8](repeating: 0, count: 65536)
            while !stop.load(ordering: .acquiring) {
                guard let events = try? poller.wait(timeout: .milliseconds(50)) else { return }
                for event in events {
                    let index = Int(event.token)
                    guard case .received(let count)? = try? scratch.withUnsafeMutableBytes({
                        try connections[index].receive(into: $0)
                    }) else { continue }
                    guard index < 2 else { continue }
                    let now = ContinuousClock.now
                    buffers[index] += scratch[0..<count]
                    while let newline = buffers[index].firstIndex(of: 0x0A) {
                        Self.record(buffers[index][..<newline], at: now, into: arrivals[index])
                        buffers[index].removeSubrange(...newline)
                    }
                }
            }
        }

        // Writer: each message at its moment on a 115200-baud line, 10 Hz epochs, to both terminals.
        var threadCounters: [ThreadCounters?] = [nil, nil]
        let clock = ContinuousClock()
        let total = ServiceBenchmark.warmUp + epochs
        let stagger = ServiceBenchmark.stagger
        let writes = try await Self.feed(stream, epochs: total, to: terminals, stagger: stagger) { side, epoch in
            if epoch == ServiceBenchmark.warmUp {
                // Only the measured epochs count: what ran before (start-up, warm-up) is left out. Each side's
                // window opens as its own stream's epoch begins (ours's `stagger` after gpsd's): the wake-ups
                // of the last warm-up epoch stay out of it.
                threadCounters[side] = ThreadCounters(pid: pids[side])
            } else {
                threadCounters[side]?.sample()
            }
        }
        let (firstWrite, lastWrite) = (writes.first, writes.last)
        try await Task.sleep(for: .milliseconds(500))
        let counters = threadCounters.compactMap { $0 }
        guard counters.count == 2 else { throw ServiceBenchmark.Failure(description: "no epoch was measured") }
        let streamCounts = counters.map { $0.stop() }
        let memory = pids.map(residentMemory)
        let dirty = pids.map(privateDirtyMemory)
        stop.store(true, ordering: .releasing)
        reader.join()

        var measurements = [ServiceBenchmark.Measurement(), ServiceBenchmark.Measurement()]
        for side in 0..<2 {
            let measuredEpochs = ServiceBenchmark.warmUp..<total
            var lastByte: [Double] = []
            var firstPosition: [Double] = []
            let last = arrivals[side].last
            let first = arrivals[side].firstPosition
            for epoch in measuredEpochs {
                // UBX: from NAV-PVT's last byte (its one write) to the first TPV with its position.
                let arrival = stream == .ubx ? first[epoch] : last[epoch]
                let sent = stream == .ubx ? firstWrite[side][epoch] : lastWrite[side][epoch]
                if let arrived = arrival, let written = sent {
                    lastByte.append(milliseconds(written.duration(to: arrived)))
                }
                if let arrived = first[epoch], let written = firstWrite[side][epoch] {
                    firstPosition.append(milliseconds(written.duration(to: arrived)))
                }
            }
            measurements[side].epochs = lastByte.count
            measurements[side].lastByteP50 = percentile(lastByte, 0.5)
            measurements[side].lastByteP99 = percentile(lastByte, 0.99)
            measurements[side].firstPositionP50 = percentile(firstPosition, 0.5)
            measurements[side].firstPositionP99 = percentile(firstPosition, 0.99)
            measurements[side].cpuSeconds = streamCounts[side].cpuSeconds
            measurements[side].switchesPerEpoch = Double(streamCounts[side].switches) / Double(epochs)
            measurements[side].wakeUpsPerEpoch = Double(streamCounts[side].wakeUps) / Double(epochs)
            measurements[side].threadsStarted = counters[side].started
            measurements[side].threadsEnded = counters[side].ended
            measurements[side].rss = memory[side].rss
            measurements[side].peakRSS = memory[side].peak
            measurements[side].privateDirty = dirty[side]
        }

        // Idle: nobody watches; ours powers the receiver off after its 1 s linger.
        for client in clients + extraClients { client.close() }
        if let profile {
            // Both end on SIGTERM, and callgrind writes each profile as its process exits.
            for (side, process) in [gpsdProcess, oursProcess].enumerated() {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                let name = side == 0 ? "gpsd.callgrind" : "ours.callgrind"
                measurements[side].instructions = try totalInstructions(in: profile.appendingPathComponent(name))
            }
            return (measurements[1], measurements[0], floor)
        }
        guard watchers == 1 else {
            try stopOurs(oursProcess)
            return (measurements[1], measurements[0], floor)
        }
        try await Task.sleep(for: .seconds(3))
        let switchesBefore = pids.map(contextSwitches)
        let idleStart = clock.now
        try await Task.sleep(for: .seconds(5))
        let idleSeconds = Double(idleStart.duration(to: clock.now).components.seconds)
            + Double(idleStart.duration(to: clock.now).components.attoseconds) / 1e18
        let switchesAfter = pids.map(contextSwitches)
        for side in 0..<2 {
            // Per thread, so that a thread ending in the window does not subtract; a thread that
            // ended takes its last switches with it (counted from its start if it began here).
            var woke = 0
            for (thread, after) in switchesAfter[side] {
                let count = after.switches - (switchesBefore[side][thread]?.switches ?? 0)
                woke += count
                measurements[side].idleWakeupsByThread[after.name, default: 0] += Double(count) / idleSeconds
            }
            measurements[side].idleWakeups = Double(woke) / idleSeconds
        }

        try stopOurs(oursProcess)
        return (measurements[1], measurements[0], floor)
    }

    func stopOurs(_ process: Process) throws {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        // Under valgrind a SIGTERM ends the process by the signal: nothing else is checked then.
        if process.terminationStatus != 0 && profile == nil {
            throw ServiceBenchmark.Failure(description: "gnss-hat serve exited \(process.terminationStatus)")
        }
    }

    /// Records a TPV line: its epoch (from its time) and whether it carries a position.
    static func record(_ line: ArraySlice<UInt8>, at instant: ContinuousClock.Instant, into arrivals: Arrivals) {
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("{\"class\":\"TPV\""), let range = text.range(of: "\"time\":\"") else { return }
        let rest = text[range.upperBound...]
        guard let end = rest.firstIndex(of: "\""), let epoch = ServiceStream.epochIndex(time: rest[..<end]) else {
            return
        }
        arrivals.record(epoch: epoch, hasPosition: text.contains("\"lat\":"), at: instant)
    }
}
