// A long-running child of a test (a broker, a caster, a TLS front): its merged output read line by line on a
// thread of its own, waited for without blocking the cooperative pool; its input written; stopped by a signal.
public import Foundation
import Glibc

/// A long-running child process whose merged output is read line by line on a thread of its own.
/// Tests in async code wait with ``line(containing:skip:limit:)``, which suspends instead of blocking
/// a thread of the cooperative pool (the bridge under test needs those).
public final class Daemon: @unchecked Sendable {
    public let name: String
    public let process = Process()
    /// The signal ``stop(signal:)`` sends when none is named.
    private let stopSignal: Int32
    /// The output as the reader thread shares it. The thread holds this, not the Daemon: a Daemon its test lets go
    /// of while the child runs is released, and its `deinit` kills the child (a thread holding the Daemon kept it,
    /// and the child, alive until the child ended by itself: mosquitto_sub watchers outlived their tests).
    private let shared = Output()
    private var condition: NSCondition { shared.condition }
    // Guarded by `condition`.
    private var lines: [String] { shared.lines }
    private var ended: Bool { shared.ended }
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] {
        get { shared.waiters }
        set { shared.waiters = newValue }
    }
    private var nextWaiter: UInt64 {
        get { shared.nextWaiter }
        set { shared.nextWaiter = newValue }
    }
    /// The child's standard input, when it was given one.
    private let input: FileHandle?

    /// Starts `executable` with `arguments`. `stopSignal` is what ``stop(signal:)`` sends by default (SIGKILL for a
    /// peer that can hang on SIGTERM, such as str2str).
    public init(_ name: String, executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                withInput: Bool = false, stopSignal: Int32 = SIGTERM) throws {
        self.name = name
        self.stopSignal = stopSignal
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
        Thread.detachNewThread { [shared] in
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
                    shared.update { $0.lines.append(line) }
                }
            }
            shared.update { $0.ended = true }
            withExtendedLifetime(pipe) {}
        }
    }

    /// Suspends until a line containing `text` has come (the `skip` first matches are passed over),
    /// the child ends, or `limit` passes; the error says what the child printed.
    @discardableResult
    public func line(containing text: String, skip: Int = 0, limit: Duration = .seconds(20)) async throws -> String {
        let lines = try await lines("'\(text)'", limit: limit) { $0.filter { $0.contains(text) }.count > skip }
        return lines.filter { $0.contains(text) }[skip]
    }

    /// Suspends until the first line `match` accepts has come, as ``line(containing:skip:limit:)``.
    @discardableResult
    public func line(
        _ what: String, limit: Duration = .seconds(20), where match: @escaping (String) -> Bool
    ) async throws -> String {
        let lines = try await lines(what, limit: limit) { $0.contains(where: match) }
        guard let found = lines.first(where: match) else { throw TestSetupError("\(name): no \(what)") }
        return found
    }

    /// Suspends until every line so far satisfies `condition` (checked at each new line), the child
    /// ends, or `limit` passes; returns the lines.
    @discardableResult
    public func lines(_ what: String, limit: Duration = .seconds(20), until condition: @escaping ([String]) -> Bool)
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
    public func send(_ line: String) throws {
        guard let input else { throw TestSetupError("\(name) was started without an input") }
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits for a line containing `text` (the `skip` first matches are passed over).
    @discardableResult
    public func waitForLine(containing text: String, skip: Int = 0, limit: TimeInterval = 15) throws -> String {
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

    public var output: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    /// Writes raw bytes to the child's standard input.
    public func write(_ bytes: [UInt8]) throws {
        guard let input else { throw TestSetupError("\(name) was started without an input") }
        try input.write(contentsOf: Data(bytes))
    }

    public var isRunning: Bool { process.isRunning }

    /// Ends the child: its input closed, then `signal` (the one given at the start by default); waits for its exit.
    public func stop(signal: Int32? = nil) {
        try? input?.close()
        if process.isRunning { kill(process.processIdentifier, signal ?? stopSignal) }
        process.waitUntilExit()
    }

    /// A child still running when its test lets go is killed (one never started is left alone).
    deinit {
        guard process.isRunning else { return }
        stop(signal: SIGKILL)
    }
}

/// A Daemon's output as its reader thread and its waiters share it.
private final class Output: @unchecked Sendable {
    let condition = NSCondition()
    // Guarded by `condition`.
    var lines: [String] = []
    var ended = false
    var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var nextWaiter: UInt64 = 0

    /// Changes the output under the lock, then wakes every waiter.
    func update(_ change: (Output) -> Void) {
        condition.lock()
        change(self)
        let ready = Array(waiters.values)
        waiters = [:]
        condition.broadcast()
        condition.unlock()
        for waiter in ready { waiter.resume() }
    }
}
