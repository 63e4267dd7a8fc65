// `gnss-hat serve` as a process, with real gpsd clients: gpspipe and the python3-gps library, and the
// process-level robustness checks (SIGTERM, descriptors, running out of descriptors).

import Foundation
import LinuxSystem
import Testing
import TestSupport

/// The python3-gps client: watches until it has a TPV and a SKY and prints what it saw as JSON.
private let pythonClient = """
    import gps, json, socket, sys
    socket.setdefaulttimeout(60)  # give up instead of hanging the test
    session = gps.gps(host="127.0.0.1", port=sys.argv[1], mode=gps.WATCH_ENABLE | gps.WATCH_JSON)
    seen = {}
    while 'TPV' not in seen or 'SKY' not in seen:
        report = session.next()
        seen.setdefault(report['class'], json.loads(str(session.response)))
    print(json.dumps({'classes': sorted(seen), 'tpv': seen['TPV'], 'sky': seen['SKY'],
                      'fix_mode': session.fix.mode, 'satellites': len(session.satellites)}))
    """

@Suite("gnss-hat serve with real gpsd clients", .serialized, .timeLimit(.minutes(3)))
struct RealClientTests {
    @Test("gpspipe -w gets VERSION, DEVICES, WATCH, TPV and SKY from the simulator board")
    func gpspipe() async throws {
        let gpspipe = try TestPaths.tool("/usr/bin/gpspipe", package: "gpsd-clients")
        let serve = try await ServeProcess(["--board", "simulator"])
        guard let port = serve.address.port else { throw TestSetupError("no port") }
        // -x 60: gpspipe gives up after a minute instead of hanging the test.
        let pipe = try ChildProcess(gpspipe, ["-w", "-n", "10", "-x", "60", "127.0.0.1:\(port)"])
        #expect(await pipe.waitForExit() == 0, "gpspipe: \(pipe.stderrLines)")
        let objects = pipe.stdout.split(whereSeparator: \.isNewline).compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        let classes = objects.compactMap { $0["class"] as? String }
        #expect(Array(classes.prefix(3)) == ["VERSION", "DEVICES", "WATCH"])
        #expect(classes.contains("TPV") && classes.contains("SKY"), "\(classes)")
        // The receiver knows the time a moment after power-on: a TPV before that carries none (as
        // gpsd's), so the first with a time is looked at (on a slow machine, the aarch64 run under
        // qemu-user, the first TPV can come before it).
        let tpvs = objects.filter { $0["class"] as? String == "TPV" }
        #expect(tpvs.allSatisfy { $0["mode"] is Int })
        let tpv = try #require(tpvs.first { $0["time"] is String }, "no TPV with a time: \(tpvs)")
        #expect(tpv["mode"] is Int)
        let sky = try #require(objects.first { $0["class"] as? String == "SKY" })
        #expect((sky["satellites"] as? [[String: Any]])?.isEmpty == false)
        #expect(await serve.stop() == 0)
    }

    @Test("served in real time, the simulated receiver tells the system's UTC time, within a second")
    func simulatorServesSystemTime() async throws {
        let serve = try await ServeProcess(["--board", "simulator"])
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: serve.address)
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        // A report leaves a little after its epoch's time (the bytes at 115200 baud, the service, a
        // loaded machine's scheduling; the first one up to a second), never before it: the smallest
        // delay of five reports bounds the offset of the simulated clock from the system's.
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var delays: [TimeInterval] = []
        while delays.count < 5 {
            let tpv = try await client.object(ofClass: "TPV")
            let received = Date()
            guard let text = tpv["time"] as? String else { continue }
            let time = try #require(format.date(from: text), "TPV time \(text) is not ISO 8601")
            delays.append(received.timeIntervalSince(time))
        }
        let smallest = try #require(delays.min())
        #expect(smallest > -0.5 && smallest < 1, "delays from TPV time to arrival: \(delays) s")
        #expect(await serve.stop() == 0)
    }

    @Test("the python3-gps client library reads TPV and SKY into its session")
    func pythonGPS() async throws {
        let python = try TestPaths.tool("/usr/bin/python3", package: "python3")
        let check = try ChildProcess(python, ["-c", "import gps"])
        #expect(await check.waitForExit() == 0, "python3-gps missing (install Debian's python3-gps): \(check.stderrLines)")
        let serve = try await ServeProcess(["--board", "simulator"])
        guard let port = serve.address.port else { throw TestSetupError("no port") }
        let client = try ChildProcess(python, ["-c", pythonClient, "\(port)"])
        #expect(await client.waitForExit() == 0, "python: \(client.stderrLines)")
        let parsed = try JSONSerialization.jsonObject(with: Data(client.stdout.utf8))
        let result = try #require(parsed as? [String: Any], "\(client.stdout)")
        let classes = try #require(result["classes"] as? [String])
        #expect(Set(["VERSION", "DEVICES", "WATCH", "TPV", "SKY"]).isSubset(of: Set(classes)))
        #expect((result["satellites"] as? Int ?? 0) > 0)
        #expect(result["fix_mode"] as? Int != nil)
        #expect(await serve.stop() == 0)
    }

    @Test("tasks run on the service's own threads: after a watch and a power-off no libdispatch thread exists")
    func ownThreads() async throws {
        let serve = try await ServeProcess(["--board", "simulator", "--verbose", "--linger", "0"])
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: serve.address)
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await client.object(ofClass: "TPV")
        try client.send("?WATCH={\"enable\":false};")
        _ = try await serve.child.waitForErrorLine { $0.hasSuffix(" closed") }
        // libdispatch's workers (named after their root queues, "...-qos" or "...overcommit") would
        // arm its once-a-second workqueue monitor: an idle service must not have any.
        var names = serve.threads.map(\.name)
        // Under qemu-user (scripts/test-aarch64.sh) the process also shows qemu's own RCU thread.
        if ProcessInfo.processInfo.environment["GNSSHAT_EMULATED"] == "qemu-user" { names.removeAll { $0 == "call_rcu" } }
        #expect(!names.isEmpty)
        let ours = names.filter { $0 == "gnss-hat" || $0.hasPrefix("gnss-") || $0 == "gpsd-loop" }
        #expect(ours == names, "threads not started by gnss-hat: \(names)")
        #expect(await serve.stop() == 0)
    }

    @Test("every thread allocates from the one malloc arena: no extra arenas of private pages")
    func oneHeapArena() async throws {
        let serve = try await ServeProcess(["--board", "simulator"])
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: serve.address)
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await client.object(ofClass: "TPV")
        _ = try await client.object(ofClass: "SKY")
        // glibc would give each of the threads that allocated (the session's too) a heap of its own.
        #expect(serve.threads.count > 2)
        #expect(serve.mallocArenaHeaps == 0)
        #expect(await serve.stop() == 0)
    }

    @Test("--nice sets every thread's priority, the ones started for a session too")
    func nice() async throws {
        // Raising the nice value needs no privilege, so the test runs as any user.
        let serve = try await ServeProcess(["--board", "simulator", "--nice", "7"])
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: serve.address)
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await client.object(ofClass: "TPV")
        var values: [String: Int] = [:]
        for thread in serve.threads {
            // The nice value is field 19 of proc(5), the 17th after the name.
            values[thread.name] = thread.stat.count > 16 ? Int(thread.stat[16]) : nil
        }
        #expect(values["gnss-uart-read"] == 7, "\(values)")
        #expect(values.values.allSatisfy { $0 == 7 }, "\(values)")
        #expect(await serve.stop() == 0)
    }

    @Test("SIGTERM: watchers hear the device close, the service stops accepting, powers off and exits 0")
    func sigterm() async throws {
        let serve = try await ServeProcess(["--board", "simulator", "--verbose"])
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: serve.address)
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await client.object(ofClass: "TPV")
        #expect(await serve.stop() == 0)
        let tail = await client.readToEnd()
        #expect(tail.last?.contains("\"activated\":0") == true, "\(tail.suffix(2))")
        let log = serve.child.stderrLines
        let stopping = try #require(log.firstIndex { $0.contains("shutting down") }, "\(log)")
        let poweredOff = try #require(log.firstIndex { $0.contains("receiver powered off") }, "\(log)")
        #expect(stopping < poweredOff)
        #expect(log.last == "gnss-hat serve: stopped; receiver off")
        #expect(throws: SocketError.self) { try SocketConnection.connect(to: serve.address) }
    }

    @Test("2,000 connect/disconnect cycles leave the service's descriptor count where it was")
    func descriptors() async throws {
        let serve = try await ServeProcess(["--board", "simulator", "--linger", "0"])
        let hub = try ClientHub()
        defer { hub.stop() }
        // One full power cycle first, so that descriptors made once (a timer's) exist already.
        let warm = try hub.connect(to: serve.address)
        try warm.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await warm.object(ofClass: "TPV")
        warm.close()
        let before = await settledDescriptorCount(serve, expected: nil)
        for cycle in 0..<2000 {
            let connection = try SocketConnection.connect(to: serve.address)
            if cycle % 20 == 0 { try connection.sendAll(Array("?WATCH={\"enable\":true};".utf8)) }
            if cycle % 5 == 0 { _ = try connection.receive(maxCount: 512, timeout: .seconds(5)) }
            connection.close()
        }
        #expect(await settledDescriptorCount(serve, expected: before) == before)
        #expect(await serve.stop() == 0)
    }

    @Test("out of descriptors: accepting pauses, and resumes when connections close")
    func outOfDescriptors() async throws {
        let shell = try TestPaths.tool("/bin/sh", package: "dash")
        let binary = try TestPaths.gnssHat()
        let child = try ChildProcess(shell, ["-c", "ulimit -n 48; exec \"$0\" serve --listen 127.0.0.1:0 --verbose",
                                             binary.path])
        let line = try await child.waitForErrorLine { $0.contains("listening on") }
        let address = try SocketAddress(parsing: String(line.split(separator: " ").last ?? ""), defaultPort: 0)
        let hub = try ClientHub()
        defer { hub.stop() }
        // 48 descriptors hold a few for the service itself and about 30 connections.
        var clients: [TestClient] = []
        for _ in 0..<60 { clients.append(try hub.connect(to: address)) }
        // The first connections are served; then the service runs out and pauses accepting.
        for client in clients.prefix(20) { #expect(try await client.object()["class"] as? String == "VERSION") }
        _ = try await child.waitForErrorLine { $0.contains("accept paused") }
        for client in clients.prefix(40) { client.close() }
        // Closing frees descriptors: every connection still waiting is served in turn.
        for client in clients.dropFirst(40) {
            #expect(try await client.object()["class"] as? String == "VERSION")
        }
        child.terminate()
        #expect(await child.waitForExit() == 0)
    }

    /// The service's descriptor count once it stops changing (the service closes connections in its
    /// own time); with `expected`, waits for that count a while before giving the last one seen.
    private func settledDescriptorCount(_ serve: ServeProcess, expected: Int?) async -> Int {
        var last = serve.descriptorCount
        var stable = 0
        for _ in 0..<500 {
            try? await Task.sleep(for: .milliseconds(10))
            let count = serve.descriptorCount
            if let expected, count == expected { return count }
            stable = count == last ? stable + 1 : 0
            last = count
            if expected == nil && stable >= 20 { return count }
        }
        return last
    }
}
