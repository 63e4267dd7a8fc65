import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import Signals
import Testing

/// A span of time the receiver was powered: from its power-on to its power-off (nil: still on).
struct PoweredInterval: Equatable, CustomStringConvertible {
    var start: Duration
    var end: Duration?

    /// The intervals the Receiver reported: from each `powering on` to the next state that is not powered.
    static func reported(_ changes: [HardwarePowerChange]) -> [PoweredInterval] {
        intervals(changes.map { ($0.at, $0.power.isPowered) })
    }

    /// The intervals the simulated receiver itself had: from each mode out of `off` to the next `off`.
    static func simulated(_ changes: [SimulatedReceiver.ModeChange]) -> [PoweredInterval] {
        intervals(changes.map { ($0.at, $0.mode != .off) })
    }

    private static func intervals(_ levels: [(at: Duration, powered: Bool)]) -> [PoweredInterval] {
        var result: [PoweredInterval] = []
        for (at, powered) in levels {
            let open = result.last.map { $0.end == nil } ?? false
            if powered && !open { result.append(PoweredInterval(start: at, end: nil)) }
            if !powered && open { result[result.count - 1].end = at }
        }
        return result
    }

    var description: String {
        "\(Self.seconds(start))-\(end.map(Self.seconds) ?? "on")"
    }

    /// Seconds with three decimals, for a test's messages.
    static func seconds(_ duration: Duration) -> String {
        let (whole, atto) = duration.components
        let milli = atto / 1_000_000_000_000_000
        return "\(whole).\(milli < 100 ? "0" : "")\(milli < 10 ? "0" : "")\(milli)"
    }
}

extension Rig {
    /// Shuts the rig down and returns every change of `changes` (a sequence the receiver ends then).
    func shutdown(collecting changes: AsyncStream<HardwarePowerChange>) async -> [HardwarePowerChange] {
        await shutdown()
        var all: [HardwarePowerChange] = []
        for await change in changes { all.append(change) }
        return all
    }

    /// Moves time until the hardware's power satisfies `condition`; returns that change.
    @discardableResult
    func runUntilHardware(
        limit: Duration = .seconds(900), _ condition: @escaping @Sendable (HardwarePowerChange) -> Bool
    ) async throws -> HardwarePowerChange {
        let receiver = receiver
        return try await driver.run(limit: limit) {
            guard let change = await receiver.waitForHardwarePower(condition) else { throw CancellationError() }
            return change
        }
    }
}

@Suite("The hardware's power, as reported against the simulated hat's own record", .timeLimit(.minutes(3)))
struct HardwarePowerTests {
    @Test("an hour of simulator-cut-supply at a fix every 600 s: every powered interval reported is the hat's own")
    func dutyCycleHour() async throws {
        let board = try #require(try BoardCatalog.builtIn("simulator-cut-supply"))
        // As `gnss-hat watch --every 600` runs it: with a state directory, so each start after a cut is aided.
        let rig = try Rig(
            board: board, connection: .inProcess,
            options: ReceiverOptions(stateDirectory: try temporaryStateDirectory(), aidingTime: .synchronised()))
        let changes = rig.receiver.hardwarePowerChanges()
        let fixes = rig.receiver.fixes(every: .seconds(600)).subscribe()

        await rig.driver.advance(by: .seconds(300))
        // Between two fixes: the signal serves its subscriber; the hardware is off, and says why.
        #expect(rig.receiver.powerState == .on)
        #expect(rig.receiver.hardwarePower.power == .off && rig.receiver.hardwarePower.reason == .dutyCycleSleep)
        #expect(rig.hat.receiver.mode == .off && !rig.powerIsOn)
        // To 3550 s: past the fix due at 3000 s and before the wake for 3600 s (a few seconds ahead of it, by
        // the starts measured), so that no power cycle is in progress when the counts are read.
        await rig.driver.advance(by: .seconds(3250))
        let powerOns = rig.receiver.statistics.powerOns
        let dutyCycles = rig.receiver.powerPlan.statistics.dutyCycles
        fixes.cancel()
        let reported = await rig.shutdown(collecting: changes)

        let ours = PoweredInterval.reported(reported)
        let hats = PoweredInterval.simulated(rig.hat.receiver.modeChanges)
        print("duty cycle hour: reported \(ours.count) powered intervals \(ours); the hat's record \(hats)")
        // A fix is due at 0, 600, ..., 3000 s: six power-ons.
        #expect(ours.count == 6, "\(ours)")
        #expect(ours.count == hats.count && ours.count == powerOns && ours.count == dutyCycles,
                "\(ours.count) reported, \(hats.count) the hat's, \(powerOns) power-ons, \(dutyCycles) duty cycles")
        // The same instants: the manual clock does not move within a power sequence's line changes.
        #expect(ours == hats, "reported \(ours), the hat had \(hats)")
        // Each power cycle in order, a duty cycle's wake and sleep; the shutdown finds the hardware off, and
        // says that no wake follows.
        let cycle: [HardwarePower] = [.poweringOn, .on, .poweringOff, .off]
        #expect(reported.first == HardwarePowerChange(power: .off, reason: .initial, at: .zero))
        #expect(reported.last.map { $0.power == .off && [.shutdown, .lingerEnded].contains($0.reason) } == true,
                "\(reported)")
        #expect(Array(reported.dropFirst().dropLast().map(\.power))
                    == Array(repeating: cycle, count: ours.count).flatMap { $0 })
        let wakes = reported.filter { $0.power == .poweringOn }
        #expect(wakes.allSatisfy { $0.reason == .dutyCycleWake }, "\(wakes)")
        let sleeps = reported.dropLast().filter { $0.power == .off && $0.reason != .initial }
        #expect(sleeps.count == 6 && sleeps.allSatisfy { $0.reason == .dutyCycleSleep }, "\(sleeps)")
    }

    @Test("the last subscriber leaving between a duty cycle's fixes: the hardware, off already, says the linger ended")
    func lastSubscriberLeavesDuringADutyCycleSleep() async throws {
        let rig = try Rig(connection: .inProcess)
        let changes = rig.receiver.hardwarePowerChanges()
        let fixes = rig.receiver.fixes(every: .seconds(600)).subscribe()
        await rig.driver.advance(by: .seconds(300))
        #expect(rig.receiver.hardwarePower.power == .off && rig.receiver.hardwarePower.reason == .dutyCycleSleep)
        let powerOns = rig.receiver.statistics.powerOns
        fixes.cancel()
        // Past the linger, and well before the fix that was due at 600 s.
        try await rig.runUntil { $0 == .off }
        await rig.driver.advance(by: .seconds(30))
        // Off as before, no wake to come, and the change says so (the MQTT power topic publishes it: it
        // went on saying "duty cycle sleep" with nobody there).
        let now = rig.receiver.hardwarePower
        #expect(now.power == .off && now.reason == .lingerEnded, "\(now)")
        #expect(rig.receiver.statistics.powerOns == powerOns && !rig.powerIsOn && rig.hat.receiver.mode == .off)
        let reported = await rig.shutdown(collecting: changes)
        let after = reported.drop { $0.reason != .dutyCycleSleep || $0.power != .off }
        #expect(after.map(\.reason) == [.dutyCycleSleep, .lingerEnded], "\(reported)")
    }

    @Test("the receiver's own power save: reported when it takes it and when it leaves it; the supply never drops")
    func powerSave() async throws {
        let rig = try Rig(connection: .inProcess)
        let changes = rig.receiver.hardwarePowerChanges()
        // A fix every 4 s is too often for a duty cycle: the receiver's own power save.
        let scheduled = rig.receiver.fixes(every: .seconds(4)).subscribe()
        let entered = try await rig.runUntilHardware { $0.power == .powerSave }
        #expect(entered.reason == .demand)
        #expect(rig.hat.receiver.powerSaveInterval != nil)
        await rig.driver.advance(by: .seconds(60))
        #expect(rig.receiver.hardwarePower.power == .powerSave && rig.hat.receiver.mode == .powerSave)
        // A continuous subscriber: the receiver leaves its power save and tracks.
        let (_, continuous) = try await rig.freshPosition()
        #expect(rig.receiver.hardwarePower.power == .on)
        // The scheduled subscriber leaves first, and the receiver settles on a continuous demand before the
        // other leaves: with both leaving at once, the demand left for a moment may be the fix every 4 s, and the
        // receiver would rightly take its power save again before the linger.
        scheduled.cancel()
        await rig.driver.advance(by: .seconds(1))
        continuous.cancel()
        try await rig.runUntil { $0 == .off }
        let reported = await rig.shutdown(collecting: changes)

        #expect(reported.map(\.power) == [.off, .poweringOn, .on, .powerSave, .on, .poweringOff, .off])
        #expect(reported.map(\.reason) == [.initial, .demand, .demand, .demand, .demand, .lingerEnded, .lingerEnded])
        let record = rig.hat.receiver.modeChanges
        print("power save: reported \(reported.map(\.description)); the hat's record \(record)")
        // Powered once, for as long as reported.
        #expect(PoweredInterval.reported(reported) == PoweredInterval.simulated(record))
        // The receiver saves power from its first fix after it took the commands, until it is told to stop.
        let saving = try #require(record.firstIndex { $0.mode == .powerSave })
        #expect(record[saving].at >= reported[3].at)
        // It tracks as it reads the command; the session reports `on` once the receiver acknowledged it, which
        // the simulated receiver does at once or with its next epoch's output (1 s).
        let left = try #require(record.dropFirst(saving + 1).first)
        #expect(left.mode == .tracking)
        #expect(reported[4].at >= left.at && reported[4].at <= left.at + .seconds(1), "\(reported[4]), \(left)")
    }

    @Test(
        "a board without an enable line reports what its power-off leaves: u-blox backup, or standby",
        arguments: [
            (Board.PowerStrategy.ubloxBackup, HardwarePower.backup, SimulatedReceiver.Mode.backup),
            (.ubloxGNSSStop, .standby, .gnssStopped),
        ])
    func offWithoutEnableLine(strategy: Board.PowerStrategy, power: HardwarePower, mode: SimulatedReceiver.Mode)
        async throws
    {
        let board = try simulatorBoard { board in
            board.gpio.enable = nil
            board.power.strategies = [strategy]
        }
        let rig = try Rig(board: board, connection: .inProcess)
        // Without an enable line the receiver runs from the start: let it boot first.
        await rig.driver.advance(by: .seconds(1))
        #expect(try await powerCycle(rig) == mode)
        #expect(rig.receiver.hardwarePower.power == power && rig.receiver.hardwarePower.reason == .lingerEnded)
        #expect(!power.isPowered)
        await rig.shutdown()
    }

    @Test("a power-on that fails: powering off and off, for the failure, with what failed")
    func failure() async throws {
        let rig = try Rig(connection: .inProcess)
        rig.hat.receiver.inject(.silent)
        let changes = rig.receiver.hardwarePowerChanges()
        let fixes = rig.receiver.fixes.subscribe()
        _ = try await rig.driver.run { await firstError(fixes) }
        try await rig.runUntil { $0 == .failed }
        let off = rig.receiver.hardwarePower
        #expect(off.power == .off)
        #expect(off.reason.failure?.contains("no valid frame from the receiver") == true, "\(off)")
        let reported = await rig.shutdown(collecting: changes)
        #expect(reported.map(\.power) == [.off, .poweringOn, .poweringOff, .off])
        #expect(reported.map(\.reason.name) == ["initial", "demand", "failure", "failure"])
    }

    @Test("a shutdown while the receiver is on powers it off for the shutdown")
    func shutdown() async throws {
        let rig = try Rig(connection: .inProcess)
        let changes = rig.receiver.hardwarePowerChanges()
        let (_, fixes) = try await rig.freshPosition()
        #expect(rig.receiver.hardwarePower.power == .on)
        let reported = await rig.shutdown(collecting: changes)
        fixes.cancel()
        #expect(reported.suffix(2).map(\.power) == [.poweringOff, .off])
        #expect(reported.suffix(2).allSatisfy { $0.reason == .shutdown })
    }
}
