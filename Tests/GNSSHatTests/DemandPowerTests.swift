import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import Signals
import Testing

extension Rig {
    /// Moves time until the receiver's power plan satisfies `condition`; returns that status.
    @discardableResult
    func runUntilPlan(
        limit: Duration = .seconds(900), _ condition: @escaping @Sendable (PowerPlanStatus) -> Bool
    ) async throws -> PowerPlanStatus {
        let receiver = receiver
        return try await driver.run(limit: limit) {
            for await status in receiver.powerPlans() where condition(status) { return status }
            throw CancellationError()
        }
    }

    /// The next value of a subscription, moving time as needed.
    func next(_ fixes: FixIterator, limit: Duration = .seconds(900)) async throws -> Fix? {
        try await driver.run(limit: limit) { try await fixes.next() }
    }

    /// Seconds on the rig's clock since it was made.
    var seconds: Double {
        let elapsed = ManualClock.Instant(offset: .zero).duration(to: clock.now)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// A subscription's iterator, read by one operation of the driver at a time.
final class FixIterator: @unchecked Sendable {
    private var iterator: SignalSubscription<Fix>.Iterator

    init(_ subscription: SignalSubscription<Fix>) {
        iterator = subscription.makeAsyncIterator()
    }

    func next() async throws -> Fix? {
        try await iterator.next()
    }
}

extension PowerPlanStatus.Phase {
    var isSleeping: Bool { if case .sleeping = self { true } else { false } }
    var isAcquiring: Bool { if case .acquiring = self { true } else { false } }
}

extension PowerPlan {
    var isDutyCycle: Bool { if case .dutyCycle = self { true } else { false } }
}

/// A fresh, empty state directory under the temporary directory.
func temporaryStateDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "gnss-hat-state-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("Demand-shaped power on the simulated receiver", .timeLimit(.minutes(3)))
struct DemandPowerTests {
    @Test("a fix every 10 minutes: a duty cycle, off between fixes, on again in time for the next")
    func dutyCycle() async throws {
        let rig = try Rig(connection: .inProcess)
        let fixes = rig.receiver.fixes(every: .seconds(600)).subscribe()
        let iterator = FixIterator(fixes)

        let first = try #require(try await rig.next(iterator))
        #expect(first.hasPosition)
        let sleeping = try await rig.runUntilPlan { $0.phase.isSleeping }
        #expect(sleeping.plan.isDutyCycle)
        #expect(!rig.powerIsOn)
        #expect(rig.receiver.powerState == .on)  // the signal still serves its subscriber
        #expect(sleeping.summary.hasPrefix("duty cycle, next fix in "))
        let firstAt = rig.seconds

        let second = try #require(try await rig.next(iterator))
        let gap = rig.seconds - firstAt
        #expect(second.hasPosition)
        #expect(gap > 450 && gap < 700, "the second fix came \(gap) s after the first")
        try await rig.runUntilPlan { $0.phase.isSleeping }
        #expect(!rig.powerIsOn)
        // The first start is cold; the duty cycle's next ones are hot (backup RAM kept the ephemeris).
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        #expect(rig.receiver.powerPlan.statistics.dutyCycles == 2)
        #expect(rig.receiver.powerPlan.statistics.scheduledFixes == 2)
        fixes.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(rig.receiver.powerPlan.plan == .off)
        await rig.shutdown()
    }

    @Test("a continuous subscriber arriving during a duty cycle's pause powers the receiver on at once")
    func continuousOverrides() async throws {
        let rig = try Rig(connection: .inProcess)
        let scheduled = rig.receiver.fixes(every: .seconds(600)).subscribe()
        let iterator = FixIterator(scheduled)
        _ = try await rig.next(iterator)
        try await rig.runUntilPlan { $0.phase.isSleeping }
        #expect(!rig.powerIsOn)

        let pausedAt = rig.seconds
        let (_, continuous) = try await rig.freshPosition()
        #expect(rig.powerIsOn)
        #expect(rig.receiver.powerPlan.plan == .continuous)
        #expect(rig.seconds - pausedAt < 10, "the continuous subscriber waited \(rig.seconds - pausedAt) s")

        continuous.cancel()
        let back = try await rig.runUntilPlan { $0.plan.isDutyCycle && $0.phase.isSleeping }
        #expect(back.plan.isDutyCycle)
        #expect(!rig.powerIsOn)
        scheduled.cancel()
        await rig.shutdown()
    }

    @Test("no fix within the budget: the subscriber gets the typed noFix error and the receiver is off")
    func noFix() async throws {
        // The planner expects the board's 1 s hot start; this receiver needs 2,000 s to a fix.
        let rig = try Rig(connection: .inProcess) { $0.simulation.coldStart = .seconds(2000) }
        let fixes = rig.receiver.fixes(every: .seconds(600)).subscribe()
        let iterator = FixIterator(fixes)
        await #expect {
            _ = try await rig.next(iterator)
        } throws: { error in
            guard case ReceiverError.noFix = error else { return false }
            return true
        }
        try await rig.runUntil { $0 == .off }
        #expect(!rig.powerIsOn)
        #expect(rig.receiver.powerPlan.statistics.noFixes == 1)
        await rig.shutdown()
    }

    @Test("an accuracy the receiver never reaches: the best fix when the budget runs out, then off")
    func bestFixWhenTheBudgetRunsOut() async throws {
        let rig = try Rig(connection: .inProcess)
        let fixes = rig.receiver.fixes(every: .seconds(600), accuracy: 0.001).subscribe()
        let iterator = FixIterator(fixes)
        let best = try #require(try await rig.next(iterator))
        #expect(best.hasPosition)
        try await rig.runUntilPlan { $0.phase.isSleeping }
        #expect(!rig.powerIsOn)
        fixes.cancel()
        await rig.shutdown()
    }

    @Test("a receiver that NAKs its power save: the plan falls back, says so, and the fixes keep coming")
    func powerSaveRefused() async throws {
        let rig = try Rig(connection: .inProcess)
        rig.hat.receiver.inject(.refusePowerSave)
        let notices = Lock<[String]>([])
        // Every 4 s is too short for a duty cycle (a start is 1.3 s): the receiver's power save would do.
        let fixes = rig.receiver.fixes(every: .seconds(4)).subscribe()
        let noticesToken = rig.receiver.demandEvents.subscribe(onValue: { event in
            if case .notice(let text) = event { notices.withLock { $0.append(text) } }
        })
        let iterator = FixIterator(fixes)
        _ = try await rig.next(iterator)
        _ = try await rig.next(iterator)
        let status = rig.receiver.powerPlan
        #expect(status.plan == .continuous, "\(status)")
        #expect(status.statistics.powerSaveRefusals == 1)
        #expect(status.choice.reason.contains("refused its power save"), "\(status.choice.reason)")
        let said = notices.withLock { $0 }
        #expect(said.contains { $0.contains("refused its power save") }, "\(said)")
        #expect(rig.hat.receiver.powerSaveInterval == nil)
        noticesToken.cancel()
        fixes.cancel()
        await rig.shutdown()
    }

    @Test("a receiver that takes its power save: the plan is the receiver's own, every 4 s")
    func powerSaveAccepted() async throws {
        let rig = try Rig(connection: .inProcess)
        let fixes = rig.receiver.fixes(every: .seconds(4)).subscribe()
        let iterator = FixIterator(fixes)
        _ = try await rig.next(iterator)
        try await rig.runUntilPlan { if case .powerSave = $0.phase { true } else { false } }
        #expect(rig.receiver.powerPlan.plan == .receiverPowerSave(interval: .seconds(4)))
        #expect(rig.hat.receiver.powerSaveInterval != nil)
        _ = try await rig.next(iterator)
        // A continuous subscriber: the receiver leaves its power save (acknowledged) and tracks.
        let (_, continuous) = try await rig.freshPosition()
        #expect(rig.receiver.powerPlan.plan == .continuous)
        #expect(rig.hat.receiver.powerSaveInterval == nil, "still in power save")
        continuous.cancel()
        fixes.cancel()
        try await rig.runUntil { $0 == .off }
        await rig.shutdown()
    }

    @Test("two schedules: the shorter interval plans, each subscriber gets its own")
    func twoSchedules() async throws {
        let rig = try Rig(connection: .inProcess)
        let often = rig.receiver.fixes(every: .seconds(300)).subscribe()
        let rarely = rig.receiver.fixes(every: .seconds(900)).subscribe()
        #expect(rig.receiver.fixes(every: .seconds(300)) === rig.receiver.fixes(every: .seconds(300)))
        let oftenNext = FixIterator(often)
        let rarelyNext = FixIterator(rarely)
        _ = try await rig.next(oftenNext)
        _ = try await rig.next(rarelyNext)
        let status = try await rig.runUntilPlan { $0.phase.isSleeping }
        guard case .dutyCycle(let interval, _, _) = status.plan else {
            Issue.record("plan \(status.plan)")
            return
        }
        #expect(interval == .seconds(300))
        let start = rig.seconds
        _ = try await rig.next(oftenNext)
        let afterOne = rig.seconds - start
        #expect(afterOne > 200 && afterOne < 400)
        _ = try await rig.next(rarelyNext)
        #expect(rig.seconds - start > 600)
        often.cancel()
        rarely.cancel()
        await rig.shutdown()
    }
}

@Suite("The aiding state around a supply cut", .timeLimit(.minutes(3)))
struct AidingPowerOnTests {
    static func cutSupplyBoard() throws -> Board {
        try #require(try BoardCatalog.builtIn("simulator-cut-supply"))
    }

    /// Powers on with `directory` as the state directory and waits for a fix; returns the notices.
    static func powerOn(with directory: String) async throws -> (notices: [String], rig: Rig) {
        let rig = try Rig(
            board: try cutSupplyBoard(), connection: .inProcess,
            options: ReceiverOptions(stateDirectory: directory, aidingTime: .synchronised()))
        let notices = Lock<[String]>([])
        let token = rig.receiver.events.subscribe { event in
            if case .notice(let text) = event { notices.withLock { $0.append(text) } }
        }
        let (fix, fixes) = try await rig.freshPosition()
        #expect(fix.hasPosition)
        fixes.cancel()
        token.cancel()
        return (notices.withLock { $0 }, rig)
    }

    static let simulatedIdentity = AidingIdentity(
        softwareVersion: "ROM CORE 1.00 (simulated)", hardwareVersion: "00190000")

    @Test("a corrupt state file is ignored with a notice, removed, and the power-on succeeds")
    func corrupt() async throws {
        let directory = try temporaryStateDirectory()
        try Data(repeating: 0x5A, count: 300).write(to: URL(fileURLWithPath: directory + "/" + AidingState.fileName))
        let (notices, rig) = try await Self.powerOn(with: directory)
        #expect(notices.contains { $0.hasPrefix("aiding state ignored") && $0.contains("corrupt") }, "\(notices)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + AidingState.fileName))
        #expect(rig.receiver.powerPlan.statistics.aidingSkipped == 1)
        await rig.shutdown()
    }

    @Test("a state file of another receiver is ignored with a notice and the power-on succeeds")
    func foreign() async throws {
        let directory = try temporaryStateDirectory()
        let other = AidingIdentity(softwareVersion: "ROM SPG 5.10 (7b202e)", hardwareVersion: "000A0000")
        let state = AidingState(
            identity: other, savedAt: .system(),
            position: .init(latitude: 51.4779, longitude: -0.0015, altitude: 45, accuracy: 5), databaseRecords: [])
        try state.save(in: directory)
        let (notices, rig) = try await Self.powerOn(with: directory)
        #expect(notices.contains { $0.hasPrefix("aiding state ignored") && $0.contains("ROM SPG") }, "\(notices)")
        #expect(rig.receiver.powerPlan.statistics.aidingSkipped == 1)
        #expect(rig.receiver.powerPlan.statistics.aidingRestores == 0)
        await rig.shutdown()
    }

    @Test("an unsynchronised clock: position and database restored, the time not sent")
    func unsynchronisedClock() async throws {
        let directory = try temporaryStateDirectory()
        let rig = try Rig(
            board: try Self.cutSupplyBoard(), connection: .inProcess,
            options: ReceiverOptions(stateDirectory: directory, aidingTime: AidingTimeSource {
                var clock = AidingClock.system()
                clock.wallClockSynchronised = false
                return (clock, nil)
            }))
        let (_, first) = try await rig.freshPosition()
        first.cancel()
        try await rig.runUntil { $0 == .off }
        await rig.driver.advance(by: .seconds(600))
        let (_, second) = try await rig.freshPosition()
        let received = rig.hat.receiver.aidingReceived
        #expect(received.time == 0, "a clock nobody disciplines must not be sent: \(received)")
        #expect(received.position == 1 && received.recordsAccepted > 0, "\(received)")
        second.cancel()
        await rig.shutdown()
    }

    @Test("a stale state file is ignored with a notice and the power-on succeeds")
    func stale() async throws {
        let directory = try temporaryStateDirectory()
        var savedAt = AidingClock.system()
        let threeDays: Int64 = 3 * 86_400 * 1_000_000_000
        savedAt.wallClock = GNSSTime(nanosecondsSinceEpoch: savedAt.wallClock.nanosecondsSinceEpoch - threeDays)
        savedAt.bootID = nil
        let state = AidingState(
            identity: Self.simulatedIdentity, savedAt: savedAt,
            position: .init(latitude: 51.4779, longitude: -0.0015, altitude: 45, accuracy: 5), databaseRecords: [])
        try state.save(in: directory)
        let (notices, rig) = try await Self.powerOn(with: directory)
        #expect(notices.contains { $0.hasPrefix("aiding state ignored") }, "\(notices)")
        #expect(rig.receiver.powerPlan.statistics.aidingSkipped == 1)
        await rig.shutdown()
    }

    @Test("the last power-off before a cut saves the state; the next power-on restores it")
    func saveThenRestore() async throws {
        let directory = try temporaryStateDirectory()
        let (_, rig) = try await Self.powerOn(with: directory)
        try await rig.runUntil { $0 == .off }
        #expect(rig.receiver.powerPlan.statistics.aidingSaves == 1)
        let load = AidingState.load(from: directory, receiver: nil, now: .system())
        let saved = try #require(load.state, "\(load)")
        #expect(saved.position != nil)
        #expect(saved.identity.softwareVersion == Self.simulatedIdentity.softwareVersion)

        await rig.driver.advance(by: .seconds(600))
        let (_, fixes) = try await rig.freshPosition()
        #expect(rig.receiver.powerPlan.statistics.aidingRestores == 1)
        // Saved position and database, the time of a synchronised clock: an aided start.
        #expect(rig.hat.receiver.starts == [.cold, .aided])
        let ttff = try #require(rig.receiver.statistics.lastTimeToFirstFix)
        #expect(ttff <= .seconds(5), "aided time to first fix \(ttff)")
        fixes.cancel()
        await rig.shutdown()
    }

    @Test("a receiver that boots slower than the identity poll's wait still gets its aiding (the poll is repeated)")
    func slowBootStillAided() async throws {
        let directory = try temporaryStateDirectory()
        // 1.5 s of boot: the host's first MON-VER poll goes to a receiver that is not listening yet.
        var board = try Self.cutSupplyBoard()
        board.simulation?.boot = .milliseconds(1500)
        let rig = try Rig(
            board: board, connection: .inProcess,
            options: ReceiverOptions(stateDirectory: directory, aidingTime: .synchronised()))
        let (_, first) = try await rig.freshPosition()
        first.cancel()
        try await rig.runUntil { $0 == .off }
        #expect(rig.receiver.powerPlan.statistics.aidingSaves == 1)

        await rig.driver.advance(by: .seconds(600))
        let (_, fixes) = try await rig.freshPosition()
        #expect(rig.receiver.powerPlan.statistics.aidingRestores == 1)
        #expect(rig.hat.receiver.starts == [.cold, .aided])
        fixes.cancel()
        await rig.shutdown()
    }
}
