// The service benchmark's helpers: the feed of the pseudo-terminals, the processes, their ports and
// connections, and what /proc and callgrind say of them (memory, context switches, instructions).
import Foundation
import LinuxSystem

extension ServiceRun {
    /// When each epoch's first and last message was written, per terminal.
    struct Writes {
        var first: [[Int: ContinuousClock.Instant]] = [[:], [:]]
        var last: [[Int: ContinuousClock.Instant]] = [[:], [:]]
    }

    /// Writes `epochs` epochs of `stream` to both terminals: each message at its moment on a
    /// 115200-baud line, 10 Hz epochs, the terminal written first alternating so that neither side
    /// is always second. `beforeEpoch` runs before each epoch is written to each side (side, epoch: to
    /// sample counters at the end of the warm-up).
    static func feed(
        _ stream: ServiceStream, epochs: Int, to terminals: [PseudoTerminal], stagger: Duration = .zero,
        beforeEpoch: (Int, Int) -> Void = { _, _ in }
    ) async throws -> Writes {
        var writes = Writes()
        var random = BenchRandom(state: streamSeed)
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(50)
        // Every write of the run: when, which side, which epoch and message; side 1 `stagger` after
        // side 0, the two interleaved in time (one side's epoch may end in the other's next).
        let messages = (0..<epochs).map { stream.messages(epoch: $0, random: &random) }
        var schedule: [(due: ContinuousClock.Instant, side: Int, epoch: Int, number: Int)] = []
        for (epoch, epochMessages) in messages.enumerated() {
            let epochStart = start + .milliseconds(100 * epoch)
            var offset = 0
            for number in epochMessages.indices {
                let due = epochStart + .nanoseconds(Int64(Double(offset) / ServiceBenchmark.bytesPerSecond * 1e9))
                for side in epoch % 2 == 0 ? [0, 1] : [1, 0] {
                    schedule.append((side == 1 ? due + stagger : due, side, epoch, number))
                }
                offset += epochMessages[number].count
            }
        }
        // Stable: writes due at once keep their alternating order.
        let order = schedule.indices.sorted { (schedule[$0].due, $0) < (schedule[$1].due, $1) }
        var begun = [-1, -1]
        for index in order {
            let (due, side, epoch, number) = schedule[index]
            if epoch > begun[side] {
                begun[side] = epoch
                beforeEpoch(side, epoch)
            }
            try await clock.sleep(until: due, tolerance: .zero)
            try terminals[side].write(messages[epoch][number])
            let written = clock.now
            if number == 0 { writes.first[side][epoch] = written }
            if number == messages[epoch].count - 1 { writes.last[side][epoch] = written }
        }
        return writes
    }

    /// Writes `bench.json` in `directory`: a u-blox on the pseudo-terminal `path` at 115200 baud, with
    /// nothing to power and nothing to configure; returns its path.
    static func writeBoard(on path: String, title: String, in directory: URL) throws -> String {
        let board = """
            {"name": "bench", "title": "\(title)", "chip": {"family": "ublox-gen8"},
             "link": {"type": "uart", "path": "\(path)", "baud": 115200, "detectSpeed": false},
             "power": {"strategies": [], "upTimeoutSeconds": 30},
             "configuration": {"enabled": false}, "notes": [], "sources": []}
            """
        let boardPath = directory.appendingPathComponent("bench.json").path
        try board.write(toFile: boardPath, atomically: true, encoding: .utf8)
        return boardPath
    }

    /// Starts `executable`; with a `profile` path, under valgrind's callgrind writing there.
    func launch(_ executable: URL, _ arguments: [String], profile: URL? = nil) throws -> Process {
        let process = Process()
        if let profile {
            // gpsd started as root drops to its own user, which then reopens the profile to write
            // it at exit: made here, writable by anyone (callgrind would make it root's, mode 600,
            // and the dropped user could not write it: an empty profile).
            guard FileManager.default.createFile(atPath: profile.path, contents: nil),
                  chmod(profile.path, 0o666) == 0
            else {
                throw ServiceBenchmark.Failure(description: "cannot make \(profile.path) for callgrind")
            }
            // Through perl, to start with no signal blocked (the spawning thread blocks some, and a
            // child inherits its mask): both must end on SIGTERM for callgrind to write the profile.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/perl")
            process.arguments = [
                "-MPOSIX", "-e", "sigprocmask(SIG_SETMASK, POSIX::SigSet->new); exec @ARGV or die \"exec: $!\"",
                "/usr/bin/valgrind", "--tool=callgrind", "--callgrind-out-file=\(profile.path)",
                "--log-file=\(profile.path).log", executable.path,
            ] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    func freePort() throws -> UInt16 {
        let listener = try SocketListener(address: .ipv4("127.0.0.1", port: 0))
        defer { listener.close() }
        guard let port = listener.address.port else { throw ServiceBenchmark.Failure(description: "no port") }
        return port
    }

    func connect(port: UInt16) async throws -> SocketConnection {
        for _ in 0..<200 {
            if let connection = try? SocketConnection.connect(to: .ipv4("127.0.0.1", port: port)) { return connection }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw ServiceBenchmark.Failure(description: "nothing listens on 127.0.0.1:\(port)")
    }

    func waitForLine(_ connection: SocketConnection, containing text: String) async throws {
        var received: [UInt8] = []
        for _ in 0..<100 {
            received += try connection.receive(timeout: .milliseconds(100))
            if String(decoding: received, as: UTF8.self).contains(text) { return }
        }
        throw ServiceBenchmark.Failure(description: "no \(text) from the service")
    }

    func waitUntilOpen(_ pid: Int32, _ path: String) async throws {
        for _ in 0..<400 {
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in descriptors
            where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == path {
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw ServiceBenchmark.Failure(description: "process \(pid) never opened \(path)")
    }

    /// User plus system CPU time of every thread (`/proc/PID/stat` fields 14 and 15).
    /// VmRSS and VmHWM of `/proc/PID/status`, in MB.
    func residentMemory(_ pid: Int32) -> (rss: Double, peak: Double) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Double {
            for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
                let number = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
                return number / 1024
            }
            return 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// Private_Dirty of `/proc/PID/smaps_rollup`, in MB: pages only this process wrote.
    func privateDirtyMemory(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("Private_Dirty:") {
            return (line.split(separator: " ").compactMap { Double($0) }.first ?? 0) / 1024
        }
        return 0
    }

    /// Voluntary and involuntary context switches of each thread (how often it woke up), by thread
    /// id, with the thread's name.
    func contextSwitches(_ pid: Int32) -> [String: (name: String, switches: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var switches: [String: (name: String, switches: Int)] = [:]
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else {
                continue
            }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? task
            var count = 0
            for line in text.split(separator: "\n") where line.contains("ctxt_switches:") {
                count += Int(line.split(separator: "\t").last ?? "") ?? 0
            }
            switches[task] = (name, count)
        }
        return switches
    }

    /// The instructions of the profile callgrind wrote to `file` (its `summary:` line); valgrind's
    /// own messages are beside it, in `file`.log.
    func totalInstructions(in file: URL) throws -> Double {
        let text = try String(contentsOf: file, encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        throw ServiceBenchmark.Failure(description: "callgrind wrote no summary line to \(file.path) "
            + "(valgrind's messages: \(file.path).log)")
    }

    func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }
}
