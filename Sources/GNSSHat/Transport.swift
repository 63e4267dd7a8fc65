// Transports: how bytes move between the host and the receiver while a session runs. A UART is
// read by a loop on a thread of its own; a u-blox DDC port is polled on the injected clock, with
// an interval that follows the navigation period and backs off while the receiver is quiet.
import LinuxSystem
import PiHardware
import Signals

/// An open connection to the receiver for one session.
protocol Transport: AnyObject, Sendable {
    /// The device, for errors and notices.
    var name: String { get }
    /// Starts delivering received bytes to `onBytes` (one call at a time), which says what they did to
    /// the epochs (a UART's read loop paces its reads by it); `onFailure` is called once if the link
    /// fails while open.
    func start(onBytes: @escaping @Sendable ([UInt8]) -> EpochMarks,
               onFailure: @escaping @Sendable (any Error) -> Void)
    /// Sends bytes to the receiver.
    func send(_ bytes: [UInt8]) async throws
    /// Sends corrections (whole RTCM 3 frames) to the receiver: no reply is awaited.
    func sendCorrections(_ bytes: [UInt8]) async throws
    /// Stops reading (no more reads or polls; sends still work, for a power-off command); returns
    /// once nothing reads any more.
    func stopReading() async
    /// Stops reading and closes the link; returns once nothing reads any more.
    func close() async
}

/// A UART (or pseudo-terminal, or the simulator's in-process link): a read loop on a thread of
/// its own, writes on another.
final class UARTTransport: Transport {
    let link: any SerialLink
    let name: String
    /// How long one read waits if there is no waker: it bounds how long `close()` waits for the
    /// loop to notice.
    static let readTimeout: Duration = .milliseconds(50)
    /// The most bytes one read takes: more than a 10 Hz epoch at 115200 baud.
    static let readSize = 4096
    /// Wakes the read loop to stop, so it waits for bytes with no timeout (no wake-ups between
    /// sentences). Without one (no eventfd to be had) reads time out instead.
    private let wake = try? Waker()

    private let loop = LoopControl()
    private let reader = SerialThread(name: "gnss-uart-read")
    private let writer = SerialThread(name: "gnss-uart-write")
    /// When the read loop may sleep through the middle of an epoch; it does only when `paces`: the
    /// link keeps bytes meanwhile and a waker can cut a pause short.
    private let pacer: Lock<ReadPacer>
    private let paces: Bool
    /// The read loop's clock for the pacer: monotonic, from when the transport was made (a test's
    /// own, when it gives one; the pauses themselves are real time).
    private let now: @Sendable () -> Duration

    init(link: any SerialLink, name: String, speed: Int, now: (@Sendable () -> Duration)? = nil) {
        self.link = link
        self.name = name
        // 10 bits a byte on the wire (8N1).
        pacer = Lock(ReadPacer(bytesPerSecond: speed / 10))
        paces = link.keepsBytesWhileReaderSleeps && wake != nil
        let origin = ContinuousClock.now
        self.now = now ?? { origin.duration(to: .now) }
    }

    /// The pauses taken so far, and those after which the epoch's end had already come.
    var pauses: (taken: Int, overslept: Int) {
        pacer.withLock { ($0.pauses, $0.overslept) }
    }

    func start(onBytes: @escaping @Sendable ([UInt8]) -> EpochMarks,
               onFailure: @escaping @Sendable (any Error) -> Void) {
        loop.begin()
        do {
            try reader.async { [self] in readLoop(onBytes: onBytes, onFailure: onFailure) }
        } catch {
            loop.ended()
            onFailure(error)
        }
    }

    private func readLoop(onBytes: @escaping @Sendable ([UInt8]) -> EpochMarks,
                          onFailure: @escaping @Sendable (any Error) -> Void) {
        // One buffer for the loop's life: `onBytes` gets it and lets go of it before the next read,
        // which then reuses its storage (no allocation per read).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.readSize)
        while loop.isRunning {
            do {
                if let wake {
                    try link.read(into: &bytes, maxCount: Self.readSize, until: wake)
                } else {
                    bytes = try link.read(maxCount: Self.readSize, timeout: Self.readTimeout)
                }
                guard !bytes.isEmpty else { continue }
                let marks = onBytes(bytes)
                // Asleep through the middle of an epoch, the kernel keeping its bytes: woken early by
                // a stop or a command, whose reply may be on its way.
                if paces, let wake, let pause = pacer.withLock({ $0.chunk(marks, at: now()) }) {
                    _ = wake.wait(timeout: pause)
                }
            } catch {
                // The failure first: the session counts itself working until the signal has it, so
                // that a driver of a manual clock never finds everything idle between the two.
                if loop.isRunning { onFailure(error) }
                // Then, at once: nothing reads this link any more, but it stays open until the stop
                // the failure leads to, which waits for a start in progress (its pause on the clock,
                // say). Said now, or a simulated hat counts what its receiver sends meanwhile as in
                // flight, and a driver of the clock waits for that before it moves the time the start
                // needs.
                link.endReading()
                break
            }
        }
        loop.ended()
    }

    func setSpeed(_ speed: Int) throws {
        try link.setSpeed(speed)
        pacer.withLock { $0.restart(bytesPerSecond: speed / 10) }
    }

    func discardInput() throws {
        try link.discardInput()
    }

    func send(_ bytes: [UInt8]) async throws {
        let link = link
        if paces {
            // A command: its reply must not wait in the kernel while the loop sleeps.
            let sent = now()
            pacer.withLock { $0.commandSent(at: sent) }
            wake?.wake()
        }
        try await writer.run { try link.write(bytes) }
    }

    /// On the writer's thread, without waking the read loop: corrections await no reply.
    func sendCorrections(_ bytes: [UInt8]) async throws {
        let link = link
        try await writer.run { try link.write(bytes) }
    }

    func stopReading() async {
        await loop.stop { wake?.wake() }
        link.endReading()
    }

    func close() async {
        await stopReading()
        link.close()
    }
}

/// When to poll a u-blox DDC port next: every quarter of the navigation period while bytes
/// come, at once while a poll came back full, and backing off (doubling up to `slowest`) once
/// the receiver has been quiet for two navigation periods.
struct DDCPollSchedule: Sendable, Equatable {
    /// The interval while the receiver talks: a quarter of the navigation period, at least 10 ms.
    let fastest: Duration
    /// The longest interval while the receiver is quiet.
    let slowest: Duration
    /// How long the receiver may be quiet before polling backs off.
    let quietBeforeBackOff: Duration
    private(set) var interval: Duration
    private(set) var quietFor: Duration = .zero

    init(period: Duration) {
        fastest = max(period / 4, .milliseconds(10))
        slowest = max(period * 4, .seconds(1))
        quietBeforeBackOff = period * 2
        interval = fastest
    }

    /// The pause before the next poll, after one that returned `count` bytes of at most `limit`.
    mutating func next(received count: Int, limit: Int) -> Duration {
        if count > 0 {
            quietFor = .zero
            interval = fastest
            return count >= limit ? .zero : fastest
        }
        quietFor += interval
        if quietFor >= quietBeforeBackOff { interval = min(interval * 2, slowest) }
        return interval
    }
}

/// A u-blox DDC port on I2C, polled on the session's clock. Polling runs only while the session
/// is open: a powered-off receiver is not polled at all.
final class DDCTransport: Transport {
    let port: UBloxDDC
    let name: String
    /// Consecutive failed transfers tolerated (the Pi's controller NAKs now and then) before
    /// the session fails.
    static let failuresTolerated = 3

    private let clock: ReceiverClock
    private let period: Duration
    /// Transfers run here, one at a time: the bus calls block.
    private let transfers = SerialThread(name: "gnss-ddc")
    private let poller = Lock<Task<Void, Never>?>(nil)
    private let scheduleState: Lock<DDCPollSchedule>
    /// The corrections' byte stream, which holds a lone trailing byte for the next write.
    private let correctionStream = Lock(DDCWriteStream())

    init(port: UBloxDDC, period: Duration, clock: ReceiverClock) {
        self.port = port
        self.period = period
        self.clock = clock
        name = "\(port.bus.name) @0x" + String(port.address, radix: 16)
        scheduleState = Lock(DDCPollSchedule(period: period))
    }

    /// The current polling interval (for tests and statistics).
    var pollInterval: Duration { scheduleState.withLock { $0.interval } }

    func start(onBytes: @escaping @Sendable ([UInt8]) -> EpochMarks,
               onFailure: @escaping @Sendable (any Error) -> Void) {
        scheduleState.withLock { $0 = DDCPollSchedule(period: period) }
        // The poller works from now until its task ends, but while it waits for its next poll.
        let polling = clock.beginWork()
        let task = Task { [self] in
            defer { clock.endWork(polling) }
            var failures = 0
            while !Task.isCancelled {
                let port = port
                let bytes: [UInt8]
                do {
                    bytes = try await transfers.run { try port.readAvailable(maxCount: port.maxReadChunk) }
                    failures = 0
                } catch {
                    failures += 1
                    let gone = (error as? any HardwareFault)?.deviceIsGone ?? false
                    if gone || failures > Self.failuresTolerated {
                        if !Task.isCancelled { onFailure(error) }
                        return
                    }
                    bytes = []
                }
                // Polled on its schedule: the epochs do not pace it.
                if !bytes.isEmpty { _ = onBytes(bytes) }
                let pause = scheduleState.withLock { $0.next(received: bytes.count, limit: port.maxReadChunk) }
                if pause > .zero {
                    do { try await clock.sleep(for: pause, as: polling) } catch { return }
                }
            }
        }
        poller.withLock { $0 = task }
    }

    func send(_ bytes: [UInt8]) async throws {
        let port = port
        try await transfers.run { try port.write(bytes) }
    }

    /// Through the corrections' stream: every transfer at least two bytes, a lone byte kept for the next.
    func sendCorrections(_ bytes: [UInt8]) async throws {
        let port = port
        let chunks = correctionStream.withLock { $0.transfers(for: bytes, maxChunk: port.maxWriteChunk) }
        guard !chunks.isEmpty else { return }
        try await transfers.run { try port.write(transfers: chunks) }
    }

    func stopReading() async {
        let task = poller.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }

    /// Polling stops; the bus descriptor closes when the session lets go of this transport.
    func close() async {
        await stopReading()
    }
}
