import Foundation
import Glibc
import CLinuxShims  // sockaddr_storage: Swift 6.2 attributes the struct to the module that included <sys/socket.h> first
@testable import GPSD
import GPSDProtocol
import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

/// A source whose receiver is a FakePowerSwitch: the first subscriber powers it on, the last one
/// (after `linger` on the manual clock) powers it off; the test sends the events.
final class FakeSource: Sendable {
    static let path = "/dev/fake-gnss"
    let power = FakePowerSwitch()
    let clock = ManualClock()
    let signal: RefCountedSignal<GPSDEvent>
    private let emitter = EmitterSlot()

    final class EmitterSlot: Sendable {
        let value = Lock<SignalEmitter<GPSDEvent>?>(nil)
    }

    init(linger: Duration = .zero, replay: ReplayPolicy = .none) {
        let power = power
        let emitter = emitter
        signal = RefCountedSignal(configuration: SignalConfiguration(linger: linger, replay: replay), clock: clock) {
            newEmitter in
            try await power.powerOn()
            emitter.value.withLock { $0 = newEmitter }
        } stop: {
            emitter.value.withLock { $0 = nil }
            await power.powerOff()
        }
    }

    var device: GPSDDevice {
        GPSDDevice(path: Self.path, driver: "u-blox", subtype: "SPG 4.04", bps: 115200, cycle: 1, hasPPS: true)
    }

    func source(configure: (@Sendable (DeviceChange) async throws -> GPSDDevice)? = nil) -> GPSDSource {
        GPSDSource(device: device, events: signal, configure: configure)
    }

    /// Sends an event to every subscriber (the test sends from one task at a time).
    func send(_ event: GPSDEvent) {
        emitter.value.withLock { $0 }?.send(event)
    }

    /// Suspends until the signal's producer runs.
    func waitUntilRunning() async {
        for await state in signal.stateChanges() where state == .running { return }
    }

    static func tpv(_ index: Int, padding: Int = 0) -> GPSDEvent {
        let pad = padding > 0 ? ",\"pad\":\"" + String(repeating: "x", count: padding) + "\"" : ""
        return .tpv(Array("{\"class\":\"TPV\",\"device\":\"\(path)\",\"mode\":3,\"lat\":\(index)\(pad)}\r\n".utf8))
    }

    static func sky(_ index: Int) -> GPSDEvent {
        .sky(Array("{\"class\":\"SKY\",\"device\":\"\(path)\",\"nSat\":\(index),\"uSat\":0}\r\n".utf8))
    }
}

/// Reads every test client's lines on one background thread, so that tests never block a thread of
/// the cooperative pool waiting for a socket.
final class ClientHub: @unchecked Sendable {
    private final class Entry {
        let connection: SocketConnection
        let continuation: AsyncStream<String>.Continuation
        let received: LineLog
        var buffer: [UInt8] = []
        init(connection: SocketConnection, continuation: AsyncStream<String>.Continuation, received: LineLog) {
            self.connection = connection
            self.continuation = continuation
            self.received = received
        }
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var next: UInt64 = 100
        var stopped = false
    }

    private let poller: Poller
    private let waker: Waker
    private let state = Lock(State())
    private let thread = Lock<LoopThread?>(nil)

    init() throws {
        poller = try Poller()
        waker = try Waker()
        try poller.add(waker.rawDescriptor, token: 0, interest: .readable)
        let thread = try LoopThread(name: "test-clients") { [self] in
            var scratch = [UInt8](repeating: 0, count: 65536)
            let poller = self.poller
            let waker = self.waker
            while !state.withLock({ $0.stopped }) {
                guard let events = try? poller.wait() else { break }
                for event in events {
                    if event.token == 0 {
                        waker.drain()
                        continue
                    }
                    guard let entry = state.withLock({ $0.entries[event.token] }) else { continue }
                    var ended = false
                    let outcome = try? scratch.withUnsafeMutableBytes { try entry.connection.receive(into: $0) }
                    switch outcome {
                    case .received(let count)?:
                        entry.buffer += scratch[0..<count]
                        while let newline = entry.buffer.firstIndex(of: 0x0A) {
                            var line = entry.buffer[..<newline]
                            if line.last == 0x0D { line = line.dropLast() }
                            let text = String(decoding: line, as: UTF8.self)
                            entry.received.append(text)
                            entry.continuation.yield(text)
                            entry.buffer.removeSubrange(...newline)
                        }
                    case .wouldBlock?:
                        break
                    case .endOfStream?, nil:
                        ended = true
                    }
                    if ended {
                        poller.remove(entry.connection.rawDescriptor)
                        _ = state.withLock { $0.entries.removeValue(forKey: event.token) }
                        entry.continuation.finish()
                    }
                }
            }
        }
        self.thread.withLock { $0 = thread }
    }

    /// Connects to `address`; the client's lines arrive through ``TestClient/line()``.
    func connect(to address: SocketAddress) throws -> TestClient {
        let connection = try SocketConnection.connect(to: address)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let received = LineLog()
        let token = state.withLock { state -> UInt64 in
            defer { state.next += 1 }
            state.entries[state.next] = Entry(connection: connection, continuation: continuation, received: received)
            return state.next
        }
        try poller.add(connection.rawDescriptor, token: token, interest: .readable)
        return TestClient(connection: connection, lines: stream, received: received, hub: self, token: token)
    }

    /// Stops reading a client (before the test closes it).
    func forget(_ token: UInt64, connection: SocketConnection) {
        poller.remove(connection.rawDescriptor)
        let entry = state.withLock { $0.entries.removeValue(forKey: token) }
        entry?.continuation.finish()
    }

    func stop() {
        state.withLock { $0.stopped = true }
        waker.wake()
        thread.withLock { $0 }?.join()
        for entry in state.withLock({ $0.entries.values }) { entry.continuation.finish() }
    }
}

/// One test connection: sends requests, reads JSON lines.
final class TestClient {
    let connection: SocketConnection
    /// Every line received so far (whether or not read through ``line()``).
    let received: LineLog
    private var iterator: AsyncStream<String>.Iterator
    private let hub: ClientHub
    private let token: UInt64

    init(connection: SocketConnection, lines: AsyncStream<String>, received: LineLog, hub: ClientHub, token: UInt64) {
        self.connection = connection
        self.received = received
        iterator = lines.makeAsyncIterator()
        self.hub = hub
        self.token = token
    }

    func send(_ text: String) throws {
        try connection.sendAll(Array(text.utf8))
    }

    /// The next line, or `nil` when the server closed the connection.
    func line() async -> String? {
        await iterator.next()
    }

    /// The next line as a JSON object.
    func object() async throws -> [String: Any] {
        let line = try #require(await line(), "the server closed the connection")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(line)")
    }

    /// The next object of `className`, skipping others.
    func object(ofClass className: String) async throws -> [String: Any] {
        while true {
            let object = try await object()
            if object["class"] as? String == className { return object }
        }
    }

    /// The classes of the next `count` objects.
    func classes(_ count: Int) async throws -> [String] {
        var classes: [String] = []
        for _ in 0..<count { classes.append(try await object()["class"] as? String ?? "?") }
        return classes
    }

    /// Reads until the server closes the connection; returns the lines read.
    func readToEnd() async -> [String] {
        var lines: [String] = []
        while let line = await line() { lines.append(line) }
        return lines
    }

    /// Stops reading this client's socket (its bytes pile up in the kernel, as with a client that
    /// never reads).
    func stopReading() {
        hub.forget(token, connection: connection)
    }

    func close() {
        hub.forget(token, connection: connection)
        connection.close()
    }
}

/// Lines received by a test client, readable from any thread.
final class LineLog: Sendable {
    private let lines = Lock<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
    var count: Int { lines.withLock { $0.count } }
}

/// Collects a server's log lines.
final class LogLines: Sendable {
    private let lines = Lock<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { [self] line in self.lines.withLock { $0.append(line) } } }
}

/// The descriptors this process holds on TCP sockets whose local port is `port` (the listener and the
/// connections it accepted): each socket descriptor of `/proc/self/fd` asked its address (`getsockname`).
/// Other tests run in the same process, so counting all descriptors would count theirs too. (Reading
/// `/proc/net/tcp` instead can miss an entry while other tests open and close sockets meanwhile.)
func descriptorsOnLocalPort(_ port: UInt16) throws -> Int {
    var count = 0
    for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
        guard let fd = Int32(name),
              let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
              target.hasPrefix("socket:[") else { continue }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else { continue }
        let local: UInt16? = switch Int32(storage.ss_family) {
        case AF_INET: withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        case AF_INET6: withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        default: nil
        }
        var type: Int32 = 0
        var typeLength = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLength) == 0, type == Int32(SOCK_STREAM.rawValue)
        else { continue }
        if local == port { count += 1 }
    }
    return count
}

/// A fixed wall clock: 2026-11-29T16:25:21.005Z.
let fixedWallClock: @Sendable () -> Int64 = { 1_795_969_521_005_000_000 }

/// A server on an ephemeral loopback port for `source`.
func makeServer(
    _ source: GPSDSource, log: LogLines = LogLines(), configure: (inout GPSDServerConfiguration) -> Void = { _ in }
) throws -> GPSDServer {
    var configuration = GPSDServerConfiguration(listen: [.ipv4("127.0.0.1", port: 0)], wallClock: fixedWallClock,
                                                log: log.sink)
    configure(&configuration)
    let server = try GPSDServer(source: source, configuration: configuration)
    try server.start()
    return server
}
