// Running real programs in tests: our `gnss-hat serve`, Debian's gpsd, gpspipe and python3-gps.

import Foundation
import Glibc
import LinuxSystem
import Testing
import TestSupport

/// A child process whose standard error is collected line by line; tests wait for lines or the exit
/// without polling.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    private let errorPipe = Pipe()
    private let outputPipe = Pipe()
    // Guards everything below; the pipes' handlers and the termination handler run on other threads.
    private let lock = NSLock()
    private var errorLines: [String] = []
    private var outputData = Data()
    private var partial: [UInt8] = []
    private var exited = false
    private var openPipes = 2
    private var waiters: [CheckedContinuation<Bool, Never>] = []

    init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardError = errorPipe
        process.standardOutput = outputPipe
        process.standardInput = FileHandle.nullDevice
        // Children started later must not inherit these pipes, or this one's end of output never
        // comes while they live (the child gets its own copies as descriptors 1 and 2).
        for pipe in [errorPipe, outputPipe] {
            for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting] {
                _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
            }
        }
        process.terminationHandler = { [weak self] _ in self?.changed { $0.exited = true } }
        // As a shell starts it: not with the test thread's mask, which blocks SIGTERM.
        try runWithNoSignalBlocked(process)
        // Each pipe is drained by its own thread with blocking reads: corelibs Foundation's
        // readabilityHandler has been seen to never fire here, which hung the tests.
        let errorDescriptor = errorPipe.fileHandleForReading.fileDescriptor
        let outputDescriptor = outputPipe.fileHandleForReading.fileDescriptor
        // The threads hold the process weakly, so that its deinit still kills a child left running.
        Thread.detachNewThread { [weak self] in
            ChildProcess.drain(errorDescriptor, into: self) { this, bytes in
                this.partial += bytes
                while let newline = this.partial.firstIndex(of: 0x0A) {
                    this.errorLines.append(String(decoding: this.partial[..<newline], as: UTF8.self))
                    this.partial.removeSubrange(...newline)
                }
            }
        }
        Thread.detachNewThread { [weak self] in
            ChildProcess.drain(outputDescriptor, into: self) { this, bytes in
                this.outputData.append(contentsOf: bytes)
            }
        }
    }

    /// Reads `descriptor` until its end (every writer closed), handing each chunk to `append` under
    /// the lock; the end counts one pipe closed.
    private static func drain(
        _ descriptor: Int32, into owner: ChildProcess?, _ append: (ChildProcess, ArraySlice<UInt8>) -> Void
    ) {
        weak let owner = owner
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard let process = owner else { return }
            if count <= 0 {
                process.changed { $0.openPipes -= 1 }
                return
            }
            process.changed { append($0, buffer[..<count]) }
        }
    }

    private func changed(_ update: (ChildProcess) -> Void) {
        lock.lock()
        update(self)
        let ready = waiters
        waiters = []
        lock.unlock()
        for waiter in ready { waiter.resume(returning: false) }
    }

    /// Suspends until `condition` holds, checked now and after every line and at the exit.
    private func wait(until condition: (ChildProcess) -> Bool) async {
        while true {
            let done: Bool = await withCheckedContinuation { continuation in
                lock.lock()
                if condition(self) {
                    lock.unlock()
                    continuation.resume(returning: true)
                } else {
                    waiters.append(continuation)
                    lock.unlock()
                }
            }
            if done { return }
        }
    }

    var stderrLines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return errorLines
    }

    var stdout: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: outputData, as: UTF8.self)
    }

    var pid: Int32 { process.processIdentifier }

    /// Suspends until a line of standard error satisfies `condition`; throws if the process ends first.
    func waitForErrorLine(_ condition: @escaping (String) -> Bool) async throws -> String {
        await wait { $0.errorLines.contains(where: condition) || $0.exited }
        if let line = stderrLines.first(where: condition) { return line }
        throw TestSetupError("process exited (\(process.terminationStatus)) before the expected line; "
            + "stderr: \(stderrLines.joined(separator: " | "))")
    }

    /// Suspends until the process exits and its output has been read; returns its status.
    func waitForExit() async -> Int32 {
        await wait { $0.exited && $0.openPipes <= 0 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// SIGKILL: for a child that does not end on SIGTERM (a test's clean-up, whatever happened).
    func kill() {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    deinit {
        if process.isRunning {
            _ = Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// `gnss-hat serve` on an ephemeral loopback port.
final class ServeProcess {
    let child: ChildProcess
    let address: SocketAddress

    init(_ arguments: [String]) async throws {
        child = try ChildProcess(try TestPaths.gnssHat(), ["serve", "--listen", "127.0.0.1:0"] + arguments)
        let line = try await child.waitForErrorLine { $0.contains("listening on") }
        let text = try #require(line.split(separator: " ").last.map(String.init), "no address in: \(line)")
        address = try SocketAddress(parsing: text, defaultPort: 0)
    }

    /// The service's open descriptors (`/proc/PID/fd`).
    var descriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd").count) ?? -1
    }

    /// The service's threads (`/proc/PID/task`): each one's name and the fields of its `stat`
    /// after the name (the first is the state, field 3 of proc(5)).
    var threads: [(name: String, stat: [Substring])] {
        let tasks = (try? FileSystem.entries(of: "/proc/\(child.pid)/task")) ?? []
        return tasks.compactMap { task in
            let path = "/proc/\(child.pid)/task/\(task)"
            guard let comm = try? FileSystem.contents(of: path + "/comm"),
                  let stat = try? FileSystem.contents(of: path + "/stat") else { return nil }
            let text = String(decoding: stat, as: UTF8.self)
            guard let close = text.lastIndex(of: ")") else { return nil }
            return (String(decoding: comm.filter { $0 != 0x0A }, as: UTF8.self),
                    text[text.index(after: close)...].split(separator: " "))
        }
    }

    /// How many heaps of extra malloc arenas the service has: glibc reserves each one as a 64 MiB
    /// region aligned to 64 MiB (`HEAP_MAX_SIZE`), mapped read-write as it grows and inaccessible
    /// beyond, so in `/proc/PID/maps` one is a run of mappings starting at a multiple of 64 MiB
    /// whose read-write and inaccessible parts add up to exactly 64 MiB.
    var mallocArenaHeaps: Int {
        let heapSize: UInt64 = 64 << 20
        guard let maps = try? FileSystem.contents(of: "/proc/\(child.pid)/maps") else { return -1 }
        let regions = String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap {
            line -> (start: UInt64, end: UInt64, protection: Substring)? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[4] == "0" else { return nil }  // anonymous: inode 0
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16),
                  let end = UInt64(bounds[1], radix: 16) else { return nil }
            return (start, end, fields[1])
        }
        var heaps = 0
        for (index, region) in regions.enumerated()
        where region.start % heapSize == 0 && region.protection == "rw-p" {
            var end = region.end
            var next = index + 1
            while next < regions.count, regions[next].start == end, regions[next].protection == "---p" {
                end = regions[next].end
                next += 1
            }
            if end - region.start == heapSize { heaps += 1 }
        }
        return heaps
    }

    /// Sends SIGTERM and returns the exit status.
    func stop() async -> Int32 {
        child.terminate()
        return await child.waitForExit()
    }
}
