import Foundation
@testable import GNSSHat  // PowerStrategyRunner.lineOffAttempts
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// A fault at the hardware seam, as PiHardware reports it: the errno a kernel gives, mapped by the same
/// `SerialError(FailedCall)` and `GPIOError` cases the real port and lines use.
enum HardwareFaultKind: CaseIterable, CustomStringConvertible {
    /// `read` fails with `EIO` in the middle of an epoch.
    case serialIOError
    /// The USB adapter is unplugged: `read` fails with `ENODEV`, and opening fails with `ENOENT` until
    /// it is back.
    case adapterUnplugged
    /// The far side hangs up: `poll` reports `POLLHUP` with no data.
    case hangUp
    /// A storm of `EAGAIN` reads (the port has nothing after all): no fault, the session goes on.
    case eagainStorm
    /// The GPIO chip vanishes while the receiver runs: its power-off cannot drive the enable line
    /// (`ENODEV`), which is reported.
    case gpioChipVanishes
    /// The GPIO chip vanishes before a power-on: the enable line cannot be driven (`ENODEV`).
    case gpioChipGoneAtPowerOn

    var description: String {
        switch self {
        case .serialIOError: "read EIO"
        case .adapterUnplugged: "adapter unplugged (ENODEV)"
        case .hangUp: "POLLHUP"
        case .eagainStorm: "EAGAIN storm"
        case .gpioChipVanishes: "GPIO chip vanishes"
        case .gpioChipGoneAtPowerOn: "GPIO chip gone at power-on"
        }
    }
}

/// What the faulty link does at its next reads; shared by every link opened through ``FaultyHat``.
final class SerialFaultPlan: Sendable {
    private struct State {
        var failAfter: Int?
        var failure: SerialError?
        var emptyReads = 0
        var unplugged = false
        var reads = 0
    }

    private let state = Lock(State())

    /// The `reads`-th read from now throws `failure` (and every later one on that link).
    func fail(afterReads reads: Int, with failure: SerialError) {
        state.withLock {
            $0.failAfter = reads
            $0.failure = failure
        }
    }

    /// The next `count` reads find nothing (`EAGAIN`, as the port's read maps it: an empty read).
    func storm(_ count: Int) { state.withLock { $0.emptyReads = count } }

    /// While unplugged, an open fails with `ENOENT`.
    func setUnplugged(_ unplugged: Bool) { state.withLock { $0.unplugged = unplugged } }

    /// Reads seen by any link.
    var reads: Int { state.withLock { $0.reads } }

    func checkOpen(_ path: String) throws(SerialError) {
        if state.withLock({ $0.unplugged }) {
            throw SerialError(FailedCall(call: "open", device: path, errno: .noSuchFileOrDirectory))
        }
    }

    /// Before a read: an error to throw, true for an empty read, false to read.
    func beforeRead() throws(SerialError) -> Bool {
        let (failure, empty) = state.withLock { state -> (SerialError?, Bool) in
            state.reads += 1
            if let after = state.failAfter {
                if after <= 1 { return (state.failure, false) }
                state.failAfter = after - 1
            }
            if state.emptyReads > 0 {
                state.emptyReads -= 1
                return (nil, true)
            }
            return (nil, false)
        }
        if let failure { throw failure }
        return empty
    }

    /// The link was closed: its failure is spent, the next link reads cleanly.
    func clear() {
        state.withLock {
            $0.failAfter = nil
            $0.failure = nil
            $0.emptyReads = 0
        }
    }
}

/// A simulated hat's serial link with ``SerialFaultPlan``'s faults in front of its reads.
final class FaultySerialLink: SerialLink {
    let inner: any SerialLink
    let plan: SerialFaultPlan

    init(_ inner: any SerialLink, plan: SerialFaultPlan) {
        self.inner = inner
        self.plan = plan
    }

    var name: String { inner.name }
    var keepsBytesWhileReaderSleeps: Bool { inner.keepsBytesWhileReaderSleeps }

    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        if try plan.beforeRead() { return [] }
        return try inner.read(maxCount: maxCount, timeout: timeout)
    }

    func read(maxCount: Int, until waker: Waker) throws -> [UInt8] {
        if try plan.beforeRead() { return [] }
        return try inner.read(maxCount: maxCount, until: waker)
    }

    func read(into buffer: inout [UInt8], maxCount: Int, until waker: Waker) throws {
        if try plan.beforeRead() {
            buffer.removeAll(keepingCapacity: true)
            return
        }
        try inner.read(into: &buffer, maxCount: maxCount, until: waker)
    }

    func write(_ bytes: [UInt8]) throws { try inner.write(bytes) }
    func setSpeed(_ speed: Int) throws { try inner.setSpeed(speed) }
    func discardInput() throws { try inner.discardInput() }
    func endReading() { inner.endReading() }

    func close() {
        plan.clear()
        inner.close()
    }
}

/// A simulated hat whose serial opener goes through a ``SerialFaultPlan``.
struct FaultyHat: ReceiverHardware {
    let hat: SimulatedHat
    let plan: SerialFaultPlan
    var board: Board { hat.board }
    var link: HardwareLink { hat.link }
    var clock: any Clock<Duration> { hat.clock }
    func status() -> HardwareStatus { hat.status() }

    var access: HardwareAccess {
        let inner = hat.access
        let plan = plan
        return HardwareAccess(
            gpio: inner.gpio,
            openSerial: { path, speed, rtsCts in
                try plan.checkOpen(path)
                return FaultySerialLink(try inner.openSerial(path, speed, rtsCts), plan: plan)
            },
            openI2C: inner.openI2C)
    }
}

/// One seeded fault: subscribers on a receiver with its first fix, the fault at a random moment, then the
/// checks: every subscriber ends with a typed error naming the fault (a storm ends none), the power ends
/// off (or its failure is reported), and the next subscriber starts cleanly.
struct HardwareFaultSchedule {
    let seed: UInt64
    let kind: HardwareFaultKind
    let clock = ManualClock()
    let gpio = FakeGPIO()
    let plan = SerialFaultPlan()
    let hat: SimulatedHat
    let receiver: Receiver
    let driver: HatDriver
    var random: SeededGenerator
    var log: [String] = []

    init(seed: UInt64) throws {
        self.seed = seed
        var random = SeededGenerator(seed: seed)
        kind = Self.kind(&random)
        var board = try Rig.simulatorBoard()
        board.simulation?.coldStart = .seconds(Int.random(in: 2...6, using: &random))
        self.random = random
        hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: .inProcess, timing: .driven,
                               settings: SimulatedReceiver.Settings(board: board))
        receiver = Receiver(on: FaultyHat(hat: hat, plan: plan))
        driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
    }

    /// The fault a seed's generator draws first.
    static func kind(_ random: inout SeededGenerator) -> HardwareFaultKind {
        HardwareFaultKind.allCases[Int.random(in: 0..<HardwareFaultKind.allCases.count, using: &random)]
    }

    var context: Comment { Comment(rawValue: "seed \(seed), \(kind): " + log.joined(separator: "; ")) }

    var powerLine: FakeOutputLine? {
        hat.board.gpio.enable.flatMap { gpio.output(at: hat.board.gpio.address($0)) }
    }

    var powerIsOn: Bool { powerLine?.level ?? false }

    /// Subscribers of several derived signals, all waiting for the error or the fix.
    func subscribers(_ count: Int) -> [SignalSubscription<Fix>] {
        (0..<count).map { index in
            index % 2 == 0 ? receiver.fixes.subscribe() : receiver.fixes(every: .seconds(1)).subscribe()
        }
    }

    func waitForPosition(_ subscription: SignalSubscription<Fix>) async throws -> Fix {
        try await driver.run {
            for try await fix in subscription where fix.hasPosition { return fix }
            throw CancellationError()
        }
    }

    mutating func run() async throws {
        if kind == .gpioChipGoneAtPowerOn {
            try await failAtPowerOn()
        } else {
            try await failMidStream()
        }
        try await startsCleanly()
        let receiver = receiver
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
    }

    /// The receiver runs for its subscribers; the fault comes after a random number of reads.
    mutating func failMidStream() async throws {
        let subscriptions = subscribers(Int.random(in: 1...3, using: &random))
        _ = try await waitForPosition(subscriptions[0])
        let reads = Int.random(in: 1...40, using: &random)
        let device = hat.devicePath
        log.append("fault after \(reads) reads")
        switch kind {
        case .serialIOError:
            plan.fail(afterReads: reads, with: SerialError(FailedCall(call: "read", device: device, errno: .ioError)))
        case .adapterUnplugged:
            plan.setUnplugged(true)
            plan.fail(afterReads: reads,
                      with: SerialError(FailedCall(call: "read", device: device, errno: .noSuchDevice)))
        case .hangUp:
            plan.fail(afterReads: reads, with: .hangUp(FailedCall(call: "poll", device: device, errno: nil)))
        case .eagainStorm:
            plan.storm(Int.random(in: 1...500, using: &random))
        case .gpioChipVanishes:
            let line = try #require(powerLine, context)
            let call = FailedCall(call: "gpiod_line_request_set_value", device: "gpiochip0", errno: .noSuchDevice)
            line.failNextSets(PowerStrategyRunner.lineOffAttempts, with: .vanished(call))
        case .gpioChipGoneAtPowerOn:
            break
        }
        switch kind {
        case .eagainStorm, .gpioChipVanishes:
            try await runsOnThenStops(subscriptions)
        default:
            try await everyoneGetsTheFault(subscriptions)
            try await driver.run(untilPower: { $0 == .failed }, of: receiver)
            #expect(!powerIsOn, context)
            #expect(hat.receiver.mode == .off, context)
            plan.setUnplugged(false)
        }
    }

    /// Every subscriber ends with `ReceiverError.deviceGone` carrying the injected errno.
    func everyoneGetsTheFault(_ subscriptions: [SignalSubscription<Fix>]) async throws {
        for subscription in subscriptions {
            let error = try await driver.run { await firstError(subscription) }
            guard case .deviceGone(_, let fault)? = error as? ReceiverError else {
                Issue.record("expected deviceGone, got \(String(describing: error)); \(context.rawValue)")
                continue
            }
            let expected: Errno? = switch kind {
            case .serialIOError: .ioError
            case .adapterUnplugged: .noSuchDevice
            default: nil
            }
            #expect(fault.deviceIsGone && fault.failedCall?.errno == expected, context)
        }
        #expect(receiver.statistics.sessionFailures == 1, context)
    }

    /// A fault the session rides out (a storm) or meets only at its power-off (a vanished chip): fixes go
    /// on, then everybody leaves and the power goes off, or its failure is reported.
    func runsOnThenStops(_ subscriptions: [SignalSubscription<Fix>]) async throws {
        let last = try await waitForPosition(subscriptions[0])
        let next = try await driver.run {
            for try await fix in subscriptions[0] where fix.hasPosition && fix.time! > last.time! { return fix }
            throw CancellationError()
        }
        #expect(next.hasPosition, context)
        #expect(receiver.statistics.powerOns == 1 && receiver.statistics.sessionFailures == 0, context)
        for subscription in subscriptions { subscription.cancel() }
        try await driver.run(untilPower: { $0 == .off }, of: receiver)
        if kind == .gpioChipVanishes {
            // The supply could not be switched off, and the statistics say so.
            #expect(receiver.statistics.failedPowerOffs == 1, context)
            let failure = receiver.statistics.powerOffFailure ?? ""
            #expect(failure.contains("ENODEV") || failure.contains("vanished"), Comment(rawValue: failure))
        } else {
            #expect(!powerIsOn, context)
            #expect(receiver.statistics.powerOffFailure == nil, context)
        }
    }

    /// The chip is gone when the first subscriber comes: each subscriber gets the vanished line.
    mutating func failAtPowerOn() async throws {
        let first = subscribers(1)
        _ = try await waitForPosition(first[0])
        first[0].cancel()
        try await driver.run(untilPower: { $0 == .off }, of: receiver)
        let line = try #require(powerLine, context)
        let call = FailedCall(call: "gpiod_line_request_set_value", device: "gpiochip0", errno: .noSuchDevice)
        line.failNextSet(with: .vanished(call))
        let subscriptions = subscribers(Int.random(in: 1...3, using: &random))
        for subscription in subscriptions {
            let error = try await driver.run { await firstError(subscription) }
            guard case .gpio(let role, .vanished)? = error as? ReceiverError else {
                Issue.record("expected a vanished enable line, got \(String(describing: error)); \(context.rawValue)")
                continue
            }
            #expect(role == "enable", context)
        }
        try await driver.run(untilPower: { $0 == .failed }, of: receiver)
        #expect(!powerIsOn, context)
    }

    /// The next subscriber powers the receiver on and gets a fresh fix; after it leaves, the power is off.
    func startsCleanly() async throws {
        let powerOns = receiver.statistics.powerOns
        let before = receiver.fixes.latest?.value.time
        let next = receiver.fixes.subscribe()
        let fix = try await driver.run {
            for try await fix in next where fix.hasPosition {
                if let before, let time = fix.time, time <= before { continue }
                return fix
            }
            throw CancellationError()
        }
        #expect(fix.hasPosition, context)
        #expect(powerIsOn, context)
        #expect(receiver.statistics.powerOns == powerOns + 1, context)
        next.cancel()
        try await driver.run(untilPower: { $0 == .off }, of: receiver)
        #expect(!powerIsOn, context)
        #expect(hat.receiver.mode == .off, context)
    }
}

/// Which seeds HardwareFaultScheduleTests runs: 1 to 200; `FAULT_SEED_COUNT=N` or `FAULT_SEEDS=3,17` to
/// run more or to replay some.
enum HardwareFaultSeeds {
    static let seeds: [UInt64] = {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["FAULT_SEEDS"] { return chosen.split(separator: ",").compactMap { UInt64($0) } }
        let count = environment["FAULT_SEED_COUNT"].flatMap { UInt64($0) } ?? 200
        return count > 0 ? Array(1...count) : []
    }()
}

@Suite("Hardware faults at the seam, seeded", .timeLimit(.minutes(10)))
struct HardwareFaultScheduleTests {
    @Test("200 seeded faults (EIO, EAGAIN storms, unplugged, POLLHUP, a vanished GPIO chip): typed errors, power off")
    func schedules() async throws {
        let seeds = HardwareFaultSeeds.seeds
        var kinds: [String: Int] = [:]
        for seed in seeds {
            var random = SeededGenerator(seed: seed)
            kinds["\(HardwareFaultSchedule.kind(&random))", default: 0] += 1
        }
        #expect(seeds.count < 100 || kinds.count == HardwareFaultKind.allCases.count, "every kind drawn: \(kinds)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = seeds.makeIterator()
            for _ in 0..<4 {
                guard let seed = next.next() else { break }
                group.addTask { var schedule = try HardwareFaultSchedule(seed: seed); try await schedule.run() }
            }
            while try await group.next() != nil {
                guard let seed = next.next() else { continue }
                group.addTask { var schedule = try HardwareFaultSchedule(seed: seed); try await schedule.run() }
            }
        }
    }
}
