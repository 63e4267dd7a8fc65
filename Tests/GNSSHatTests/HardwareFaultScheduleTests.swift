import Foundation
@testable import GNSSHat  // DDCTransport, ReceiverClock
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// A fault at the hardware seam: a serial port's calls fail through LinuxSystem's seam (the real
/// `SerialPort` on the simulated hat's pseudo-terminal, its errno mapped by PiHardware), the terminal's
/// far side closes (a real `POLLHUP`), or the GPIO chip goes away (its requests and sets fail with `ENODEV`).
enum HardwareFaultKind: CaseIterable, CustomStringConvertible {
    /// `read` fails with `EIO` in the middle of an epoch.
    case serialIOError
    /// The USB adapter is unplugged: `read` fails with `ENODEV`; it is plugged back before the next subscriber.
    case adapterUnplugged
    /// The far side hangs up (the hat's terminal closes): `poll` reports `POLLHUP` with no data.
    case hangUp
    /// A storm of `read`s failing with `EAGAIN` (the port had nothing after all): no fault, the session goes on.
    case eagainStorm
    /// The GPIO chip vanishes while the receiver runs: its power-off cannot drive the enable line
    /// (`ENODEV`), which is reported.
    case gpioChipVanishes
    /// The GPIO chip is gone when a power-on comes: the enable line cannot be driven (`ENODEV`).
    case gpioChipGoneAtPowerOn

    var description: String {
        switch self {
        case .serialIOError: "read EIO"
        case .adapterUnplugged: "adapter unplugged (read ENODEV)"
        case .hangUp: "POLLHUP"
        case .eagainStorm: "EAGAIN storm"
        case .gpioChipVanishes: "GPIO chip vanishes"
        case .gpioChipGoneAtPowerOn: "GPIO chip gone at power-on"
        }
    }
}

/// A simulated hat whose serial ports are opened under a seam mock: the port keeps it, so the failures a
/// test injects reach its reads on the transport's thread.
struct FaultyHat: ReceiverHardware {
    let hat: SimulatedHat
    let seam: SeamMock
    /// While the adapter is out, each open of the port fails in the seam with `ENOENT`.
    let adapter: AdapterSocket
    /// While the chip is gone, its lines fail with `ENODEV`.
    let chip: GPIOChipPresence
    var board: Board { hat.board }
    var link: HardwareLink { hat.link }
    var clock: any Clock<Duration> { hat.clock }
    func status() -> HardwareStatus { hat.status() }

    var access: HardwareAccess {
        let inner = hat.access
        let seam = seam
        let adapter = adapter
        return HardwareAccess(
            gpio: VanishingGPIO(inner: inner.gpio, chip: chip),
            openSerial: { path, speed, rtsCts in
                if adapter.isUnplugged { seam.fail("open", with: .noSuchFileOrDirectory) }
                return try SeamMock.$current.withValue(seam) { try inner.openSerial(path, speed, rtsCts) }
            },
            openI2C: inner.openI2C)
    }
}

/// Whether the GPIO chip is there. As with a real chip, a line requested before the chip went away is
/// dead for good: it keeps failing after the chip is back (the kernel's handle belongs to the removed
/// chip), and only a new request reaches the chip that came back.
final class GPIOChipPresence: Sendable {
    private struct State {
        var gone = false
        /// How many times the chip went away: the lines of an earlier generation are dead.
        var generation = 0
    }
    private let state = Lock(State())
    var isGone: Bool { state.withLock { $0.gone } }
    var generation: Int { state.withLock { $0.generation } }
    func setGone(_ value: Bool) {
        state.withLock { state in
            if value && !state.gone { state.generation += 1 }
            state.gone = value
        }
    }

    /// What libgpiod reports for a call on a chip that went away (`ENODEV`), as PiHardware types it:
    /// while the chip is gone, or for a line requested from an earlier generation of it.
    func check(_ call: String, requestedIn generation: Int? = nil) throws(GPIOError) {
        let dead = state.withLock { state in state.gone || generation.map { $0 != state.generation } == true }
        if dead { throw .vanished(FailedCall(call: call, device: "gpiochip0", errno: .noSuchDevice)) }
    }
}

/// GPIO lines whose chip can vanish: while it is gone, requests and sets fail with `ENODEV`.
struct VanishingGPIO: GPIOLines {
    let inner: any GPIOLines
    let chip: GPIOChipPresence

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        try chip.check("gpiod_chip_request_lines")
        return VanishingOutputLine(
            inner: try inner.output(address, initiallyActive: initiallyActive, activeLow: activeLow), chip: chip)
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        try chip.check("gpiod_chip_request_lines")
        return try inner.edges(address, edges, activeLow: activeLow, bias: bias)
    }
}

/// An output line on a chip that can vanish: dead once its chip went away, even after the chip is back.
final class VanishingOutputLine: OutputLine {
    let inner: any OutputLine
    let chip: GPIOChipPresence
    let generation: Int
    init(inner: any OutputLine, chip: GPIOChipPresence) {
        self.inner = inner
        self.chip = chip
        generation = chip.generation
    }
    var name: String { inner.name }
    func setActive(_ active: Bool) throws {
        try chip.check("gpiod_line_request_set_value", requestedIn: generation)
        try inner.setActive(active)
    }
    func isActive() throws -> Bool {
        try chip.check("gpiod_line_request_get_value", requestedIn: generation)
        return try inner.isActive()
    }
}

/// Whether the USB adapter is plugged in.
final class AdapterSocket: Sendable {
    private let unplugged = Lock(false)
    var isUnplugged: Bool { unplugged.withLock { $0 } }
    func setUnplugged(_ value: Bool) { unplugged.withLock { $0 = value } }
}

/// One seeded fault: subscribers on a receiver with its first fix, the fault at a random moment, then the
/// checks: every subscriber ends with a typed error naming the fault (a storm ends none), the power ends
/// off (or its failure is reported), and the next subscriber starts cleanly.
struct HardwareFaultSchedule {
    let seed: UInt64
    let kind: HardwareFaultKind
    let clock = ManualClock()
    let gpio = FakeGPIO()
    let seam = SeamMock()
    let adapter = AdapterSocket()
    let chip = GPIOChipPresence()
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
        hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: .pseudoTerminal,
                               timing: .driven, settings: SimulatedReceiver.Settings(board: board))
        receiver = Receiver(on: FaultyHat(hat: hat, seam: seam, adapter: adapter, chip: chip))
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

    /// Runs the schedule; a step that throws (a wait that never ends) is an issue naming the seed.
    mutating func run() async {
        do {
            if kind == .gpioChipGoneAtPowerOn {
                try await failAtPowerOn()
            } else {
                try await failMidStream()
            }
            try await startsCleanly()
        } catch {
            Issue.record(Comment(rawValue: "\(error); power \(receiver.powerState), last failure "
                + "\(receiver.statistics.lastFailure ?? "none"); \(context.rawValue)"))
        }
        let receiver = receiver
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
    }

    /// The receiver runs for its subscribers; the fault comes at a random moment after the first fix
    /// (the next read after it, wherever the epoch is).
    mutating func failMidStream() async throws {
        let subscriptions = subscribers(Int.random(in: 1...3, using: &random))
        _ = try await waitForPosition(subscriptions[0])
        let moment = Duration.milliseconds(Int.random(in: 0..<3000, using: &random))
        log.append("fault \(moment) after the first fix")
        await driver.advance(by: moment)
        switch kind {
        case .serialIOError:
            seam.fail("read", with: .ioError)
        case .adapterUnplugged:
            adapter.setUnplugged(true)
            seam.fail("read", with: .noSuchDevice)
        case .hangUp:
            hat.disappear()
        case .eagainStorm:
            seam.fail("read", with: .wouldBlock, times: Int.random(in: 1...500, using: &random))
        case .gpioChipVanishes:
            chip.setGone(true)
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
            if kind == .hangUp { try hat.reappear() }
            if kind == .adapterUnplugged { try await staysUnplugged() }
        }
        #expect(seam.pendingFailures == 0, context)
    }

    /// While the adapter is still out, subscribers find no device (`open`: `ENOENT`): each gets the typed
    /// error (one that comes after a failed power-on starts another, which fails too), and the power goes
    /// off again. Then it is plugged back.
    mutating func staysUnplugged() async throws {
        let subscriptions = subscribers(Int.random(in: 1...3, using: &random))
        for subscription in subscriptions {
            let error = try await driver.run { await firstError(subscription) }
            guard case .link(_, let fault)? = error as? ReceiverError, case .notFound? = fault as? SerialError else {
                Issue.record("expected a link not found, got \(String(describing: error)); \(context.rawValue)")
                continue
            }
            #expect(fault.failedCall?.errno == .noSuchFileOrDirectory, context)
        }
        try await driver.run(untilPower: { $0 == .failed }, of: receiver)
        #expect(!powerIsOn, context)
        adapter.setUnplugged(false)
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
            #expect(failure.contains("ENODEV"), Comment(rawValue: "\(failure); \(context.rawValue)"))
            chip.setGone(false)
        } else {
            #expect(!powerIsOn, context)
            #expect(receiver.statistics.powerOffFailure == nil, context)
        }
    }

    /// The chip is gone when the next subscribers come (after a first session): each gets the vanished line
    /// (one that comes after a failed power-on starts another, which fails too). Then it is back.
    mutating func failAtPowerOn() async throws {
        let first = subscribers(1)
        _ = try await waitForPosition(first[0])
        first[0].cancel()
        try await driver.run(untilPower: { $0 == .off }, of: receiver)
        chip.setGone(true)
        let subscriptions = subscribers(Int.random(in: 1...3, using: &random))
        log.append("\(subscriptions.count) subscribers")
        for subscription in subscriptions {
            let error = try await driver.run { await firstError(subscription) }
            guard case .gpio(let role, .vanished(let call))? = error as? ReceiverError else {
                Issue.record("expected a vanished enable line, got \(String(describing: error)); \(context.rawValue)")
                continue
            }
            #expect(role == "enable" && call.errno == .noSuchDevice, context)
        }
        try await driver.run(untilPower: { $0 == .failed }, of: receiver)
        #expect(!powerIsOn, context)
        chip.setGone(false)
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
    @Test("200 seeded faults (EIO, EAGAIN storms, ENODEV, POLLHUP, a vanished GPIO chip): typed errors, power off")
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
                group.addTask { var schedule = try HardwareFaultSchedule(seed: seed); await schedule.run() }
            }
            while try await group.next() != nil {
                guard let seed = next.next() else { continue }
                group.addTask { var schedule = try HardwareFaultSchedule(seed: seed); await schedule.run() }
            }
        }
    }
}

/// One seeded burst of I2C failures (`EREMOTEIO`: the Pi's controller saw a NAK; `ETIMEDOUT`: clock
/// stretching past its limit) at the DDC transport, after a random number of good polls: a burst the
/// transport tolerates costs no byte; a longer one is one failure naming the errno, and polling stops.
struct I2CBurstSchedule {
    let seed: UInt64
    let errno: Errno
    let burst: Int
    let cleanPolls: Int

    init(seed: UInt64) {
        self.seed = seed
        var random = SeededGenerator(seed: seed)
        errno = Bool.random(using: &random) ? .remoteIO : .timedOut
        burst = Int.random(in: 1...(DDCTransport.failuresTolerated + 3), using: &random)
        cleanPolls = Int.random(in: 0...5, using: &random)
    }

    var context: Comment { Comment(rawValue: "seed \(seed): \(burst) × \(errno) after \(cleanPolls) good polls") }

    func run() async throws {
        let clock = ManualClock()
        let bus = FakeUBloxI2C()
        let transport = DDCTransport(port: UBloxDDC(bus: bus), period: .seconds(1), clock: ReceiverClock(clock))
        let delivered = Delivered()
        let frame = UBX.poll(.navPVT)
        bus.enqueue(frame)
        transport.start(onBytes: { delivered.add($0); return .none }, onFailure: { delivered.fail($0) })
        await clock.waitForSleepers(1)
        for _ in 0..<cleanPolls {
            bus.enqueue(frame)
            try await poll(clock)
        }
        for _ in 0..<burst { bus.inject(.fail(errno)) }
        bus.enqueue(frame)
        let fails = burst > DDCTransport.failuresTolerated
        for index in 1...min(burst, DDCTransport.failuresTolerated + 1) {
            let next = try #require(clock.nextDeadline, context)
            clock.advance(to: next)
            if fails && index == DDCTransport.failuresTolerated + 1 {
                await delivered.waitForFailure()
            } else {
                await clock.waitForSleepers(1)
            }
        }
        if fails {
            let name = errno == .remoteIO ? "EREMOTEIO" : "ETIMEDOUT"
            #expect(delivered.failure?.contains(name) == true, context)
            let transfers = bus.transfers.count
            clock.advance(by: .seconds(3600))
            #expect(bus.transfers.count == transfers, "no polling after the failure; \(context.rawValue)")
            #expect(delivered.bytes.count == (cleanPolls + 1) * frame.count, context)
        } else {
            // The poll after the burst reads the frame that waited behind it.
            try await poll(clock)
            await delivered.waitForBytes((cleanPolls + 2) * frame.count)
            #expect(delivered.failure == nil, context)
            #expect(delivered.bytes == Array([[UInt8]](repeating: frame, count: cleanPolls + 2).joined()), context)
        }
        await transport.close()
    }

    private func poll(_ clock: ManualClock) async throws {
        let next = try #require(clock.nextDeadline, context)
        clock.advance(to: next)
        await clock.waitForSleepers(1)
    }
}

extension HardwareFaultScheduleTests {
    @Test("200 seeded I2C EREMOTEIO/ETIMEDOUT bursts at the DDC transport: tolerated, or one typed failure")
    func i2cBursts() async throws {
        for seed in HardwareFaultSeeds.seeds {
            try await I2CBurstSchedule(seed: seed).run()
        }
    }
}
