import Foundation
@testable import GNSSHat  // PowerStrategyRunner.lineOffAttempts
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing
import TestSupport

/// The first error a subscription ends with (nil if it ends without one).
func firstError<T: Sendable>(_ subscription: SignalSubscription<T>) async -> (any Error)? {
    do {
        for try await _ in subscription {}
        return nil
    } catch {
        return error
    }
}

@Suite("Receiver end to end through a pseudo-terminal", .timeLimit(.minutes(2)))
struct ReceiverEndToEndTests {
    @Test("subscribe → power on → configuration acknowledged → fixes")
    func subscribeToFixes() async throws {
        let rig = try Rig()
        #expect(rig.receiver.powerState == .off)
        #expect(!rig.powerIsOn)
        let fixes = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(fixes)
        #expect(rig.powerIsOn)
        #expect(rig.receiver.powerState == .on)
        #expect(rig.hat.receiver.commandsReceived.prefix(2) == ["MON-VER poll", "CFG-VALSET"])
        #expect(rig.hat.receiver.sendsNavPVT)
        #expect(rig.hat.receiver.starts == [.cold])
        let latitude = try #require(fix.latitude)
        #expect(abs(latitude - 51.4779) < 0.01)
        let statistics = rig.receiver.statistics
        #expect(statistics.powerOns == 1)
        #expect(statistics.protocolVersion == 27.31)
        #expect(statistics.linkSpeed == 115200)
        let ttff = try #require(statistics.lastTimeToFirstFix)
        #expect(ttff >= .seconds(26) && ttff <= .seconds(29))
        fixes.cancel()
        await rig.shutdown()
    }

    @Test("two subscribers share one power-on")
    func sharedPowerOn() async throws {
        let rig = try Rig()
        let fixes = rig.receiver.fixes.subscribe()
        let sky = rig.receiver.sky.subscribe()
        let messages = rig.receiver.messages.subscribe(buffering: .bounded(10_000))
        _ = try await rig.firstPosition(fixes)
        let view = try await rig.driver.run {
            for try await view in sky where view.satellitesUsed > 0 { return view }
            throw CancellationError()
        }
        #expect(view.satellitesVisible == 12)
        let message = try await rig.driver.run {
            for try await message in messages { return message }
            throw CancellationError()
        }
        _ = message
        #expect(rig.receiver.statistics.powerOns == 1)
        #expect(rig.powerLine?.levels == [false, true])
        #expect(rig.hat.receiver.starts.count == 1)
        #expect(rig.receiver.events.subscriberCount == 3)
        await rig.shutdown()
    }

    @Test("last cancel → power off after the linger; a subscriber inside the linger keeps it on")
    func lingerThenOff() async throws {
        let rig = try Rig()
        let linger = rig.board.power.linger
        let first = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(first)
        first.cancel()
        await rig.receiver.waitForPower { $0 == .lingering }
        await rig.clock.waitForSleepers(1)
        await rig.driver.advance(by: linger - .milliseconds(500))
        #expect(rig.receiver.powerState == .lingering)
        #expect(rig.powerIsOn)
        // A subscriber inside the linger cancels the stop.
        let second = rig.receiver.fixes.subscribe()
        try await rig.runUntil { $0 == .on }
        await rig.driver.advance(by: linger * 2)
        #expect(rig.receiver.powerState == .on)
        #expect(rig.powerIsOn)
        let cancelledAt = rig.clock.now
        second.cancel()
        await rig.receiver.waitForPower { $0 == .lingering }
        try await rig.runUntil { $0 == .off }
        #expect(!rig.powerIsOn)
        #expect(rig.hat.receiver.mode == .off)
        #expect(cancelledAt.duration(to: rig.clock.now) >= linger)
        #expect(rig.powerLine?.levels == [false, true, false])
        #expect(rig.receiver.statistics.powerOns == 1)
        await rig.shutdown()
    }

    @Test("restart: the next subscriber powers on again, configures again, and gets a hot start")
    func restart() async throws {
        let rig = try Rig()
        let first = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(first)
        first.cancel()
        try await rig.runUntil { $0 == .off }
        await rig.driver.advance(by: .seconds(60))
        _ = fix
        let (_, second) = try await rig.freshPosition()
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        #expect(rig.hat.receiver.commandsReceived.filter { $0 == "MON-VER poll" }.count == 2)
        #expect(rig.hat.receiver.sendsNavPVT)
        let statistics = rig.receiver.statistics
        #expect(statistics.powerOns == 2)
        #expect(statistics.timesToFirstFix.count == 2)
        let hot = try #require(statistics.timesToFirstFix[1])
        let cold = try #require(statistics.timesToFirstFix[0])
        #expect(hot < .seconds(3) && hot < cold)
        #expect(rig.powerLine?.levels == [false, true, false, true])
        second.cancel()
        await rig.shutdown()
    }

    @Test("a fix subscriber inside the board's minimum off time: the restart waits for the clock, and the driver moves it")
    func minimumOffTime() async throws {
        var board = try Rig.simulatorBoard()
        board.power.linger = .zero
        board.power.minimumOffTime = .seconds(3)
        let rig = try Rig(board: board)
        let first = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(first)
        first.cancel()
        try await rig.runUntil { $0 == .off }
        let off = rig.clock.now
        // The derived fixes signal starts and waits for the receiver, which waits for the clock:
        // the driver must see a wait for time here, not work in progress (it used to spin).
        let (fix, second) = try await rig.freshPosition()
        #expect(fix.hasPosition)
        #expect(rig.receiver.statistics.powerOns == 2)
        #expect(rig.powerLine?.levels == [false, true, false, true])
        #expect(off.duration(to: rig.clock.now) >= .seconds(3))
        second.cancel()
        await rig.shutdown()
    }

    @Test("a late subscriber gets the latest fix at once, with its age")
    func lateSubscriber() async throws {
        let rig = try Rig()
        let first = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(first)
        await rig.driver.advance(by: .milliseconds(300))
        // No time passes and no epoch comes: the replayed fix is there at once.
        let late = rig.receiver.fixes.subscribe()
        var samples = late.samples.makeAsyncIterator()
        let sample = try #require(try await samples.next())
        #expect(sample.value.time == fix.time || sample.value.time.map { $0 > fix.time! } == true)
        #expect(sample.value.hasPosition)
        #expect(rig.receiver.statistics.powerOns == 1)
        first.cancel()
        late.cancel()
        try await rig.runUntil { $0 == .off }
        // Even with the receiver off, the next subscriber sees the last fix before power-on ends.
        let afterOff = rig.receiver.fixes.subscribe()
        var iterator = afterOff.makeAsyncIterator()
        let replayed = try #require(try await iterator.next())
        #expect(replayed.hasPosition)
        afterOff.cancel()
        await rig.shutdown()
    }

    @Test("the device disappearing mid-stream: a typed error, power off, then a clean start")
    func deviceDisappears() async throws {
        let rig = try Rig()
        let fixes = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(fixes)
        rig.hat.disappear()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .deviceGone(let device, let fault)? = error as? ReceiverError else {
            Issue.record("expected ReceiverError.deviceGone, got \(String(describing: error))")
            return
        }
        #expect(device.hasPrefix("/dev/pts/"))
        #expect(fault.deviceIsGone)
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        #expect(rig.hat.receiver.mode == .off)
        #expect(rig.receiver.statistics.sessionFailures == 1)

        try rig.hat.reappear()
        _ = fix
        let (_, again) = try await rig.freshPosition()
        #expect(rig.powerIsOn)
        #expect(rig.receiver.statistics.powerOns == 2)
        again.cancel()
        await rig.shutdown()
    }

    @Test("a receiver that never answers times out with a clear error and ends powered off")
    func neverAnswers() async throws {
        let rig = try Rig()
        rig.hat.receiver.inject(.silent)
        let fixes = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .noResponse(_, let waited, let speeds)? = error as? ReceiverError else {
            Issue.record("expected ReceiverError.noResponse, got \(String(describing: error))")
            return
        }
        #expect(speeds.first == 115200 && speeds.count == 9)
        #expect(waited >= rig.board.power.upTimeout)
        let text = "\(error!)"
        #expect(text.contains("no valid frame from the receiver on /dev/pts/"))
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        #expect(rig.powerLine?.levels == [false, true, false])
        #expect(rig.receiver.statistics.failedPowerOns == 1)
        await rig.shutdown()
    }

    @Test("a late subscriber of the PPS signal sees time pulses once the receiver tracks")
    func ppsPulses() async throws {
        let rig = try Rig()
        let pulses = rig.receiver.pps.subscribe(buffering: .bounded(100))
        let pulse = try await rig.driver.run {
            for try await pulse in pulses { return pulse }
            throw CancellationError()
        }
        #expect(pulse.edge.kind == .rising)
        // The pulse marks a second with a fix; its NMEA may still be on the way.
        #expect(rig.hat.receiver.fixesSent > 0)
        pulses.cancel()
        await rig.shutdown()
    }
}

@Suite("Receiver configuration and faults", .timeLimit(.minutes(2)))
struct ReceiverConfigurationTests {
    @Test("a refused configuration fails the power-on with the command's name, and powers off")
    func rejected() async throws {
        let rig = try Rig(connection: .inProcess)
        rig.hat.receiver.inject(.rejectConfiguration)
        let fixes = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .configurationRejected(let command, let detail)? = error as? ReceiverError else {
            Issue.record("expected configurationRejected, got \(String(describing: error))")
            return
        }
        #expect(command == "CFG-VALSET" && detail == "UBX-ACK-NAK")
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        await rig.shutdown()
    }

    @Test("an unacknowledged configuration is retried, then fails with the number of attempts")
    func unacknowledged() async throws {
        let rig = try Rig(connection: .inProcess)
        rig.hat.receiver.inject(.ignoreConfiguration)
        let fixes = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .configurationTimedOut(let command, let attempts)? = error as? ReceiverError else {
            Issue.record("expected configurationTimedOut, got \(String(describing: error))")
            return
        }
        #expect(command == "CFG-VALSET" && attempts == 3)
        #expect(rig.hat.receiver.commandsReceived.filter { $0 == "CFG-VALSET" }.count == 3)
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        await rig.shutdown()
    }

    @Test("configuration off: a read-only receiver, NMEA as it comes")
    func readOnly() async throws {
        let rig = try Rig(connection: .inProcess, options: ReceiverOptions(configure: false))
        let fixes = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(fixes)
        #expect(rig.hat.receiver.commandsReceived.isEmpty)
        #expect(!rig.hat.receiver.sendsNavPVT)
        await rig.shutdown()
    }

    @Test("u-blox 8 (protocol 18): CFG-RATE and CFG-MSG instead of CFG-VALSET")
    func ubloxGen8() async throws {
        var board = try Rig.simulatorBoard()
        board.chip = Board.Chip(family: .ubloxGen8, model: "MAX-M8Q")
        let rig = try Rig(board: board, connection: .inProcess)
        let fixes = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(fixes)
        #expect(rig.hat.receiver.commandsReceived == [
            "MON-VER poll", "CFG-RATE", "CFG-MSG NAV-PVT", "CFG-MSG NAV-SAT", "CFG-MSG NAV-TIMEUTC",
        ])
        #expect(rig.receiver.statistics.protocolVersion == 18)
        #expect(rig.hat.receiver.sendsNavPVT)
        await rig.shutdown()
    }

    @Test("the configured period reaches the receiver", arguments: [Duration.milliseconds(500), .seconds(2)])
    func period(_ period: Duration) async throws {
        let rig = try Rig(connection: .inProcess, options: ReceiverOptions(period: period))
        let fixes = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(fixes)
        #expect(rig.hat.receiver.period == period)
        await rig.shutdown()
    }

    @Test("speed detection: a receiver at another speed is found, and the notice says which")
    func speedDetection() async throws {
        let board = try Rig.simulatorBoard()
        let clock = ManualClock()
        let gpio = FakeGPIO()
        let hat = try SimulatedHat(board: board, clock: clock, lines: gpio, connection: .inProcess, timing: .driven,
                                   receiverBaud: 38400)
        let receiver = Receiver(on: hat)
        let driver = HatDriver(hat: hat, clock: clock, receiver: receiver)
        let events = receiver.events.subscribe(buffering: .bounded(100_000))
        let notice = try await driver.run {
            for try await event in events { if case .notice(let text) = event { return text } }
            throw CancellationError()
        }
        #expect(notice.contains("answered at 38400 baud, not the configured 115200"))
        #expect(receiver.statistics.linkSpeed == 38400)
        let fixes = receiver.fixes.subscribe()
        let fix = try await driver.run {
            for try await fix in fixes where fix.hasPosition { return fix }
            throw CancellationError()
        }
        #expect(fix.hasPosition)
        await receiver.shutdown()
        await hat.shutdown()
    }

    @Test("garbage and corrupted frames cost only the frames they hit")
    func garbage() async throws {
        let rig = try Rig(connection: .inProcess)
        let fixes = rig.receiver.fixes.subscribe(buffering: .bounded(1000))
        _ = try await rig.firstPosition(fixes)
        let before = rig.receiver.statistics.fixes
        rig.hat.receiver.inject(.garbage(2000))
        rig.hat.receiver.inject(.corruptFrames(6))
        await rig.driver.advance(by: .seconds(5))
        #expect(rig.receiver.framerStatistics.checksumFailures >= 6)
        #expect(rig.receiver.framerStatistics.bytesDiscarded >= 1000)
        #expect(rig.receiver.statistics.fixes >= before + 4)
        #expect(rig.receiver.powerState == .on)
        await rig.shutdown()
    }

    @Test("a stall stops the output, not the session")
    func stall() async throws {
        let rig = try Rig(connection: .inProcess)
        let fixes = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(fixes)
        rig.hat.receiver.inject(.stall(.seconds(5)))
        let epochs = rig.receiver.statistics.epochs
        await rig.driver.advance(by: .milliseconds(4500))
        #expect(rig.receiver.statistics.epochs == epochs)
        await rig.driver.advance(by: .seconds(3))
        #expect(rig.receiver.statistics.epochs > epochs)
        #expect(rig.receiver.powerState == .on)
        await rig.shutdown()
    }

    @Test("a busy power line reaches the subscriber, nothing is powered, and a later subscriber starts")
    func busyLine() async throws {
        let rig = try Rig(connection: .inProcess)
        let enable = rig.board.gpio.address(try #require(rig.board.gpio.enable))
        rig.gpio.hold(enable, consumer: "gpsd")
        let fixes = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .gpio(let role, .busy(_, _, let consumer))? = error as? ReceiverError else {
            Issue.record("expected a busy GPIO line, got \(String(describing: error))")
            return
        }
        #expect(role == "enable" && consumer == "gpsd")
        #expect("\(error!)".contains("held by \"gpsd\""))
        try await rig.runUntil { $0 == .failed }
        #expect(rig.hat.receiver.mode == .off)
        rig.gpio.free(enable)
        let again = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(again)
        #expect(rig.receiver.statistics.powerOns == 2)
        #expect(rig.powerIsOn)
        await rig.shutdown()
    }

    @Test("a line that fails while switching on: typed error, switched off, requested again later")
    func lineFailure() async throws {
        let rig = try Rig(connection: .inProcess)
        let first = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(first)
        first.cancel()
        try await rig.runUntil { $0 == .off }
        let line = try #require(rig.powerLine)
        let call = FailedCall(call: "gpiod_line_set_value", device: "gpiochip0", errno: .noSuchDevice)
        line.failNextSet(with: .vanished(call))
        let second = rig.receiver.fixes.subscribe()
        let error = try await rig.driver.run { await firstError(second) }
        guard case .gpio(let role, .vanished)? = error as? ReceiverError else {
            Issue.record("expected a vanished GPIO line, got \(String(describing: error))")
            return
        }
        #expect(role == "enable")
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)
        _ = fix
        let (_, third) = try await rig.freshPosition()
        third.cancel()
        #expect(rig.powerIsOn)
        let enable = rig.board.gpio.address(try #require(rig.board.gpio.enable))
        #expect(rig.gpio.requests.filter { $0 == enable }.count == 2)
        await rig.shutdown()
    }

    /// What the fake enable line throws in the power-off tests: an I/O error, not a vanished line.
    static let setFailure = GPIOError.failed(
        FailedCall(call: "gpiod_line_set_value", device: "gpiochip0", errno: .ioError))

    /// A rig whose receiver is on for `first` (a fix with a position came), and its enable line.
    func poweredWithEnableLine() async throws -> (Rig, SignalSubscription<Fix>, FakeOutputLine) {
        let rig = try Rig(connection: .inProcess)
        let first = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(first)
        return (rig, first, try #require(rig.powerLine))
    }

    @Test("a power-off whose line set fails once tries again: the supply ends off, nothing is reported")
    func powerOffRetry() async throws {
        let (rig, first, line) = try await poweredWithEnableLine()
        line.failNextSet(with: Self.setFailure)
        first.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(!rig.powerIsOn)
        #expect(line.levels == [false, true, false], "one power-on, one power-off that got through")
        #expect(rig.receiver.statistics.failedPowerOffs == 0)
        #expect(rig.receiver.statistics.powerOffFailure == nil)
        await rig.shutdown()
    }

    @Test("a subscriber arriving while a power-off pauses before its retry waits for it: time moves on, it powers on")
    func subscriberDuringPowerOffRetry() async throws {
        let (rig, first, line) = try await poweredWithEnableLine()
        line.failNextSet(with: Self.setFailure)
        first.cancel()
        try await rig.runUntil { $0 == .poweringOff }
        // The power-off's set has failed (or is about to) and it pauses on the manual clock; a
        // derived signal starting now must count as waiting, or the driver never moves time.
        let (_, second) = try await rig.freshPosition()
        #expect(rig.powerIsOn)
        #expect(line.levels == [false, true, false, true], "on, off on the retry, on again")
        second.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(!rig.powerIsOn)
        await rig.shutdown()
    }

    @Test("a power-off whose line keeps failing says so, and the next power-off switches the supply off")
    func powerOffFailure() async throws {
        let (rig, first, line) = try await poweredWithEnableLine()
        line.failNextSets(PowerStrategyRunner.lineOffAttempts, with: Self.setFailure)
        first.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(rig.powerIsOn, "every try failed: the line is still on, and the statistics must say so")
        let statistics = rig.receiver.statistics
        #expect(statistics.failedPowerOffs == 1)
        let failure = try #require(statistics.powerOffFailure)
        #expect(failure.hasPrefix("power-off: gpio-enable: the enable line"), "\(failure)")
        #expect(failure.hasSuffix("(tried \(PowerStrategyRunner.lineOffAttempts) times)"), "\(failure)")
        #expect(statistics.lastFailure == failure)

        let (_, second) = try await rig.freshPosition()
        second.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(!rig.powerIsOn)
        #expect(rig.receiver.statistics.failedPowerOffs == 1)
        #expect(rig.receiver.statistics.powerOffFailure == nil)
        await rig.shutdown()
    }

    @Test("a backup command that cannot be sent is recorded, but the enable line cut the supply: power-off done")
    func softwareActionFailsAfterSupplyCut() async throws {
        var board = try Rig.simulatorBoard()
        board.power.strategies = [.gpioEnable, .ubloxBackup]
        let rig = try Rig(board: board, connection: .inProcess)
        let first = rig.receiver.fixes.subscribe()
        _ = try await rig.firstPosition(first)
        rig.hat.disappear()
        _ = try await rig.driver.run { await firstError(first) }
        try await rig.runUntil { $0 == .failed || $0 == .off }
        #expect(!rig.powerIsOn)
        let statistics = rig.receiver.statistics
        #expect(statistics.lastFailure?.contains("power-off: ublox-backup:") == true, "\(statistics)")
        #expect(statistics.powerOffFailure == nil)
        #expect(statistics.failedPowerOffs == 0)
        await rig.shutdown()
    }
}

@Suite("Replaying a capture", .timeLimit(.minutes(2)))
struct ReplayTests {
    @Test("a u-blox 8 capture from gpsd's regression tests, played back through the receiver")
    func replay() async throws {
        let capture = try [UInt8](Data(contentsOf: TestPaths.corpus().appendingPathComponent("gpsd/ublox-8.log")))
        var board = try Rig.simulatorBoard()
        board.chip = Board.Chip(family: .ubloxGen8, model: "NEO-M8")
        let options = ReceiverOptions(configure: false)
        let rig = try Rig(board: board, connection: .inProcess, options: options) { settings in
            settings.replay = SimulatedReceiver.Replay(bytes: capture, bytesPerSecond: 11_520)
        }
        let fixes = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(fixes)
        #expect(fix.hasPosition)
        #expect(rig.hat.receiver.fixesSent == 0, "the fixes come from the capture, not the trajectory")
        await rig.shutdown()
    }
}
