import Foundation
import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// One seeded schedule of subscribes, cancels, waits and faults against a receiver on a
/// simulated hat, checking after every quiet period that the power line is off.
struct Schedule {
    let seed: UInt64
    var random: SeededGenerator
    let rig: Rig
    var tokens: [SignalToken] = []
    var streams: [SignalSubscription<Fix>] = []
    /// Holds with a demand (a fix every so often, or continuous), whose demand may change.
    var demands: [DemandToken<FixDemand>] = []
    var log: [String] = []
    /// How long a power-on can take at most: the power-on wait, the up time-out, every other
    /// speed tried (8 × 1.5 s), and MON-VER and CFG-VALSET with three attempts each.
    let longestStart: Duration = .seconds(25)

    init(seed: UInt64) throws {
        self.seed = seed
        var random = SeededGenerator(seed: seed)
        var board = try Rig.simulatorBoard()
        board.power.linger = [.zero, .milliseconds(500), .seconds(2), .seconds(5)].randomElement(using: &random)!
        board.simulation?.coldStart = .seconds(Int.random(in: 2...8, using: &random))
        if Bool.random(using: &random) { board.power.strategies = [.gpioEnable, .ubloxBackup] }
        self.random = random
        rig = try Rig(board: board, connection: .inProcess)
    }

    var linger: Duration { rig.board.power.linger }

    mutating func run(steps: Int) async throws {
        for _ in 0..<steps {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30: subscribe()
            case 30..<55: cancelOne()
            case 55..<80:
                let wait = Duration.milliseconds(Int.random(in: 50...8000, using: &random))
                log.append("advance \(wait)")
                await rig.driver.advance(by: wait)
            case 80..<92: fault()
            default: try await quietCheck()
            }
            checkLevels()
        }
        try await quietCheck()
        await rig.shutdown()
    }

    mutating func subscribe() {
        let receiver = rig.receiver
        switch Int.random(in: 0..<7, using: &random) {
        case 4:
            let interval = Duration.seconds(Int.random(in: 5...900, using: &random))
            log.append("subscribe fixes every \(interval) (stream)")
            let accuracy: Double? = Bool.random(using: &random) ? 10 : nil
            streams.append(receiver.fixes(every: interval, accuracy: accuracy).subscribe())
        case 5:
            let demand = randomDemand()
            log.append("hold with demand \(demand)")
            demands.append(receiver.demandEvents.hold(demand: demand))
        case 6:
            guard !demands.isEmpty else { return }
            let demand = randomDemand()
            let index = Int.random(in: 0..<demands.count, using: &random)
            log.append("change demand #\(index) to \(demand)")
            demands[index].setDemand(demand)
        case 0:
            log.append("subscribe fixes (stream)")
            streams.append(receiver.fixes.subscribe())
        case 1:
            log.append("subscribe sky (callback)")
            tokens.append(receiver.sky.subscribe(onValue: { _ in }))
        case 2:
            log.append("subscribe events (callback)")
            tokens.append(receiver.events.subscribe(onValue: { _ in }))
        default:
            log.append("hold")
            tokens.append(receiver.events.hold())
        }
    }

    /// Continuous, or a fix every 5 s to 20 minutes (power save, duty cycle or continuous by the plan).
    mutating func randomDemand() -> FixDemand {
        Int.random(in: 0..<4, using: &random) == 0
            ? .continuous : .every(.seconds(Int.random(in: 5...1200, using: &random)))
    }

    mutating func cancelOne() {
        if !demands.isEmpty, Int.random(in: 0..<3, using: &random) == 0 {
            log.append("cancel a demand")
            demands.remove(at: Int.random(in: 0..<demands.count, using: &random)).cancel()
            return
        }
        let count = tokens.count + streams.count
        guard count > 0 else { return }
        let index = Int.random(in: 0..<count, using: &random)
        log.append("cancel #\(index)")
        if index < tokens.count {
            tokens.remove(at: index).cancel()
        } else {
            streams.remove(at: index - tokens.count).cancel()
        }
    }

    mutating func fault() {
        let hat = rig.hat
        switch Int.random(in: 0..<7, using: &random) {
        case 0:
            log.append(hat.isPresent ? "disappear" : "reappear")
            if hat.isPresent { hat.disappear() } else { try? hat.reappear() }
        case 1:
            log.append("silent")
            hat.receiver.inject(.silent)
        case 2:
            log.append("clear faults")
            hat.receiver.clearFaults()
        case 3:
            log.append("reject configuration")
            hat.receiver.inject(.rejectConfiguration)
        case 4:
            log.append("ignore configuration")
            hat.receiver.inject(.ignoreConfiguration)
        case 5:
            log.append("garbage")
            hat.receiver.inject(.garbage(Int.random(in: 1...3000, using: &random)))
            hat.receiver.inject(.corruptFrames(Int.random(in: 0...5, using: &random)))
        default:
            // At any moment: the set it hits may be a power-on's (which then fails and switches
            // off) or a power-off's (which tries again); either way the quiet check finds the
            // line off. Before power-offs retried, arming this where a power-off could meet it
            // left the line on (seed 246 under ThreadSanitizer).
            if let line = rig.powerLine {
                log.append("fail the next set of the enable line")
                let call = FailedCall(call: "gpiod_line_set_value", device: "gpiochip0", errno: .ioError)
                line.failNextSet(with: .failed(call))
            }
        }
    }

    /// Everybody leaves; once the linger (and any power-on in progress) is over, the power must
    /// be off — on the fake line and in the simulated receiver.
    mutating func quietCheck() async throws {
        log.append("quiet check")
        for token in tokens { token.cancel() }
        for stream in streams { stream.cancel() }
        for demand in demands { demand.cancel() }
        tokens.removeAll()
        streams.removeAll()
        demands.removeAll()
        await rig.driver.advance(by: linger + longestStart)
        let receiver = rig.receiver
        // Nothing may need more time now: the stop, if any, is work in progress, not a wait.
        let context = Comment(rawValue: "seed \(seed): " + log.joined(separator: "; "))
        do {
            try await rig.driver.run(limit: .zero) { await receiver.waitForPower { !$0.isPowered } }
        } catch {
            let derived = [receiver.fixes.state, receiver.sky.state, receiver.pps.state, receiver.messages.state]
            let deadline = receiver.timeToNextDeadline.map { "\($0)" } ?? "none"
            let failure = receiver.statistics.lastFailure ?? "none"
            let parts = rig.driver.activity.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")
            Issue.record(Comment(rawValue: "still \(receiver.powerState) after the linger (\(error)); "
                + "signal \(receiver.events.statistics); derived \(derived); parts: \(parts); "
                + "next deadline \(deadline); traffic: \(rig.hat.traffic.counts); "
                + "last failure: \(failure): \(context.rawValue)"))
        }
        let levels = rig.powerLine?.levels ?? []
        #expect(!rig.powerIsOn, Comment(rawValue: context.rawValue + "; enable line levels \(levels); "
            + "power \(receiver.powerState); last failure: \(receiver.statistics.lastFailure ?? "none"); "
            + "power-ons \(receiver.statistics.powerOns); signal \(receiver.events.statistics)"))
        #expect(!rig.hat.receiver.mode.isNavigating, context)
        #expect(receiver.statistics.powerOffFailure == nil, context)
        #expect(rig.receiver.events.subscriberCount == 0, context)
        #expect(rig.receiver.demandEvents.subscriberCount == 0, context)
        #expect(rig.receiver.powerPlan.plan == .off, context)
    }

    /// The enable line is never switched on twice without an off between.
    func checkLevels() {
        // A schedule whose power-ons all failed before the line was requested has no levels to check
        // (checkOff still checks that it ended off).
        guard let levels = rig.powerLine?.levels else { return }
        for index in levels.indices.dropFirst() where levels[index] && levels[index - 1] {
            Issue.record(Comment(rawValue: "seed \(seed): enable switched on twice: \(levels)"))
            return
        }
    }
}

/// Which schedules RandomScheduleTests runs: seeds 1 to 1,000;
/// `SEED_COUNT=20000 swift test --filter RandomScheduleTests` runs 1 to 20,000, and `SEEDS=18,31`
/// only those (to chase one; a seed may repeat).
enum ScheduleSeeds {
    static let seeds: [UInt64] = {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["SEEDS"] { return chosen.split(separator: ",").compactMap { UInt64($0) } }
        let count = environment["SEED_COUNT"].flatMap { UInt64($0) } ?? 1000
        return count > 0 ? Array(1...count) : []
    }()

    /// Ten minutes per thousand schedules, as for the default thousand (a long run must not end
    /// on a limit meant for a short one).
    static var timeLimit: TimeLimitTrait.Duration { .minutes(10 * max(1, (seeds.count + 999) / 1000)) }
}

@Suite("Random schedules", .timeLimit(ScheduleSeeds.timeLimit))
struct RandomScheduleTests {
    @Test("1,000 seeded subscribe / cancel / fault schedules never leave the power on past the linger")
    func schedules() async throws {
        let seeds = ScheduleSeeds.seeds
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = seeds.makeIterator()
            for _ in 0..<4 {
                guard let seed = next.next() else { break }
                group.addTask { var schedule = try Schedule(seed: seed); try await schedule.run(steps: 24) }
            }
            while try await group.next() != nil {
                guard let seed = next.next() else { continue }
                group.addTask { var schedule = try Schedule(seed: seed); try await schedule.run(steps: 24) }
            }
        }
    }
}
