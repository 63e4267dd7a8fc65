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

/// A long-running child process whose merged output is read line by line on a thread of its own.
/// Tests in async code wait with ``line(containing:skip:limit:)``, which suspends instead of blocking
/// a thread of the cooperative pool (the bridge under test needs those).
final class Daemon: @unchecked Sendable {
    let name: String
    let process = Process()
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var lines: [String] = []
    private var ended = false
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    /// The child's standard input, when it was given one.
    private let input: FileHandle?

    init(_ name: String, executable: URL, _ arguments: [String], environment: [String: String]? = nil,
         withInput: Bool = false) throws {
        self.name = name
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let inputPipe = withInput ? Pipe() : nil
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        input = inputPipe?.fileHandleForWriting
        // Children started later must not inherit these pipes (this one's end of output would never come).
        for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting]
            + [inputPipe?.fileHandleForReading, inputPipe?.fileHandleForWriting].compactMap({ $0 }) {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        try runWithNoSignalBlocked(process)
        let fd = pipe.fileHandleForReading.fileDescriptor
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    condition.lock()
                    lines.append(line)
                    let ready = takeWaiters()
                    condition.broadcast()
                    condition.unlock()
                    for waiter in ready { waiter.resume() }
                }
            }
            condition.lock()
            ended = true
            let ready = takeWaiters()
            condition.broadcast()
            condition.unlock()
            for waiter in ready { waiter.resume() }
            withExtendedLifetime(pipe) {}
        }
    }

    /// With `condition` locked.
    private func takeWaiters() -> [CheckedContinuation<Void, Never>] {
        defer { waiters = [:] }
        return Array(waiters.values)
    }

    /// Suspends until a line containing `text` has come (the `skip` first matches are passed over),
    /// the child ends, or `limit` passes; the error says what the child printed.
    @discardableResult
    func line(containing text: String, skip: Int = 0, limit: Duration = .seconds(20)) async throws -> String {
        let lines = try await lines("'\(text)'", limit: limit) { $0.filter { $0.contains(text) }.count > skip }
        return lines.filter { $0.contains(text) }[skip]
    }

    /// Suspends until the first line `match` accepts has come, as ``line(containing:skip:limit:)``.
    @discardableResult
    func line(_ what: String, limit: Duration = .seconds(20), where match: @escaping (String) -> Bool) async throws
        -> String
    {
        let lines = try await lines(what, limit: limit) { $0.contains(where: match) }
        guard let found = lines.first(where: match) else { throw TestSetupError("\(name): no \(what)") }
        return found
    }

    /// Suspends until every line so far satisfies `condition` (checked at each new line), the child
    /// ends, or `limit` passes; returns the lines.
    @discardableResult
    func lines(_ what: String, limit: Duration = .seconds(20), until condition: @escaping ([String]) -> Bool)
        async throws -> [String]
    {
        let deadline = ContinuousClock.now + limit
        while true {
            let (met, over, all) = locked { (condition(lines), ended, lines) }
            if met { return all }
            if over { throw TestSetupError("\(name) ended before printing \(what); it printed: \(all)") }
            guard ContinuousClock.now < deadline else {
                throw TestSetupError("\(name) printed no \(what) within \(limit); it printed: \(all)")
            }
            await changed(after: all.count, before: deadline)
        }
    }

    /// Returns once there are more than `seen` lines (at once if a line came since they were
    /// counted: waiting then would sleep until the deadline), or the end, or at `deadline`.
    private func changed(after seen: Int, before deadline: ContinuousClock.Instant) async {
        let id = locked { () -> UInt64 in
            nextWaiter += 1
            return nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            self?.resume(id)
        }
        await withCheckedContinuation { continuation in
            let now = locked { () -> Bool in
                if ended || Task.isCancelled || lines.count > seen { return true }
                waiters[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func resume(_ id: UInt64) {
        let waiter = locked { waiters.removeValue(forKey: id) }
        waiter?.resume()
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Writes a line to the child's standard input.
    func send(_ line: String) throws {
        guard let input else { throw TestSetupError("\(name) was started without an input") }
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits for a line containing `text` (the `skip` first matches are passed over).
    @discardableResult
    func waitForLine(containing text: String, skip: Int = 0, limit: TimeInterval = 15) throws -> String {
        let deadline = Date(timeIntervalSinceNow: limit)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let matches = lines.filter { $0.contains(text) }
            if matches.count > skip { return matches[skip] }
            if ended { throw TestSetupError("\(name) ended before printing '\(text)'; it printed: \(lines)") }
            if !condition.wait(until: deadline) {
                throw TestSetupError("\(name) printed no '\(text)' within \(limit) s; it printed: \(lines)")
            }
        }
    }

    var output: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    func stop(signal: Int32 = SIGTERM) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
    }
}

/// A port nobody listens on now: the kernel's choice for a socket bound to port 0.
func freeLoopbackPort() throws -> Int {
    // Below the kernel's ephemeral range: a port bind(0) hands out is free only until the next outgoing
    // connection of any process takes it as its local port (a broker started seconds later then finds it
    // in use). Ports handed out once in this process are not handed out again.
    let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } }
        ?? 32768
    let range = 10_000..<max(10_001, ephemeralStart)
    for _ in 0..<200 {
        let candidate = Int.random(in: range)
        let fresh = handedOutPorts.withLock { ports in ports.insert(candidate).inserted }
        if fresh, try canBind(candidate) { return candidate }
    }
    throw TestSetupError("no free loopback port below \(ephemeralStart) after 200 tries")
}

/// The ports ``freeLoopbackPort()`` has handed out in this process.
private let handedOutPorts = Lock<Set<Int>>([])

/// Whether 127.0.0.1:`port` can be bound now (nothing listens or is connected from it).
private func canBind(_ port: Int) throws -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    return bound == 0
}

/// Runs a tool to its end and fails with its output when it fails.
@discardableResult
func runTool(_ path: String, package: String, _ arguments: [String], directory: URL? = nil) throws -> CommandRun {
    let run = try CommandRun.run(executable: TestPaths.tool(path, package: package), arguments, directory: directory)
    guard run.status == 0 else { throw TestSetupError("\(path) \(arguments) failed (\(run.status)): \(run.err)") }
    return run
}

/// A test CA, a server certificate for `localhost` / 127.0.0.1 signed by it, and a second CA that
/// signed nothing (the wrong CA), made with openssl in `directory`.
struct TestCertificates {
    let ca: String
    let wrongCA: String
    let serverCertificate: String
    let serverKey: String

    init(directory: URL) throws {
        let d = directory.path
        func openssl(_ arguments: [String]) throws {
            try runTool("/usr/bin/openssl", package: "openssl", arguments, directory: directory)
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for name in ["ca", "wrong-ca"] {
            try openssl(["req", "-x509"] + ec + ["-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).crt",
                                                  "-days", "2", "-subj", "/CN=GNSSHat test \(name)"])
        }
        try openssl(["req"] + ec + ["-keyout", "\(d)/server.key", "-out", "\(d)/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: "\(d)/san.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                     "-CAcreateserial", "-out", "\(d)/server.crt", "-days", "2", "-extfile", "\(d)/san.ext"])
        ca = "\(d)/ca.crt"
        wrongCA = "\(d)/wrong-ca.crt"
        serverCertificate = "\(d)/server.crt"
        serverKey = "\(d)/server.key"
    }
}

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
