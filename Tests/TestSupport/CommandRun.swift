// A program run to its end as a child: the built `gnss-hat` or an oracle. Both output pipes are
// drained by threads of their own from the start (corelibs Foundation's readabilityHandler has
// been seen never to fire here), so a child that writes much to one of them, or writes while its
// input is still being fed, can never block on a full pipe.

public import Foundation
import Glibc

public struct CommandRun: Sendable {
    public var status: Int32
    public var out: String
    public var err: String

    /// Runs the built `gnss-hat` to its end (see ``run(executable:_:input:terminateAfterFirstLine:environment:directory:)``).
    public static func run(_ arguments: [String], input: Data? = nil, terminateAfterFirstLine: Bool = false,
                           environment: [String: String]? = nil, directory: URL? = nil) throws -> CommandRun {
        try run(executable: TestPaths.gnssHat(), arguments, input: input,
                terminateAfterFirstLine: terminateAfterFirstLine, environment: environment, directory: directory)
    }

    /// Runs `executable` to its end. `input` is written to its standard input (closed after;
    /// without it the child reads `/dev/null`); `terminateAfterFirstLine` sends SIGTERM once
    /// standard output has a line.
    public static func run(executable: URL, _ arguments: [String], input: Data? = nil,
                           terminateAfterFirstLine: Bool = false, environment: [String: String]? = nil,
                           directory: URL? = nil) throws -> CommandRun {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        let inputPipe = input.map { _ in Pipe() }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        // run() closes this process's copies of the child's ends of the pipes.
        try runWithNoSignalBlocked(process)
        let errData = Drain(err.fileHandleForReading.fileDescriptor)
        let outData = Drain(out.fileHandleForReading.fileDescriptor) { data in
            if terminateAfterFirstLine && data.contains(0x0A) {
                process.terminate()
                return false
            }
            return true
        }
        if let input, let inputPipe {
            // A child that exits without reading it all ends this write early: its status and
            // output say why.
            writeIgnoringBrokenPipe(inputPipe.fileHandleForWriting.fileDescriptor, input)
            try inputPipe.fileHandleForWriting.close()
        }
        let outBytes = outData.wait()
        let errBytes = errData.wait()
        process.waitUntilExit()
        return CommandRun(status: process.terminationStatus, out: String(decoding: outBytes, as: UTF8.self),
                          err: String(decoding: errBytes, as: UTF8.self))
    }
}

/// Starts `process` with no signal blocked, as a shell would. Foundation's `Process` spawns with
/// the calling thread's signal mask, and the threads tests run on (Swift's cooperative pool)
/// block nearly every signal: a child would start with SIGTERM blocked and never end on it
/// unless it unblocks it itself (gnss-hat does, gpsd and the shell do not).
public func runWithNoSignalBlocked(_ process: Process) throws {
    var none = sigset_t()
    sigemptyset(&none)
    var previous = sigset_t()
    pthread_sigmask(SIG_SETMASK, &none, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try process.run()
}

/// Writes `data` to `fd` until all is written or the reader is gone (EPIPE), with `SIGPIPE`
/// blocked on this thread and a pending one taken before it is unblocked: the process's
/// disposition stays as it is (a test checks that sockets never raise `SIGPIPE`).
private func writeIgnoringBrokenPipe(_ fd: Int32, _ data: Data) {
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
    defer {
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 {
            var now = timespec()
            _ = sigtimedwait(&pipeSignal, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
    data.withUnsafeBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            offset += count
        }
    }
}

/// Reads a descriptor to its end on a thread of its own (its `FileHandle` closes it, once the run
/// has waited for this). `watch` sees the data so far after each read, until it returns false.
private final class Drain: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written by the thread only, read after `done`.
    private var data = Data()

    init(_ fd: Int32, watch: (@Sendable (Data) -> Bool)? = nil) {
        Thread.detachNewThread { [self] in
            var watching = watch
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                data.append(contentsOf: buffer[..<count])
                if let watch = watching, !watch(data) { watching = nil }
            }
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
