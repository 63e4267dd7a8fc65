// A real Mosquitto broker for each test: Debian's `mosquitto` on free loopback ports with its own
// configuration, password file (made with mosquitto_passwd), ACL, and a test CA and server
// certificate made with openssl; started and stopped by the test. Waits are on events (a line the
// broker logs, an event of the client), each with a generous limit that reports what it saw.
import Foundation
import Glibc
import MQTT
import LinuxSystem
import Signals
import TestSupport

/// A user the broker knows, and what its ACL lets it do (`test/allowed/#`, and a bridge's topics:
/// `gnss-hat/#`, `owntracks/#`, `homeassistant/#`).
let brokerUser = "gnss"
let brokerPassword = "correct horse battery staple"
/// A second user, for consumers when a test's ACL treats them apart from the bridge.
let consumerUser = "consumer"
let consumerPassword = "consumer secret"

/// One Mosquitto broker of a test: a plain listener and a TLS one, users and ACL, no persistence
/// unless asked.
final class TestBroker: @unchecked Sendable {
    let directory: URL
    let port: Int
    let tlsPort: Int
    let certificates: TestCertificates
    private(set) var daemon: Daemon?

    /// The ACL every test broker has unless a test gives its own: the test user may use the test
    /// topics and everything a bridge publishes; the consumer user a bridge's demand level.
    static let defaultACL = """
        user \(brokerUser)
        topic readwrite test/allowed/#
        topic readwrite gnss-hat/#
        topic readwrite owntracks/#
        topic readwrite homeassistant/#

        user \(consumerUser)
        topic readwrite gnss-hat/#

        """

    /// `persistent`: the broker saves its sessions and queued messages at every change (so a
    /// SIGKILL loses nothing a persistent subscriber was owed); `start`: false leaves it to the test.
    init(acl: String = TestBroker.defaultACL, persistent: Bool = false, start: Bool = true) throws {
        directory = try TestPaths.temporaryDirectory()
        port = try freeLoopbackPort()
        tlsPort = try freeLoopbackPort()
        certificates = try TestCertificates(directory: directory)
        let d = directory.path
        try runTool("/usr/bin/mosquitto_passwd", package: "mosquitto",
                    ["-b", "-c", "\(d)/passwords", brokerUser, brokerPassword])
        try runTool("/usr/bin/mosquitto_passwd", package: "mosquitto",
                    ["-b", "\(d)/passwords", consumerUser, consumerPassword])
        try acl.write(toFile: "\(d)/acl", atomically: true, encoding: .utf8)
        let persistence = persistent
            ? "persistence true\npersistence_location \(d)/\nautosave_interval 1\nautosave_on_changes true"
            : "persistence false"
        // Run as root, mosquitto would become user `mosquitto`, who cannot read this private directory.
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "root"
        let configuration = """
            user \(user)
            per_listener_settings false
            allow_anonymous false
            password_file \(d)/passwords
            acl_file \(d)/acl
            \(persistence)
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            log_type information
            listener \(port) 127.0.0.1
            listener \(tlsPort) 127.0.0.1
            cafile \(certificates.ca)
            certfile \(certificates.serverCertificate)
            keyfile \(certificates.serverKey)

            """
        try configuration.write(toFile: "\(d)/mosquitto.conf", atomically: true, encoding: .utf8)
        if start { try self.start() }
    }

    /// Starts (or restarts, on the same ports) the broker and waits until it says it runs.
    func start() throws {
        let daemon = try Daemon("mosquitto", executable: TestPaths.tool("/usr/sbin/mosquitto", package: "mosquitto"),
                                ["-c", directory.appendingPathComponent("mosquitto.conf").path])
        self.daemon = daemon
        try daemon.waitForLine(containing: "running")
    }

    /// Ends the broker with `signal` (SIGKILL: no goodbye to anyone) and waits for it.
    func stop(signal: Int32 = SIGTERM) {
        daemon?.stop(signal: signal)
        daemon = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    var url: String { "mqtt://\(brokerUser)@127.0.0.1:\(port)" }

    /// A configuration of the test user, quick to retry (0.1 s doubling) so tests of reconnects are short.
    func configuration(
        clientID: String, url: String? = nil, password: String? = brokerPassword, caFile: String? = nil,
        will: OutgoingMessage? = nil
    ) throws -> MQTTConfiguration {
        MQTTConfiguration(
            broker: try BrokerAddress(url: url ?? self.url), password: password, caFile: caFile, clientID: clientID,
            will: will,
            reconnect: .init(initialDelay: .milliseconds(100), maximumDelay: .seconds(2), stableAfter: .seconds(60)))
    }

    /// `mosquitto_sub` as the test user: the first `count` messages on `topic` (retained ones at once),
    /// one line each, within 10 s.
    func subscribeOnce(_ topic: String, count: Int = 1) throws -> [String] {
        let run = try runTool("/usr/bin/mosquitto_sub", package: "mosquitto-clients",
                              ["-h", "127.0.0.1", "-p", "\(port)", "-u", brokerUser, "-P", brokerPassword,
                               "-t", topic, "-C", "\(count)", "-W", "10"])
        return run.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// `mosquitto_sub` left running (`-v`: topic and payload per line), for messages still to come.
    func subscriber(_ topic: String) throws -> Daemon {
        try Daemon("mosquitto_sub", executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
                   ["-h", "127.0.0.1", "-p", "\(port)", "-u", brokerUser, "-P", brokerPassword, "-t", topic, "-v"])
    }
}

/// Every event of a client, kept in order; tests wait for the one they expect.
final class EventLog: Sendable {
    private let events = Lock<[MQTTEvent]>([])
    private let waiters = ConditionWaiters()

    init(_ client: MQTTClient) {
        let stream = client.events
        Task { [self] in
            for await event in stream {
                events.withLock { $0.append(event) }
                waiters.resumeAll()
            }
        }
    }

    var all: [MQTTEvent] { events.withLock { $0 } }

    /// The first event (after `skip` earlier matches) `match` accepts, waiting for it up to `limit`.
    @discardableResult
    func first(_ what: String, skip: Int = 0, limit: Duration = .seconds(20),
               where match: @escaping @Sendable (MQTTEvent) -> Bool) async throws -> MQTTEvent {
        let found: MQTTEvent? = try await withThrowingTaskGroup(of: MQTTEvent?.self) { group in
            group.addTask { [self] in
                var result: MQTTEvent?
                // A resume means "something changed", not "it is there": look again until it is.
                while result == nil && !Task.isCancelled {
                    await waiters.wait {
                        let matches = self.events.withLock { $0.filter(match) }
                        result = matches.count > skip ? matches[skip] : nil
                        return result != nil
                    }
                }
                return result
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let found else { throw TestSetupError("no \(what) within \(limit); the events were \(all)") }
        return found
    }
}

extension MQTTEvent {
    var isConnected: Bool {
        if case .connection(.connected) = self { return true }
        return false
    }

    var refusal: MQTTError? {
        if case let .connection(.refused(_, error, _)) = self { return error }
        return nil
    }

    var attemptFailure: MQTTError? {
        if case let .connection(.attemptFailed(_, error, _)) = self { return error }
        return nil
    }

    var isConnectionLost: Bool {
        if case .connection(.connectionLost) = self { return true }
        return false
    }

    func acknowledges(_ token: UInt64) -> Bool {
        if case .acknowledged(token, _, _) = self { return true }
        return false
    }

    var acknowledgementRefusal: MQTTError? {
        if case let .acknowledged(_, _, refusal) = self { return refusal }
        return nil
    }

    var message: IncomingMessage? {
        if case let .message(message) = self { return message }
        return nil
    }

    func subscribes(_ filter: String) -> Bool {
        if case .subscribed(filter, _) = self { return true }
        return false
    }

    var subscriptionRefusal: MQTTError? {
        if case let .subscribed(_, refusal) = self { return refusal }
        return nil
    }
}
