import Foundation
@testable import GPSD
import GPSDProtocol
import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

@Suite("gpsd service over loopback", .timeLimit(.minutes(2)))
struct ServerTests {
    @Test("VERSION on connect; WATCH powers the receiver on, streams TPV and SKY; disabling powers it off")
    func watchLifecycle() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        let version = try await client.object()
        #expect(version["class"] as? String == "VERSION")
        #expect(version["proto_major"] as? Int == 3 && version["proto_minor"] as? Int == 14)
        #expect(!fake.power.isOn)

        try client.send("?WATCH={\"enable\":true,\"json\":true};\n")
        let devices = try await client.object()
        #expect(devices["class"] as? String == "DEVICES")
        let watch = try await client.object()
        #expect(watch["class"] as? String == "WATCH" && watch["enable"] as? Bool == true)
        await fake.power.waitUntil(on: true)
        let activated = try await client.object()
        #expect(activated["class"] as? String == "DEVICE")
        #expect(activated["path"] as? String == FakeSource.path)
        #expect(activated["activated"] as? String == "2026-11-29T16:25:21.005Z")
        #expect(activated["bps"] as? Int == 115200)

        fake.send(FakeSource.tpv(1))
        fake.send(FakeSource.sky(9))
        fake.send(.sentence(Array("$GPGGA,1*00\r\n".utf8)))
        let tpv = try await client.object()
        #expect(tpv["class"] as? String == "TPV" && tpv["lat"] as? Int == 1)
        let sky = try await client.object()
        #expect(sky["class"] as? String == "SKY" && sky["nSat"] as? Int == 9)

        try client.send("?POLL;")
        let poll = try await client.object()
        #expect(poll["class"] as? String == "POLL" && poll["active"] as? Int == 1)
        #expect(((poll["tpv"] as? [[String: Any]])?.first)?["lat"] as? Int == 1)
        #expect(((poll["sky"] as? [[String: Any]])?.first)?["nSat"] as? Int == 9)

        try client.send("?WATCH={\"enable\":false};")
        #expect(try await client.classes(2) == ["DEVICES", "WATCH"])
        await fake.power.waitUntil(on: false)
        #expect(fake.power.transitions == [.on, .off])
        try client.send("?POLL;")
        #expect(try await client.object()["active"] as? Int == 0)
        await server.shutdown()
        #expect(await client.line() == nil)
        #expect(fake.power.violations.isEmpty)
    }

    @Test("a WATCH with \"interval\" watches the source's scheduled signal; a WATCH without it, the events again")
    func intervalWatch() async throws {
        let fake = FakeSource()
        let scheduled = FakeSource()
        let asked = Lock<[Duration]>([])
        var source = fake.source()
        source.scheduled = { interval, _ in
            asked.withLock { $0.append(interval) }
            return scheduled.signal
        }
        let server = try makeServer(source)
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        _ = try await client.object()

        try client.send("?WATCH={\"enable\":true,\"json\":true,\"interval\":600};\n")
        #expect(try await client.classes(2) == ["DEVICES", "WATCH"])
        await scheduled.power.waitUntil(on: true)
        #expect(asked.withLock { $0 } == [.seconds(600)])
        #expect(!fake.power.isOn, "an interval watcher does not hold the every-epoch events")
        scheduled.send(FakeSource.tpv(7))
        var tpv = try await client.object()
        while tpv["class"] as? String != "TPV" { tpv = try await client.object() }
        #expect(tpv["lat"] as? Int == 7)

        try client.send("?WATCH={\"enable\":true,\"json\":true};\n")
        await fake.power.waitUntil(on: true)
        await scheduled.power.waitUntil(on: false)
        #expect(asked.withLock { $0 } == [.seconds(600)])
        await server.shutdown()
        #expect(fake.power.violations.isEmpty && scheduled.power.violations.isEmpty)
    }

    @Test("a WATCH with \"accuracy\" holds that demand while it watches; a WATCH without it releases the hold")
    func accuracyWatch() async throws {
        let fake = FakeSource()
        let held = FakeSource()
        let asked = Lock<[String]>([])
        var source = fake.source()
        source.demandHold = { accuracy in
            asked.withLock { $0.append("every epoch \(accuracy) m") }
            return held.signal.hold()
        }
        let server = try makeServer(source)
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        _ = try await client.object()

        try client.send("?WATCH={\"enable\":true,\"json\":true,\"accuracy\":0.02};\n")
        #expect(try await client.classes(2) == ["DEVICES", "WATCH"])
        await held.power.waitUntil(on: true)
        await fake.power.waitUntil(on: true)
        #expect(asked.withLock { $0 } == ["every epoch 0.02 m"])

        try client.send("?WATCH={\"enable\":true,\"json\":true};\n")
        await held.power.waitUntil(on: false)
        #expect(fake.power.isOn, "still watching every epoch")
        #expect(asked.withLock { $0 } == ["every epoch 0.02 m"])
        await server.shutdown()
        #expect(fake.power.violations.isEmpty && held.power.violations.isEmpty)
    }

    @Test("a WATCH with \"interval\" and \"accuracy\" watches the scheduled signal for both, and holds nothing else")
    func intervalAndAccuracyWatch() async throws {
        let fake = FakeSource()
        let scheduled = FakeSource()
        let asked = Lock<[String]>([])
        var source = fake.source()
        source.scheduled = { interval, accuracy in
            asked.withLock { $0.append("\(interval) \(accuracy.map { "\($0) m" } ?? "any accuracy")") }
            return scheduled.signal
        }
        source.demandHold = { accuracy in
            asked.withLock { $0.append("hold \(accuracy) m") }
            return fake.signal.hold()
        }
        let server = try makeServer(source)
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        _ = try await client.object()

        // The fixes this client gets are the accurate ones: the accuracy is the scheduled signal's, not a hold's.
        try client.send("?WATCH={\"enable\":true,\"json\":true,\"interval\":600,\"accuracy\":0.02};\n")
        #expect(try await client.classes(2) == ["DEVICES", "WATCH"])
        await scheduled.power.waitUntil(on: true)
        #expect(asked.withLock { $0 } == ["600.0 seconds 0.02 m"])
        #expect(!fake.power.isOn, "no hold, no every-epoch events")

        // A new accuracy is a new scheduled subscription; dropping the interval turns the accuracy into a hold.
        try client.send("?WATCH={\"enable\":true,\"json\":true,\"interval\":600,\"accuracy\":5};\n")
        _ = try await client.classes(2)
        try client.send("?WATCH={\"enable\":true,\"json\":true,\"interval\":0,\"accuracy\":5};\n")
        await fake.power.waitUntil(on: true)
        await scheduled.power.waitUntil(on: false)
        #expect(asked.withLock { $0 } == ["600.0 seconds 0.02 m", "600.0 seconds 5.0 m", "hold 5.0 m"])
        await server.shutdown()
        #expect(fake.power.violations.isEmpty && scheduled.power.violations.isEmpty)
    }

    @Test("nmea and raw watchers get sentences; raw 1 hex-dumps binary frames, raw 2 passes them through")
    func passThrough() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let nmea = try hub.connect(to: server.addresses[0])
        let raw1 = try hub.connect(to: server.addresses[0])
        let raw2 = try hub.connect(to: server.addresses[0])
        try nmea.send("?WATCH={\"enable\":true,\"nmea\":true};")
        try raw1.send("?WATCH={\"enable\":true,\"raw\":1};")
        try raw2.send("?WATCH={\"enable\":true,\"raw\":2};")
        for client in [nmea, raw1, raw2] { #expect(try await client.classes(3) == ["VERSION", "DEVICES", "WATCH"]) }
        await fake.waitUntilRunning()
        fake.send(.sentence(Array("$GNGGA,120000.00,,,,,0,00,99.99,,,,,,*75\r\n".utf8)))
        fake.send(.frame([0xB5, 0x62, 0x01, 0x07]))
        fake.send(.sentence(Array("$GNRMC,end*00\r\n".utf8)))
        #expect(await nmea.line() == "$GNGGA,120000.00,,,,,0,00,99.99,,,,,,*75")
        #expect(await nmea.line() == "$GNRMC,end*00")
        #expect(await raw1.line() == "$GNGGA,120000.00,,,,,0,00,99.99,,,,,,*75")
        #expect(await raw1.line() == "b5620107")
        #expect(await raw1.line() == "$GNRMC,end*00")
        #expect(await raw2.line() == "$GNGGA,120000.00,,,,,0,00,99.99,,,,,,*75")
        // The frame has no line end of its own, so it runs into the next sentence.
        #expect(await raw2.line() == String(decoding: [0xB5, 0x62, 0x01, 0x07] + Array("$GNRMC,end*00".utf8), as: UTF8.self))
        await server.shutdown()
    }

    @Test("the source is told whether any watcher wants sentences or frames")
    func passThroughDemand() async throws {
        let fake = FakeSource()
        let source = fake.source()
        let server = try makeServer(source)
        let hub = try ClientHub()
        defer { hub.stop() }
        let json = try hub.connect(to: server.addresses[0])
        try json.send("?WATCH={\"enable\":true,\"json\":true};")
        _ = try await json.object(ofClass: "WATCH")
        #expect(!source.passThroughDemand.isWanted)
        let nmea = try hub.connect(to: server.addresses[0])
        try nmea.send("?WATCH={\"enable\":true,\"nmea\":true};")
        _ = try await nmea.object(ofClass: "WATCH")
        await source.passThroughDemand.waitUntil(wanted: true)
        nmea.close()
        await source.passThroughDemand.waitUntil(wanted: false)
        await server.shutdown()
    }

    @Test("PPS goes to json and pps watchers, TOFF to pps watchers only")
    func timing() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let json = try hub.connect(to: server.addresses[0])
        let pps = try hub.connect(to: server.addresses[0])
        try json.send("?WATCH={\"enable\":true,\"json\":true};")
        try pps.send("?WATCH={\"enable\":true,\"pps\":true};")
        #expect(try await json.classes(3) == ["VERSION", "DEVICES", "WATCH"])
        #expect(try await pps.classes(3) == ["VERSION", "DEVICES", "WATCH"])
        #expect(try await json.object()["class"] as? String == "DEVICE")
        await fake.waitUntilRunning()
        let offset = TimeOffset(real: 1_700_000_001_000_000_000, clock: 1_700_000_000_999_000_000)
        fake.send(.timeOffset(offset))
        fake.send(.pulse(offset))
        fake.send(FakeSource.tpv(2))
        let toff = try await pps.object()
        #expect(toff["class"] as? String == "TOFF" && toff["real_sec"] as? Int == 1_700_000_001)
        let ppsObject = try await pps.object()
        #expect(ppsObject["class"] as? String == "PPS" && ppsObject["clock_nsec"] as? Int == 999_000_000)
        #expect(try await json.classes(2) == ["PPS", "TPV"])
        await server.shutdown()
    }

    @Test("two watchers share one power-on; the receiver goes off after the last leaves and its linger")
    func sharedPower() async throws {
        let fake = FakeSource(linger: .seconds(5))
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let first = try hub.connect(to: server.addresses[0])
        let second = try hub.connect(to: server.addresses[0])
        try first.send("?WATCH={\"enable\":true,\"json\":true};")
        try second.send("?WATCH={\"enable\":true,\"json\":true};")
        #expect(try await first.classes(4) == ["VERSION", "DEVICES", "WATCH", "DEVICE"])
        #expect(try await second.classes(3) == ["VERSION", "DEVICES", "WATCH"])
        #expect(fake.power.transitions == [.on])
        first.close()
        try second.send("?WATCH={\"enable\":false};")
        #expect(try await second.classes(3).suffix(2) == ["DEVICES", "WATCH"])
        for await state in fake.signal.stateChanges() where state == .lingering { break }
        #expect(fake.power.isOn)
        fake.clock.advance(by: .seconds(5))
        await fake.power.waitUntil(on: false)
        #expect(fake.power.transitions == [.on, .off])
        #expect(server.statistics.watchers == 0)
        await server.shutdown()
    }

    @Test("--keep-on holds the receiver on with nobody watching; shutdown powers it off")
    func keepOn() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source()) { $0.keepOn = true }
        await fake.power.waitUntil(on: true)
        await server.waitForStatistics { $0.deviceActive }
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        try client.send("?DEVICES;")
        let devices = try await client.object(ofClass: "DEVICES")
        let device = try #require((devices["devices"] as? [[String: Any]])?.first)
        #expect(device["activated"] as? String == "2026-11-29T16:25:21.005Z")
        #expect(fake.power.isOn)
        await server.shutdown()
        #expect(!fake.power.isOn)
        #expect(fake.power.transitions == [.on, .off])
    }

    @Test("over-long requests, invalid JSON and unknown commands get ERROR objects and the service goes on")
    func errors() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        _ = try await client.object()
        let requests: [(String, String)] = [
            ("?WATCH={\"device\":\"" + String(repeating: "x", count: 120) + "\"};\n",
             "Request too long: more than 80 characters"),
            ("?WATCH={\"enable\":true,\"json\":};", "Invalid WATCH: garbage while expecting comma or } or ]"),
            ("?FOO;", "Unrecognized request '?FOO'"),
            ("?DEVICE={\"cycle\":0.5};", "Device configuration is read-only"),
            ("?WATCH={\"enable\":true,\"device\":\"/dev/other\"};", "No such device as /dev/other"),
        ]
        for (request, message) in requests {
            try client.send(request)
            let error = try await client.object(ofClass: "ERROR")
            #expect((error["message"] as? String)?.hasPrefix(message) == true, "\(request)")
        }
        try client.send("?VERSION;")
        #expect(try await client.object(ofClass: "VERSION")["release"] as? String == "3.22")
        #expect(!fake.power.isOn)
        #expect(server.statistics.errors == requests.count)
        await server.shutdown()
    }

    @Test("?DEVICE= changes the receiver only when allowed, through the source")
    func deviceChanges() async throws {
        let fake = FakeSource()
        let received = Lock<[DeviceChange]>([])
        let server = try makeServer(fake.source { change in
            received.withLock { $0.append(change) }
            var device = fake.device
            device.cycle = change.cycle ?? device.cycle
            return device
        }) { $0.allowDeviceChanges = true }
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        try client.send("?DEVICE={\"path\":\"\(FakeSource.path)\",\"cycle\":0.5};")
        let device = try await client.object(ofClass: "DEVICE")
        #expect(received.withLock { $0 } == [DeviceChange(path: FakeSource.path, cycle: 0.5)])
        try client.send("?DEVICES;")
        _ = device
        _ = try await client.object(ofClass: "DEVICES")
        await server.shutdown()
    }

    @Test("200 concurrent watchers each get every report; one power-on for all")
    func manyClients() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        var clients: [TestClient] = []
        for _ in 0..<200 {
            let client = try hub.connect(to: server.addresses[0])
            try client.send("?WATCH={\"enable\":true,\"json\":true};")
            clients.append(client)
        }
        for client in clients {
            #expect(try await client.object(ofClass: "WATCH")["enable"] as? Bool == true)
        }
        await fake.waitUntilRunning()
        #expect(server.statistics.clients == 200)
        for index in 0..<20 { fake.send(FakeSource.tpv(index)) }
        for client in clients {
            var seen: [Int] = []
            while seen.count < 20 {
                let object = try await client.object()
                if object["class"] as? String == "TPV", let lat = object["lat"] as? Int { seen.append(lat) }
            }
            #expect(seen == Array(0..<20))
        }
        #expect(fake.power.transitions == [.on])
        await server.shutdown()
        #expect(fake.power.transitions == [.on, .off])
    }

    @Test("a client that never reads neither blocks the others nor grows without bound, and is dropped")
    func slowClient() async throws {
        let fake = FakeSource()
        let limit = 64 * 1024
        let server = try makeServer(fake.source()) {
            $0.maxQueuedBytes = limit
            $0.maxDroppedLines = 200
        }
        let hub = try ClientHub()
        defer { hub.stop() }
        let slow = try hub.connect(to: server.addresses[0])
        let fast = try hub.connect(to: server.addresses[0])
        try slow.send("?WATCH={\"enable\":true,\"json\":true};")
        try fast.send("?WATCH={\"enable\":true,\"json\":true};")
        #expect(try await slow.object(ofClass: "WATCH")["enable"] as? Bool == true)
        slow.stopReading()
        #expect(try await fast.object(ofClass: "DEVICE")["activated"] != nil)
        // 4000 lines of 2 KB (8 MB) is more than the kernel's socket buffers and the queue hold.
        var received = 0
        for index in 0..<4000 {
            fake.send(FakeSource.tpv(index, padding: 2000))
            // The fast client keeps up: every line arrives, in order.
            let object = try await fast.object()
            #expect(object["lat"] as? Int == index)
            received += 1
            #expect(server.statistics.maxQueuedBytesPerClient <= limit)
        }
        #expect(received == 4000)
        let statistics = server.statistics
        #expect(statistics.droppedLines > 200)
        #expect(statistics.slowClientsDisconnected == 1)
        #expect(statistics.clients == 1)
        #expect(statistics.maxQueuedBytesPerClient <= limit)
        slow.close()
        await server.shutdown()
    }

    @Test("10,000 connect/disconnect cycles leave no descriptor behind and the receiver off")
    func connectionCycles() async throws {
        let fake = FakeSource()
        let log = LogLines()
        let server = try makeServer(fake.source(), log: log)
        let hub = try ClientHub()
        defer { hub.stop() }
        let address = server.addresses[0]
        // Warm up lazily created descriptors before counting.
        let warm = try hub.connect(to: address)
        _ = try await warm.object()
        warm.close()
        await server.waitForStatistics { $0.closed == 1 }
        let port = try #require(address.port)
        #expect(try descriptorsOnLocalPort(port) == 1)
        for cycle in 0..<10_000 {
            let connection = try SocketConnection.connect(to: address)
            if cycle % 10 == 0 {
                try connection.sendAll(Array("?WATCH={\"enable\":true,\"json\":true};".utf8))
            }
            if cycle % 3 == 0 { _ = try connection.receive(maxCount: 256, timeout: .seconds(5)) }
            connection.close()
        }
        let probe = try hub.connect(to: address)
        _ = try await probe.object()
        probe.close()
        // The server sees each close in its own time, and publishes its counters at the end of a
        // pass: the probe's VERSION can arrive before the pass that accepted it (and the last
        // cycles' connections) has published them. Wait until a pass has counted every connection
        // accepted and closed (a lost one ends in the suite's time limit).
        await server.waitForStatistics { $0.accepted >= 10_002 && $0.closed >= $0.accepted }
        let statistics = server.statistics
        #expect(statistics.accepted == 10_002, "\(statistics); the service's log: \(log.all.suffix(20))")
        #expect(statistics.clients == 0 && statistics.watchers == 0)
        await fake.power.waitUntil(on: false)
        // Only the listener is left.
        #expect(try descriptorsOnLocalPort(port) == 1)
        #expect(fake.power.violations.isEmpty)
        await server.shutdown()
        #expect(!fake.power.isOn)
    }

    @Test("shutdown stops accepting, tells watchers the device closed, closes them and powers off")
    func shutdown() async throws {
        let fake = FakeSource(linger: .seconds(60))
        let server = try makeServer(fake.source())
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        try client.send("?WATCH={\"enable\":true,\"json\":true};")
        #expect(try await client.classes(4) == ["VERSION", "DEVICES", "WATCH", "DEVICE"])
        await server.shutdown()
        #expect(await client.readToEnd() == ["{\"class\":\"DEVICE\",\"path\":\"\(FakeSource.path)\",\"activated\":0}"])
        #expect(!fake.power.isOn)
        #expect(throws: SocketError.self) { try SocketConnection.connect(to: server.addresses[0]) }
    }

    @Test("waiting for the end returns when the waiting task is cancelled, and when the loop ends")
    func waitsEndOnCancel() async throws {
        let fake = FakeSource()
        let server = try makeServer(fake.source())
        let early = Task { await server.waitUntilStopped() }
        early.cancel()
        await early.value
        // The cancelled wait ended; the service still answers.
        let hub = try ClientHub()
        defer { hub.stop() }
        let client = try hub.connect(to: server.addresses[0])
        #expect(try await client.object()["class"] as? String == "VERSION")
        let waiters = (0..<3).map { _ in Task { await server.waitUntilFinished() } }
        await server.shutdown()
        for waiter in waiters { await waiter.value }
        await server.waitUntilStopped()
    }

    @Test("a Unix socket and an IPv6 listener serve like the IPv4 one")
    func otherListeners() async throws {
        let fake = FakeSource()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("gpsd.sock").path
        let server = try makeServer(fake.source()) {
            $0.listen = [.unix(path), .ipv6("::1", port: 0)]
        }
        let hub = try ClientHub()
        defer { hub.stop() }
        for address in server.addresses {
            let client = try hub.connect(to: address)
            #expect(try await client.object()["class"] as? String == "VERSION")
            try client.send("?DEVICES;")
            #expect(try await client.object()["class"] as? String == "DEVICES")
        }
        await server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a chrony socket gets serial-time and PPS samples and holds the receiver on")
    func chrony() async throws {
        let fake = FakeSource()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serialPath = directory.appendingPathComponent("serial.sock").path
        let ppsPath = directory.appendingPathComponent("pps.sock").path
        let serial = try DatagramSocket.bind(serialPath)
        let pps = try DatagramSocket.bind(ppsPath)
        let server = try makeServer(fake.source()) {
            $0.chronySocket = serialPath
            $0.chronyPPSSocket = ppsPath
        }
        await fake.waitUntilRunning()
        #expect(fake.power.isOn)
        fake.send(.timeOffset(TimeOffset(real: 1_700_000_000_000_000_000, clock: 1_700_000_000_250_000_000)))
        fake.send(.pulse(TimeOffset(real: 1_700_000_001_000_000_000, clock: 1_700_000_000_999_999_000)))
        let serialDatagram = try #require(try serial.receive(timeout: .seconds(10)))
        let serialSample = try #require(ChronySample(datagram: serialDatagram))
        #expect(serialSample.systemTime == 1_700_000_000_250_000_000)
        #expect(serialSample.offset == -0.25)
        let ppsDatagram = try #require(try pps.receive(timeout: .seconds(10)))
        let ppsSample = try #require(ChronySample(datagram: ppsDatagram))
        #expect(abs(ppsSample.offset - 0.000001) < 1e-12)
        await server.shutdown()
        #expect(!fake.power.isOn)
        serial.close()
        pps.close()
    }
}
