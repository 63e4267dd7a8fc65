import Foundation
import Glibc
import MQTT
import Testing
import TestSupport

/// `gnss-hat serve --mqtt` as a process (the built binary), against a real Mosquitto broker: what a
/// user sees on its standard error, and what reaches the broker.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ServeBridgeTests {
    /// The simulator board with a cold start of 2 s (real time here), in `directory`.
    static func fastBoard(in directory: URL) throws -> String {
        let simulator = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("boards/simulator.json"),
                                   encoding: .utf8)
        let fast = simulator.replacingOccurrences(of: "\"coldStartSeconds\": 26", with: "\"coldStartSeconds\": 2")
            .replacingOccurrences(of: "\"name\": \"simulator\"", with: "\"name\": \"simulator-fast\"")
        guard fast.contains("\"coldStartSeconds\": 2,") else { throw TestSetupError("simulator.json changed") }
        let path = directory.appendingPathComponent("simulator-fast.json").path
        try fast.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `gnss-hat serve` on the fast simulator board, an ephemeral gpsd port, device `pi1`, its
    /// journal in `state`; its standard output and error are one stream of lines.
    final class Serve: Sendable {
        let daemon: Daemon
        let port: Int

        init(_ arguments: [String], state: URL) async throws {
            let board = try ServeBridgeTests.fastBoard(in: state)
            daemon = try Daemon("gnss-hat serve", executable: TestPaths.gnssHat(), [
                "serve", "--board", board, "--listen", "127.0.0.1:0", "--mqtt-device", "pi1",
                "--state-dir", state.path, "--linger", "1", "--verbose",
            ] + arguments)
            let line = try await daemon.line(containing: "listening on ")
            guard let text = line.split(separator: ":").last, let port = Int(text) else {
                throw TestSetupError("no port in '\(line)'")
            }
            self.port = port
        }

        /// The lines about the bridge (`gnss-hat serve: mqtt: ...`), without the prefix.
        var mqttLines: [String] {
            daemon.output.filter { $0.hasPrefix("gnss-hat serve: mqtt: ") }.map { String($0.dropFirst(22)) }
        }

        /// SIGTERM, and the exit status.
        func stop() -> Int32 {
            daemon.stop()
            return daemon.process.terminationStatus
        }
    }

    /// A gpsd client (gpspipe) of the service: its first `count` lines.
    func gpsdClient(port: Int, count: Int) throws -> [String] {
        let run = try CommandRun.run(executable: TestPaths.tool("/usr/bin/gpspipe", package: "gpsd-clients"),
                                     ["-w", "-n", "\(count)", "-x", "30", "127.0.0.1:\(port)"])
        guard run.status == 0 else { throw TestSetupError("gpspipe failed (\(run.status)): \(run.err)") }
        return run.out.split(separator: "\n").map(String.init)
    }

    func passwordFile(_ password: String, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("password").path
        try (password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `serve --mqtt` on `broker` as its test user (the password in a file in `state`), once connected.
    func connectedServe(_ broker: TestBroker, state: URL) async throws -> Serve {
        let password = try passwordFile(brokerPassword, in: state)
        let serve = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password], state: state)
        try await serve.daemon.line(containing: "connected to ")
        return serve
    }

    @Test(arguments: [
        (["--mqtt", "http://broker"], "gnss-hat serve: 'http://broker' is not an MQTT URL: it starts with mqtt:// "
            + "(or mqtts:// for TLS)"),
        (["--mqtt", "mqtt://user:secret@broker"], "gnss-hat serve: 'mqtt://user:secret@broker' holds a password: "
            + "give it in a file with --mqtt-password-file instead"),
        (["--mqtt", "mqtt://broker:99999"], "gnss-hat serve: 'mqtt://broker:99999': the port '99999' is not a number "
            + "from 1 to 65535"),
        (["--mqtt-every", "600"], "gnss-hat serve: --mqtt-every needs --mqtt"),
        (["--mqtt", "mqtt://u@broker", "--mqtt-password-file", "/nonexistent/password"],
         "gnss-hat serve: cannot read the password file '/nonexistent/password': No such file or directory (ENOENT)"),
        (["--mqtt", "mqtt://broker", "--mqtt-every", "0"],
         "gnss-hat serve: --mqtt-every needs a number of seconds from 1 to 86400, not '0'"),
        (["--mqtt", "mqtt://broker", "--mqtt-owntracks-user", "a/b"],
         "gnss-hat serve: 'a/b' cannot be an OwnTracks user: '/', '+', '#' and control characters cannot be in a "
            + "topic level"),
    ])
    func aBadBrokerURLOrOptionIsExitStatus2AndOneLine(arguments: [String], line: String) throws {
        let run = try CommandRun.run(["serve", "--listen", "127.0.0.1:0"] + arguments)
        #expect(run.status == 2)
        #expect(run.err == line + "\n")
    }

    @Test func withTheBrokerDownAtStartItServesGpsdClientsAndConnectsOnceTheBrokerIsUp() async throws {
        let broker = try TestBroker(start: false)
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let password = try passwordFile(brokerPassword, in: state)
        let serve = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password], state: state)
        try await serve.daemon.line(containing: "(attempt 2)")
        // The gpsd side does not wait for the broker.
        let lines = try gpsdClient(port: serve.port, count: 6)
        #expect(lines.contains { $0.contains("\"class\":\"TPV\"") }, "\(lines)")
        let attempts = serve.mqttLines.filter { $0.hasPrefix("cannot reach") }
        #expect(attempts.first?.hasPrefix("cannot reach \(broker.url) (attempt 1): ") == true, "\(attempts)")
        #expect(attempts.first?.hasSuffix("next attempt in 1 s") == true, "\(attempts)")
        #expect(attempts.dropFirst().first?.hasSuffix("next attempt in 2 s") == true, "\(attempts)")
        try broker.start()
        try await serve.daemon.line(containing: "connected to ", limit: .seconds(30))
        #expect(try broker.subscribeOnce("gnss-hat/pi1/status") == ["online"])
        #expect(serve.stop() == 0)
        #expect(try broker.subscribeOnce("gnss-hat/pi1/status") == ["offline"])
    }

    @Test func aKilledServiceIsOfflineByItsWillAndStaysSo() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let serve = try await connectedServe(broker, state: state)
        // Retained: a subscriber that comes later is told at once.
        #expect(try broker.subscribeOnce("gnss-hat/pi1/status") == ["online"])
        // SIGKILL: no clean stop, no DISCONNECT; the broker publishes the last will when the socket closes.
        serve.daemon.stop(signal: SIGKILL)
        let watcher = try broker.subscriber("gnss-hat/pi1/status")
        try await watcher.line(containing: "gnss-hat/pi1/status offline")
        watcher.stop()
        #expect(try broker.subscribeOnce("gnss-hat/pi1/status") == ["offline"])
        #expect(serve.daemon.process.terminationReason == .uncaughtSignal)
        #expect(serve.daemon.process.terminationStatus == SIGKILL)
    }

    @Test func aWrongPasswordIsOneLinePerAttemptBackingOff() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let password = try passwordFile("not the password", in: state)
        let serve = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password], state: state)
        try await serve.daemon.line(containing: "attempt 3:", limit: .seconds(30))
        let refusals = serve.mqttLines.filter { $0.contains(", attempt ") }
        #expect(refusals.count == 3, "\(serve.mqttLines)")
        for (index, delay) in ["1 s", "2 s", "4 s"].enumerated() where index < refusals.count {
            #expect(refusals[index].contains("attempt \(index + 1): the broker refused the connection"))
            #expect(refusals[index].contains("check the user in the URL and --mqtt-password-file"))
            #expect(refusals[index].hasSuffix("next attempt in \(delay)"), "\(refusals[index])")
        }
        // One line per attempt, and nothing else about the broker meanwhile.
        #expect(serve.mqttLines.filter { !$0.hasPrefix("receiver ") && !$0.hasPrefix("publishing to ") }.count == 3,
                "\(serve.mqttLines)")
        #expect(serve.stop() == 0)
    }

    @Test func anACLThatDeniesTheDemandTopicIsOneClearLineAndItsConsumersPowerNothing() async throws {
        let acl = TestBroker.defaultACL.replacingOccurrences(
            of: "topic readwrite homeassistant/#\n",
            with: "topic readwrite homeassistant/#\ntopic deny gnss-hat/pi1/demand/#\n")
        let broker = try TestBroker(acl: acl)
        // A consumer with rights of its own announces itself before the service starts.
        try runTool("/usr/bin/mosquitto_pub", package: "mosquitto-clients",
                    ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", consumerUser, "-P", consumerPassword, "-q", "1",
                     "-r", "-t", "gnss-hat/pi1/demand/me", "-m", "{}"])
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let password = try passwordFile(brokerPassword, in: state)
        let serve = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password], state: state)
        // The retained demand would have come right after the subscription, before the probe's answer.
        let line = try await serve.daemon.line(containing: "probe on gnss-hat/pi1/demand/+")
        #expect(line.contains("(the broker refused a message: Not authorized (PUBACK 0x87))"), "\(line)")
        #expect(line.hasSuffix("consumers on other machines cannot power this receiver"))
        #expect(!serve.mqttLines.contains { $0.hasPrefix("consumer ") }, "\(serve.mqttLines)")
        #expect(try broker.subscribeOnce("gnss-hat/pi1/power")
                    == [#"{"state":"off","powered":false,"reason":"initial"}"#])
        #expect(serve.stop() == 0)
        #expect(serve.mqttLines.filter { $0.contains("probe") }.count == 1)
    }

    @Test func tlsWithTheTestCAConnectsAndAWrongCAIsOneLinePerAttempt() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let password = try passwordFile(brokerPassword, in: state)
        let url = "mqtts://\(brokerUser)@localhost:\(broker.tlsPort)"
        let good = try await Serve(["--mqtt", url, "--mqtt-password-file", password,
                                    "--mqtt-ca", broker.certificates.ca], state: state)
        try await good.daemon.line(containing: "connected to \(url)")
        #expect(try broker.subscribeOnce("gnss-hat/pi1/status") == ["online"])
        #expect(good.stop() == 0)

        let wrongState = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: wrongState) }
        let wrong = try await Serve(["--mqtt", url, "--mqtt-password-file", password,
                                     "--mqtt-ca", broker.certificates.wrongCA], state: wrongState)
        try await wrong.daemon.line(containing: "(attempt 2)")
        let attempts = wrong.mqttLines.filter { $0.hasPrefix("cannot reach") }
        #expect(attempts.count == 2, "\(wrong.mqttLines)")
        #expect(attempts.allSatisfy { $0.contains("certificate verify failed") }, "\(attempts)")
        #expect(!wrong.mqttLines.contains { $0.hasPrefix("connected") })
        #expect(wrong.stop() == 0)
    }

    @Test func aConsumersDemandPowersTheServiceReceiverAndItsDeathPowersItOff() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let serve = try await connectedServe(broker, state: state)
        let consumer = try Daemon("paho consumer", executable: debianPython(),
                                  ["-u", "-c", Paho.consumer, "\(broker.port)", consumerUser, consumerPassword,
                                   "gnss-hat/pi1/demand/phone", "{}"])
        try await consumer.line(containing: "announced")
        try await serve.daemon.line(containing: "mqtt: consumer phone present")
        try await serve.daemon.line(containing: "mqtt: receiver on")
        consumer.stop(signal: SIGKILL)
        try await serve.daemon.line(containing: "mqtt: consumer phone gone")
        try await serve.daemon.line(containing: "mqtt: receiver off")
        // The hardware's power: on while the consumer is served and through the linger, then off.
        let order = serve.mqttLines.filter { ["consumer phone", "receiver on", "receiver powering off", "receiver off"]
            .contains(where: $0.hasPrefix) }
        #expect(order == ["consumer phone present", "receiver on (demand)", "consumer phone gone",
                          "receiver powering off (linger ended)", "receiver off (linger ended)"], "\(serve.mqttLines)")
        #expect(try broker.subscribeOnce("gnss-hat/pi1/power")
                    == [#"{"state":"off","powered":false,"reason":"linger ended"}"#])
        #expect(serve.stop() == 0)
        try await serve.daemon.line(containing: "mqtt: consumers present at the stop: none")
    }

    @Test func aRetainedDemandNobodyClearsHoldsTheReceiverAndTheStopNamesIt() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let serve = try await connectedServe(broker, state: state)
        let demand = "gnss-hat/pi1/demand/forgotten"
        let login = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", consumerUser, "-P", consumerPassword]
        // What a consumer killed before its subscriber had connected leaves behind: its demand, and no
        // will at the broker to clear it. A retained demand is presence until cleared (the README's
        // `mosquitto_pub -r`), so the receiver stays on, and the stop says whose demand held it.
        try runTool("/usr/bin/mosquitto_pub", package: "mosquitto-clients",
                    login + ["-r", "-q", "1", "-t", demand, "-m", #"{"interval":60}"#])
        try await serve.daemon.line(containing: "mqtt: consumer forgotten present (a fix every 60 s)")
        try await serve.daemon.line(containing: "mqtt: receiver on")
        #expect(serve.stop() == 0)
        let named = try await serve.daemon.line(containing: "mqtt: consumers present at the stop: ")
        #expect(named.hasSuffix("consumers present at the stop: 1 (forgotten: a fix every 60 s), each a retained "
                                + "demand that held the receiver"), "\(named)")
        #expect(!serve.mqttLines.contains("receiver off (linger ended)"), "\(serve.mqttLines)")
        // The service leaves a consumer's demand to the consumer: it is still on the broker.
        let left = try CommandRun.run(
            executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
            login + ["-t", demand, "--retained-only", "-W", "1"])
        #expect(left.out == #"{"interval":60}"# + "\n", "\(left.out)")
    }

    @Test func theREADMEsConsumerOfMosquittoToolsPowersTheReceiverUntilItsSubscriberDies() async throws {
        let broker = try TestBroker()
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let serve = try await connectedServe(broker, state: state)
        let demand = "gnss-hat/pi1/demand/me"
        let login = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", consumerUser, "-P", consumerPassword]
        // As the README shows it: a subscriber whose will (empty, retained) is the demand's end, then the demand.
        let subscriber = try Daemon(
            "mosquitto_sub", executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
            login + ["-t", "gnss-hat/pi1/tpv", "--will-topic", demand, "--will-retain", "--will-qos", "1"])
        try runTool("/usr/bin/mosquitto_pub", package: "mosquitto-clients",
                    login + ["-r", "-q", "1", "-t", demand, "-m", "{}"])
        try await serve.daemon.line(containing: "mqtt: consumer me present")
        try await serve.daemon.line(containing: "mqtt: receiver on")
        // A fix at the subscriber: it is connected, so its will is with the broker.
        try await subscriber.line(containing: "\"class\":\"TPV\"")
        subscriber.stop(signal: SIGKILL)
        try await serve.daemon.line(containing: "mqtt: consumer me gone")
        try await serve.daemon.line(containing: "mqtt: receiver off")
        let left = try CommandRun.run(
            executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
            login + ["-t", demand, "--retained-only", "-W", "1"])
        #expect(left.out.isEmpty, "a retained demand is left: \(left.out)")
        #expect(serve.stop() == 0)
    }

    @Test func fixesJournaledWhileTheBrokerWasDownArriveAfterTheServiceAndTheBrokerAreBack() async throws {
        let broker = try TestBroker(start: false)
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let password = try passwordFile(brokerPassword, in: state)
        // The receiver on for time service (--keep-on): fixes with nobody to send them to.
        let first = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password, "--keep-on"],
                                    state: state)
        try await first.daemon.line(containing: "cannot reach")
        let seen = try gpsdClient(port: first.port, count: 12)
        #expect(seen.contains { $0.contains("\"class\":\"TPV\"") && $0.contains("\"lat\"") }, "\(seen)")
        #expect(first.stop() == 0)
        let pending = try journalPending(in: state)
        #expect(pending.count >= 4, "\(pending.count) journaled")
        #expect(pending.contains { $0.message.topic == "owntracks/gnss-hat/pi1" })

        try broker.start()
        let watcher = try await watch(broker, ["gnss-hat/pi1/tpv", "owntracks/gnss-hat/pi1"])
        let second = try await Serve(["--mqtt", broker.url, "--mqtt-password-file", password], state: state)
        try await second.daemon.line(containing: "sending \(pending.count) journaled messages")
        let filters = ["gnss-hat/pi1/tpv", "owntracks/gnss-hat/pi1"]
        try await watcher.lines("the \(pending.count) journaled messages") { lines in
            lines.filter { line in filters.contains { line.hasPrefix($0 + " ") } }.count >= pending.count
        }
        let received = messages(watcher, on: filters)
        let expected = pending.map { $0.message.topic + " " + String(decoding: $0.message.payload, as: UTF8.self) }
        #expect(received == expected)
        #expect(second.stop() == 0)
        #expect(try journalPending(in: state).isEmpty)
        watcher.stop()
    }
}
