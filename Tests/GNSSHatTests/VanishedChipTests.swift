import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// A receiver whose GPIO chip can go away and come back (as gnss_gpio_sim's does when its driver is
/// unbound in the hardware-in-loop rig), on a board with an enable and a reset line: a line requested
/// before the chip went away is dead for good, as a real chip's handle is.
struct VanishingChipRig {
    let clock = ManualClock()
    let gpio = FakeGPIO()
    let chip = GPIOChipPresence()
    let board: Board
    let hat: SimulatedHat
    let receiver: Receiver
    let driver: HatDriver

    init() throws {
        var board = try Rig.simulatorBoard()
        board.gpio.reset = Board.Line(.name("GNSS_RESET_N"), activeLow: true)
        board.simulation?.coldStart = .seconds(2)
        self.board = board
        hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: .pseudoTerminal,
                               timing: .driven, settings: SimulatedReceiver.Settings(board: board))
        receiver = Receiver(on: FaultyHat(hat: hat, seam: SeamMock(), adapter: AdapterSocket(), chip: chip))
        driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
    }

    /// The supply as the enable line last requested drives it.
    var powerIsOn: Bool {
        board.gpio.enable.flatMap { gpio.output(at: board.gpio.address($0)) }?.level ?? false
    }

    /// How many times `line` was requested.
    func requests(of line: Board.Line?) -> Int {
        guard let line else { return 0 }
        return gpio.requests.filter { $0 == board.gpio.address(line) }.count
    }

    /// Subscribes and runs until a fix with a position newer than any before arrives.
    func freshPosition() async throws -> SignalSubscription<Fix> {
        let before = receiver.fixes.latest?.value.time
        let subscription = receiver.fixes.subscribe()
        _ = try await driver.run {
            for try await fix in subscription where fix.hasPosition {
                if let before, let time = fix.time, time <= before { continue }
                return fix
            }
            throw CancellationError()
        }
        return subscription
    }

    /// A session with a fix, then the chip goes away while it is powered and the last subscriber leaves:
    /// the power-off cannot drive the enable line.
    func vanishWhilePowered() async throws {
        let subscription = try await freshPosition()
        chip.setGone(true)
        subscription.cancel()
        try await driver.run(untilPower: { $0 == .off }, of: receiver)
    }

    func shutdown() async {
        let receiver = receiver
        _ = try? await driver.run { await receiver.shutdown() }
        await hat.shutdown()
    }
}

@Suite("A GPIO chip that vanishes and comes back", .timeLimit(.minutes(2)))
struct VanishedChipTests {
    @Test("the chip vanished while powered and came back: every line is requested again, fixes come")
    func nextPowerOnRequestsEveryLineAgain() async throws {
        let rig = try VanishingChipRig()
        try await rig.vanishWhilePowered()
        let statistics = rig.receiver.statistics
        #expect(statistics.failedPowerOffs == 1)
        #expect(statistics.powerOffFailure?.contains("ENODEV") == true, "\(statistics.powerOffFailure ?? "none")")
        rig.chip.setGone(false)
        // The reset line was never driven after the chip went: its dead handle must not be kept.
        let next = try await rig.freshPosition()
        #expect(rig.powerIsOn)
        #expect(rig.requests(of: rig.board.gpio.reset) == 2 && rig.requests(of: rig.board.gpio.enable) == 2)
        #expect(rig.receiver.statistics.failedPowerOns == 0)
        next.cancel()
        try await rig.driver.run(untilPower: { $0 == .off }, of: rig.receiver)
        #expect(!rig.powerIsOn)
        #expect(rig.receiver.statistics.powerOffFailure == nil)
        await rig.shutdown()
    }

    @Test("while the chip is still gone, a subscriber gets the typed error and the power-off failure stands")
    func powerOffFailureStandsWhileTheChipIsGone() async throws {
        let rig = try VanishingChipRig()
        try await rig.vanishWhilePowered()
        let subscription = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(subscription) }
        guard case .gpio(let role, .vanished(let call))? = error as? ReceiverError else {
            Issue.record("expected a vanished line, got \(String(describing: error))")
            await rig.shutdown()
            return
        }
        #expect(role == "enable" && call.errno == .noSuchDevice)
        try await rig.driver.run(untilPower: { $0 == .failed || $0 == .off }, of: rig.receiver)
        // Nothing could switch the supply off since the chip went: the failure is said again.
        let statistics = rig.receiver.statistics
        #expect(statistics.failedPowerOffs == 2)
        #expect(statistics.powerOffFailure?.contains("ENODEV") == true, "\(statistics.powerOffFailure ?? "none")")
        #expect(rig.receiver.hardwarePower.reason.failure != nil, "\(rig.receiver.hardwarePower)")
        rig.chip.setGone(false)
        let next = try await rig.freshPosition()
        next.cancel()
        try await rig.driver.run(untilPower: { $0 == .off }, of: rig.receiver)
        #expect(rig.receiver.statistics.powerOffFailure == nil)
        #expect(!rig.powerIsOn)
        await rig.shutdown()
    }

    @Test("the chip gone while the supply is off: a failed power-on, and no power-off failure")
    func chipGoneWithTheSupplyOff() async throws {
        let rig = try VanishingChipRig()
        let first = try await rig.freshPosition()
        first.cancel()
        try await rig.driver.run(untilPower: { $0 == .off }, of: rig.receiver)
        rig.chip.setGone(true)
        let subscription = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(subscription) }
        guard case .gpio(let role, .vanished)? = error as? ReceiverError else {
            Issue.record("expected a vanished line, got \(String(describing: error))")
            await rig.shutdown()
            return
        }
        // The power-on drives reset first (holding the receiver in reset while its supply comes up).
        #expect(role == "reset")
        try await rig.driver.run(untilPower: { $0 == .failed || $0 == .off }, of: rig.receiver)
        // The enable line was low when the chip went, and stays low: nothing to report.
        #expect(rig.receiver.statistics.failedPowerOffs == 0)
        #expect(rig.receiver.statistics.powerOffFailure == nil)
        #expect(!rig.powerIsOn)
        rig.chip.setGone(false)
        let next = try await rig.freshPosition()
        next.cancel()
        try await rig.driver.run(untilPower: { $0 == .off }, of: rig.receiver)
        await rig.shutdown()
    }
}
