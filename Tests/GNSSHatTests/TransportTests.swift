@testable import GNSSHat
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// Bytes a transport delivered, and the failure it reported.
final class Delivered: Sendable {
    private let state = Lock<(bytes: [UInt8], failure: String?)>(([], nil))
    var bytes: [UInt8] { state.withLock { $0.bytes } }
    var failure: String? { state.withLock { $0.failure } }
    private let changed = ConditionWaiters()
    func add(_ bytes: [UInt8]) {
        state.withLock { $0.bytes += bytes }
        changed.resumeAll()
    }
    func fail(_ error: any Error) {
        state.withLock { $0.failure = "\(error)" }
        changed.resumeAll()
    }
    /// Suspends until at least `count` bytes came or a failure did (or the task is cancelled).
    func waitForBytes(_ count: Int) async {
        await changed.wait { state.withLock { $0.bytes.count >= count || $0.failure != nil } }
    }
    /// Suspends until a failure came (or the task is cancelled).
    func waitForFailure() async {
        await changed.wait { failure != nil }
    }
    /// The bytes so far, forgetting them.
    func take() -> [UInt8] {
        state.withLock { state in
            defer { state.bytes.removeAll() }
            return state.bytes
        }
    }
}

@Suite("Transports")
struct TransportTests {
    @Test("DDC polling: a quarter of the navigation period while bytes come, backing off when quiet")
    func pollSchedule() {
        var schedule = DDCPollSchedule(period: .seconds(1))
        #expect(schedule.fastest == .milliseconds(250))
        #expect(schedule.next(received: 300, limit: 1024) == .milliseconds(250))
        #expect(schedule.next(received: 1024, limit: 1024) == .zero, "a full chunk: read on at once")
        var pauses: [Duration] = []
        for _ in 0..<14 { pauses.append(schedule.next(received: 0, limit: 1024)) }
        #expect(pauses.prefix(7).allSatisfy { $0 == .milliseconds(250) }, "quiet for less than two periods")
        #expect(pauses[8] > pauses[7])
        #expect(pauses.last == schedule.slowest)
        #expect(schedule.slowest == .seconds(4))
        #expect(schedule.next(received: 10, limit: 1024) == .milliseconds(250), "bytes again: fast again")
        #expect(DDCPollSchedule(period: .milliseconds(25)).fastest == .milliseconds(10))
    }

    @Test("DDC transport: polls on the clock, delivers what the port holds, stops entirely when closed")
    func ddcTransport() async throws {
        let clock = ManualClock()
        let bus = FakeUBloxI2C()
        let transport = DDCTransport(port: UBloxDDC(bus: bus), period: .seconds(1), clock: ReceiverClock(clock))
        let delivered = Delivered()
        let frame = UBX.poll(.navPVT)
        bus.enqueue(frame)
        transport.start(onBytes: { delivered.add($0); return .none }, onFailure: { delivered.fail($0) })
        await clock.waitForSleepers(1)
        #expect(delivered.bytes == frame)
        #expect(transport.pollInterval == .milliseconds(250))
        // Glitches cost nothing: a count with bit 15 set, a bogus count, an idle bus.
        bus.inject(.countBit15)
        bus.enqueue(frame)
        clock.advance(by: .milliseconds(250))
        await clock.waitForSleepers(1)
        #expect(delivered.bytes == frame + frame)
        for _ in 0..<12 {
            let next = try #require(clock.nextDeadline)
            clock.advance(to: next)
            await clock.waitForSleepers(1)
        }
        #expect(transport.pollInterval > .milliseconds(250), "quiet: polling backs off")
        try await transport.send(UBX.poll(.monVER))
        #expect(bus.received.last == UBX.poll(.monVER))
        await transport.close()
        let transfers = bus.transfers.count
        clock.advance(by: .seconds(3600))
        #expect(bus.transfers.count == transfers, "no polling while off")
        #expect(delivered.failure == nil)
    }

    @Test("DDC transport: a few failed transfers are retried, more fail the session", .timeLimit(.minutes(1)))
    func ddcFailures() async throws {
        let clock = ManualClock()
        let bus = FakeUBloxI2C()
        let transport = DDCTransport(port: UBloxDDC(bus: bus), period: .seconds(1), clock: ReceiverClock(clock))
        let delivered = Delivered()
        bus.inject(.fail(.remoteIO))
        transport.start(onBytes: { delivered.add($0); return .none }, onFailure: { delivered.fail($0) })
        await clock.waitForSleepers(1)
        #expect(delivered.failure == nil)
        for _ in 0..<(DDCTransport.failuresTolerated + 1) { bus.inject(.fail(.remoteIO)) }
        // One failure before, three more after the first poll: the polls before the last sleep
        // again, the last reports the failure (a poll that does neither ends in the time limit).
        for poll in 1...DDCTransport.failuresTolerated {
            let next = try #require(clock.nextDeadline, "poll \(poll) sleeps until its deadline")
            try #require(delivered.failure == nil, "no failure before poll \(poll)")
            clock.advance(to: next)
            if poll < DDCTransport.failuresTolerated {
                await clock.waitForSleepers(1)
            } else {
                await delivered.waitForFailure()
            }
        }
        await transport.close()
        #expect(delivered.failure?.contains("EREMOTEIO") == true)
    }

    @Test("UART transport on a link that keeps bytes: pauses through the middle of epochs once it has learnt them",
          .timeLimit(.minutes(1)))
    func uartTransportPaces() async throws {
        let link = FakeByteLink()
        let serial = FakeSerial(link: link, keepsBytes: true)
        // The chunks, each with its time on the loop's clock and what it did to the epochs: epochs 0-4
        // of three chunks (start with position, middle, end 80 ms after the start); epoch 5's end comes
        // in the first chunk after its pause (the wake-up was late).
        var script: [(bytes: [UInt8], at: Duration, marks: EpochMarks)] = []
        for epoch in 0..<5 {
            let start = Duration.milliseconds(100 * epoch)
            script.append(([UInt8(3 * epoch)], start, EpochMarks(startedEpoch: true, settled: true)))
            script.append(([UInt8(3 * epoch + 1)], start + .milliseconds(40), EpochMarks(settled: true)))
            script.append(([UInt8(3 * epoch + 2)], start + .milliseconds(80), EpochMarks(endedEarlierEpoch: true)))
        }
        script.append(([15], .milliseconds(500), EpochMarks(startedEpoch: true, settled: true)))
        script.append(([16], .milliseconds(581), EpochMarks(endedEarlierEpoch: true)))
        // A last chunk: once it is delivered, the loop has given the pacer the one before.
        script.append(([17], .milliseconds(600), .none))
        let clock = Lock<Duration>(.zero)
        let next = Lock(0)
        let transport = UARTTransport(link: serial, name: link.name, speed: 115_200, now: { clock.withLock { $0 } })
        let delivered = Delivered()
        let chunks = script
        transport.start(onBytes: { bytes in
            // One chunk a read: the next is fed once this one is handled.
            let index = next.withLock { index -> Int in
                defer { index += 1 }
                return index
            }
            clock.withLock { $0 = chunks[index].at }
            delivered.add(bytes)
            if index + 1 < chunks.count { link.feed(chunks[index + 1].bytes) }
            return chunks[index].marks
        }, onFailure: { delivered.fail($0) })
        link.feed(chunks[0].bytes)
        await delivered.waitForBytes(chunks.count)
        #expect(delivered.bytes == Array(0...17))
        // Epochs 4 and 5 paused (79 ms each: the lengths agree, the least margin), epoch 5 found its end
        // already there.
        #expect(transport.pauses == (taken: 2, overslept: 1))
        link.hangUp()
        await transport.close()
        #expect(link.isClosed)
    }

    @Test("UART transport over a fake link: reads in a loop, writes, closes the link", .timeLimit(.minutes(1)))
    func uartTransport() async throws {
        let link = FakeByteLink()
        let serial = FakeSerial(link: link)
        let transport = UARTTransport(link: serial, name: link.name, speed: 115_200)
        let delivered = Delivered()
        link.feed([1, 2, 3])
        transport.start(onBytes: { delivered.add($0); return .none }, onFailure: { delivered.fail($0) })
        try await transport.send([9, 9])
        #expect(link.written == [[9, 9]])
        // The read loop runs on a thread of its own: closing before it has read would stop it
        // with the bytes unread (a loaded machine, ThreadSanitizer), so wait for them first.
        await delivered.waitForBytes(3)
        #expect(delivered.bytes == [1, 2, 3])
        link.hangUp()
        await transport.close()
        #expect(link.isClosed)
    }

    @Test("the configuration keys for I2C and UART1 (pyubx2's configuration database)")
    func valsetKeys() {
        let uart = Configurator.valsetItems(period: .milliseconds(200), i2c: false)
        #expect(uart.map(\.key) == [0x3021_0001, 0x2091_0007, 0x2091_0016, 0x2091_005C])
        #expect(uart[0].value == 200)
        let i2c = Configurator.valsetItems(period: .seconds(1), i2c: true)
        #expect(i2c.map(\.key) == [0x3021_0001, 0x2091_0006, 0x2091_0015, 0x2091_005B])
        #expect(i2c.allSatisfy { UBXConfigItem.valueSize(key: $0.key) != nil })
    }
}

/// A FakeByteLink as a serial link (speed changes recorded).
final class FakeSerial: SerialLink {
    let link: FakeByteLink
    let speeds = Lock<[Int]>([])
    /// Whether the read loop may pause on it, as on a tty.
    let keepsBytesWhileReaderSleeps: Bool
    init(link: FakeByteLink, keepsBytes: Bool = false) {
        self.link = link
        keepsBytesWhileReaderSleeps = keepsBytes
    }
    var name: String { link.name }
    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        try link.read(maxCount: maxCount, timeout: timeout)
    }
    func write(_ bytes: [UInt8]) throws { try link.write(bytes) }
    func close() { link.close() }
    func setSpeed(_ speed: Int) throws { speeds.withLock { $0.append(speed) } }
    func discardInput() throws {}
}
