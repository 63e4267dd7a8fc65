// A bridge under test: a simulated receiver on a manual clock (moved by a HatDriver, so simulated
// minutes pass in moments), an MQTTBridge on a real broker, and the log lines it wrote.
import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Signals
import TestSupport

@testable import MQTT

/// The simulated receiver the bridge tests run: GNSSHatSimulator's hat, in process, on the manual clock.
func makeSimulatedReceiver(clock: ManualClock, linger: Duration) throws -> (SimulatedHat, Receiver) {
    guard var board = try BoardCatalog.builtIn("simulator") else { throw TestSetupError("no simulator board") }
    // A cold start of a few simulated seconds: what matters here is what comes after the first fix.
    board.simulation?.coldStart = .seconds(3)
    let hat = try SimulatedHat(board: board, clock: clock, connection: .inProcess, timing: .driven)
    return (hat, Receiver(on: hat, options: ReceiverOptions(linger: linger)))
}

/// Lines a bridge logged, in order; tests wait for the one they expect.
final class BridgeLog: Sendable {
    private let lines = Lock<[(BridgeLogLevel, String)]>([])
    private let waiters = ConditionWaiters()

    func append(_ level: BridgeLogLevel, _ line: String) {
        lines.withLock { $0.append((level, line)) }
        waiters.resumeAll()
    }

    var all: [String] { lines.withLock { $0.map(\.1) } }
    var notices: [String] { lines.withLock { $0.filter { $0.0 == .notice }.map(\.1) } }

    /// Waits until `count` lines contain `text` (up to `limit`).
    @discardableResult
    func line(containing text: String, count: Int = 1, limit: Duration = .seconds(20)) async throws -> String {
        let found = await withDeadline(limit) { [self] in
            while all.filter({ $0.contains(text) }).count < count && !Task.isCancelled {
                await waiters.wait { all.filter { $0.contains(text) }.count >= count }
            }
        }
        guard found, let line = all.filter({ $0.contains(text) }).dropFirst(count - 1).first else {
            throw TestSetupError("no \(count) lines with '\(text)' within \(limit); the bridge logged: \(all)")
        }
        return line
    }
}

/// Runs `body` until it returns or `limit` passes; true when it returned.
func withDeadline(_ limit: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            await body()
            return !Task.isCancelled
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}

final class BridgeRig: Sendable {
    let clock = ManualClock()
    let hat: SimulatedHat
    let receiver: Receiver
    let driver: HatDriver
    let bridge: MQTTBridge
    let log = BridgeLog()
    let stateDirectory: URL
    /// Every fix the receiver has produced since the rig was made (whoever powered it).
    private let produced = Counter()
    /// Those of them with a time (a TPV without one cannot be placed in order by it).
    private let timed = Counter()
    private let producedToken: SignalToken

    /// A bridge for device `device` on `broker` (its test user, reconnecting after 0.1 s doubling to
    /// 2 s), its journal in `stateDirectory` (a new temporary one when nil). Made under `seam` when
    /// given: its journal file and its client's socket wait keep that mock on every thread.
    init(
        broker: TestBroker, device: String = "pi1", stateDirectory: URL? = nil, every: Duration? = nil,
        linger: Duration = .seconds(1), url: String? = nil, seam: SeamMock? = nil
    ) throws {
        (hat, receiver) = try makeSimulatedReceiver(clock: clock, linger: linger)
        let directory = try stateDirectory ?? TestPaths.temporaryDirectory()
        self.stateDirectory = directory
        let log = log
        var configuration = MQTTBridgeConfiguration(
            broker: try BrokerAddress(url: url ?? broker.url), password: brokerPassword,
            device: try DeviceName(device), journalDirectory: directory.appendingPathComponent("mqtt").path,
            every: every, log: { level, line in log.append(level, line) })
        configuration.connection.reconnect = .init(
            initialDelay: .milliseconds(100), maximumDelay: .seconds(2), stableAfter: .seconds(60))
        let receiver = self.receiver, clock = self.clock
        bridge = try withSeamMock(seam) {
            try MQTTBridge(receiver: receiver, configuration: configuration, clock: clock)
        }
        // The bridge's events may be handled on libmosquitto's thread (behind an acknowledgement) as
        // well as on the receiver's: time moves only once it has handled them all.
        driver = HatDriver(hat: hat, clock: clock, receiver: receiver, alsoWaitingFor: [bridge])
        let produced = produced
        let timed = timed
        producedToken = receiver.fixes.observe { fix in
            produced.add()
            if fix.time != nil { timed.add() }
        }
    }

    var producedFixes: Int { produced.value }
    var producedTimedFixes: Int { timed.value }

    /// Waits until the bridge has handled every fix produced so far and the broker acknowledged them
    /// all (nothing moves the simulated clock meanwhile, so no new fix comes).
    func waitUntilQuiet() async throws {
        let count = producedFixes
        try await wait("all \(count) fixes acknowledged") { $0.fixes == count && $0.journalPending == 0 }
    }

    /// Moves simulated time until the bridge's statistics satisfy `condition`.
    func runUntilBridge(_ condition: @escaping @Sendable (MQTTBridgeStatistics) -> Bool) async throws {
        let bridge = bridge
        try await driver.run { await bridge.waitForStatistics(condition) }
    }

    var topics: MQTTTopics { bridge.configuration.topics }

    /// Waits until the bridge's statistics satisfy `condition` (up to `limit`).
    func wait(
        _ what: String, limit: Duration = .seconds(20),
        until condition: @escaping @Sendable (MQTTBridgeStatistics) -> Bool
    ) async throws {
        let bridge = bridge
        let met = await withDeadline(limit) { await bridge.waitForStatistics(condition) }
        guard met else {
            throw TestSetupError("the bridge never had \(what) within \(limit): \(bridge.statistics); "
                + "it logged \(log.all)")
        }
    }

    /// Moves simulated time until the receiver's power state satisfies `condition`.
    func runUntil(_ condition: @escaping @Sendable (PowerState) -> Bool) async throws {
        try await driver.run(untilPower: condition, of: receiver)
    }

    /// Moves simulated time until `count` more fixes with a position reached the bridge.
    func runUntilPositions(_ count: Int) async throws {
        let seen = Counter()
        let token = receiver.fixes.observe { fix in
            if fix.hasPosition { seen.add() }
        }
        defer { token.cancel() }
        _ = try await driver.run { await seen.wait(for: count) }
    }

    /// Stops the bridge, then the receiver and the hat (time moves so a power sequence can end).
    func shutdown() async {
        producedToken.cancel()
        await bridge.stop()
        let receiver = receiver
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
        try? FileManager.default.removeItem(at: stateDirectory)
    }
}

/// `mosquitto_sub -v` on `filters` (retained messages first), once it is subscribed: a retained
/// marker of its own has come back through it.
func watch(_ broker: TestBroker, _ filters: [String]) async throws -> Daemon {
    let marker = "test/allowed/marker/\(UUID().uuidString)"
    try runTool("/usr/bin/mosquitto_pub", package: "mosquitto-clients",
                ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", brokerUser, "-P", brokerPassword, "-q", "1",
                 "-r", "-t", marker, "-m", "ready"])
    let watcher = try Daemon("mosquitto_sub",
                             executable: TestPaths.tool("/usr/bin/mosquitto_sub", package: "mosquitto-clients"),
                             ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", brokerUser, "-P", brokerPassword,
                              "-v", "-q", "1"] + (filters + [marker]).flatMap { ["-t", $0] })
    try await watcher.line(containing: marker + " ready")
    return watcher
}

/// The payload of the first line of `watcher` on exactly `topic` that `match` accepts.
func payload(_ watcher: Daemon, _ topic: String, where match: @escaping (String) -> Bool = { _ in true })
    async throws -> String
{
    let line = try await watcher.line("a message on \(topic)") {
        $0.hasPrefix(topic + " ") && match(String($0.dropFirst(topic.count + 1)))
    }
    return String(line.dropFirst(topic.count + 1))
}

/// The lines of `watcher` that are messages on `topics`.
func messages(_ watcher: Daemon, on topics: [String]) -> [String] {
    watcher.output.filter { line in topics.contains { line.hasPrefix($0 + " ") } }
}

/// The journal's pending records in `state`/mqtt, as another process would open it (and close it
/// again before returning: the journal is locked while open).
func journalPending(in state: URL) throws -> [JournalRecord] {
    try Journal(directory: state.appendingPathComponent("mqtt").path).pending
}

/// A count other threads add to, and tasks wait for.
final class Counter: Sendable {
    private let count = Lock(0)
    private let waiters = ConditionWaiters()

    var value: Int { count.withLock { $0 } }

    func add() {
        count.withLock { $0 += 1 }
        waiters.resumeAll()
    }

    /// Suspends until the count is at least `target` (or the task is cancelled).
    func wait(for target: Int) async {
        while value < target && !Task.isCancelled {
            await waiters.wait { value >= target }
        }
    }
}

/// A recorder's TPVs on `topic` with a time, in arrival order, each with whether the broker marked it `dup`.
func timedTPVs(_ lines: [String], topic: String) throws -> [(time: String, duplicate: Bool)] {
    try lines.compactMap { line in
        let duplicate = line.hasPrefix("dup ")
        let message = duplicate ? String(line.dropFirst(4)) : line
        guard message.hasPrefix(topic + " ") else { return nil }
        let tpv = try jsonObject(String(message.dropFirst(topic.count + 1)))
        return (tpv["time"] as? String).map { ($0, duplicate) }
    }
}

/// The TPV times a recorder got, each once where QoS 1 allows a repeat: a delivery the broker marked
/// `dup`, and a message sent again after a reconnect, next to itself. A repeat anywhere else stays in
/// `times` (and makes it longer than the fixes); `everyTime` is every time seen.
func deliveredOnce(_ lines: [String], topic: String) throws -> (times: [String], everyTime: Set<String>) {
    var times: [String] = []
    var everyTime = Set<String>()
    for (time, duplicate) in try timedTPVs(lines, topic: topic) {
        everyTime.insert(time)
        if !duplicate && times.last != time { times.append(time) }
    }
    return (times, everyTime)
}

/// The JSON object of a payload (Foundation's parser: a reader the package does not share).
func jsonObject(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw TestSetupError("not a JSON object: \(text)")
    }
    return object
}
