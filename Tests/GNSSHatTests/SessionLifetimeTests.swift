@testable import GNSSHat  // Receiver.session: the HardwareSession that owns the PPS thread
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import PiHardware
import Signals
import Testing

/// GPIO lines that carry a marker: a simulated hat and its receiver's session both hold them
/// (the hat through its wired lines, the session through its hardware access and its power
/// lines), so the marker goes only once both are gone.
final class MarkedLines: GPIOLines {
    let inner: FakeGPIO
    let marker: ReleaseWatch.Marker

    init(inner: FakeGPIO, marker: ReleaseWatch.Marker) {
        self.inner = inner
        self.marker = marker
    }

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        try inner.output(address, initiallyActive: initiallyActive, activeLow: activeLow)
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        try inner.edges(address, edges, activeLow: activeLow, bias: bias)
    }
}

/// A receiver's hardware session (its PPS thread with it), its hat and the transports' threads
/// are released once the receiver is done with them, whichever way its sessions ended. Each
/// scenario runs several times, on a manual clock driven by a `HatDriver`.
///
/// The time limit is what fails a leak (the wait for the last release never ends); it is generous
/// because the whole suite takes 4 s alone but 30 s under ThreadSanitizer beside the other suites
/// on two cores, and over a minute (one CI run) on a machine also busy with other work.
@Suite("Session lifetime", .timeLimit(.minutes(5)))
struct SessionLifetimeTests {
    enum Scenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// In-process link: power on, fixes and PPS pulses, cancel, off after the linger.
        case fixesAndPulses
        /// The same through a pseudo-terminal (the hat's reader thread, the serial port's waker).
        case pseudoTerminal
        /// The hat disappears mid-stream: the link fails and the session stops.
        case deviceGone
        /// The enable line is held by another program: the power-on fails at once.
        case busyLine
        /// A silent receiver: every speed is tried, then the power-on fails.
        case neverAnswers
        /// A u-blox DDC port that never answers: polled on its transfer thread, then the
        /// power-on fails.
        case ddcNeverAnswers
        /// Through a pseudo-terminal, powered off after the linger, then the receiver and the hat
        /// are simply dropped, without `shutdown()` (the hat's reader still waits for the host).
        case droppedWithoutShutdown

        var testDescription: String { rawValue }
    }

    /// What one cycle made, by weak reference.
    struct Survivors {
        weak let session: HardwareSession?
        weak let receiver: Receiver?
        weak let hat: SimulatedHat?
    }

    static let cycles = 8

    @Test("sessions, receivers and hats are released after they are done", arguments: Scenario.allCases)
    func released(_ scenario: Scenario) async throws {
        let watch = ReleaseWatch()
        var survivors: [Survivors] = []
        for _ in 0..<Self.cycles {
            survivors.append(try await Self.cycle(scenario, watch))
        }
        // Tasks and threads that ran the last steps may still be finishing; they let go when
        // they end. A leak keeps this waiting until the time limit cancels it.
        await watch.waitUntilAllReleased()
        let sessions = survivors.count { $0.session != nil }
        let receivers = survivors.count { $0.receiver != nil }
        let hats = survivors.count { $0.hat != nil }
        #expect(watch.made == Self.cycles)
        #expect(sessions == 0, "sessions still alive after \(Self.cycles) cycles")
        #expect(receivers == 0, "receivers still alive after \(Self.cycles) cycles")
        #expect(hats == 0, "hats still alive after \(Self.cycles) cycles")
    }

    /// One receiver on one hat through `scenario`; returns weak references to what it made.
    static func cycle(_ scenario: Scenario, _ watch: ReleaseWatch) async throws -> Survivors {
        let clock = ManualClock()
        var board = try #require(try BoardCatalog.builtIn("simulator"))
        board.power.linger = .seconds(1)
        let gpio = FakeGPIO()
        let lines = MarkedLines(inner: gpio, marker: watch.marker("lines"))
        let terminal = scenario == .pseudoTerminal || scenario == .droppedWithoutShutdown
        let hat = try SimulatedHat(board: board, clock: clock, lines: lines,
                                   connection: terminal ? .pseudoTerminal : .inProcess, timing: .driven)
        let receiver: Receiver
        if scenario == .ddcNeverAnswers {
            var ddcBoard = board
            ddcBoard.link = .i2c(Board.I2C(bus: 1, address: 0x42))
            var access = hat.access
            let bus = FakeUBloxI2C()
            access.openI2C = { _ in bus }
            receiver = Receiver(on: try BoardHardware(board: ddcBoard, access: access, clock: clock),
                                options: ReceiverOptions(configure: false))
        } else {
            receiver = Receiver(on: hat)
        }
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let enable = board.gpio.address(try #require(board.gpio.enable))
        if scenario == .busyLine { gpio.hold(enable, consumer: "gpsd") }
        if scenario == .neverAnswers { hat.receiver.inject(.silent) }
        let fixes = receiver.fixes.subscribe()
        switch scenario {
        case .fixesAndPulses, .pseudoTerminal, .droppedWithoutShutdown:
            let pulses = receiver.pps.subscribe(buffering: .bounded(100))
            _ = try await driver.run {
                for try await fix in fixes where fix.hasPosition { return fix }
                throw CancellationError()
            }
            _ = try await driver.run {
                for try await pulse in pulses { return pulse }
                throw CancellationError()
            }
            fixes.cancel()
            pulses.cancel()
            try await driver.run(untilPower: { $0 == .off }, of: receiver)
        case .deviceGone:
            _ = try await driver.run {
                for try await fix in fixes where fix.hasPosition { return fix }
                throw CancellationError()
            }
            hat.disappear()
            let error = try await driver.run { await firstError(fixes) }
            #expect((error as? ReceiverError).map { if case .deviceGone = $0 { true } else { false } } == true)
        case .busyLine:
            let error = try await driver.run { await firstError(fixes) }
            #expect((error as? ReceiverError).map { if case .gpio = $0 { true } else { false } } == true)
        case .neverAnswers, .ddcNeverAnswers:
            let error = try await driver.run { await firstError(fixes) }
            #expect((error as? ReceiverError).map { if case .noResponse = $0 { true } else { false } } == true)
        }
        if scenario != .droppedWithoutShutdown {
            try await driver.run(untilPower: { !$0.isPowered }, of: receiver)
            _ = try? await driver.run { await receiver.shutdown() }
            await hat.shutdown()
        }
        #expect(!(gpio.output(at: enable)?.level ?? false), "the supply is off")
        return Survivors(session: receiver.session, receiver: receiver, hat: hat)
    }
}
