import GNSSHat
import Signals
import Testing

@Suite("Fix demand and the power planner")
struct PowerPlannerTests {
    /// The simulator board's figures: acquisition 25 mA, tracking 21, power save 9, backup 0.015 at 3.3 V.
    static func inputs(offKeepsBackup: Bool = true, aiding: Bool = true, refused: Bool = false) -> PowerPlanInputs {
        PowerPlanInputs(
            volts: 3.3, acquisitionMilliamps: 25, trackingMilliamps: 21, powerSaveMilliamps: 9,
            offMilliamps: offKeepsBackup ? 0.015 : 0, offKeepsBackup: offKeepsBackup, aidingAvailable: aiding,
            powerSaveRefused: refused, boot: .milliseconds(300),
            startTimes: StartTimes(hot: .seconds(1), aided: .seconds(3), cold: .seconds(26)))
    }

    @Test("demands combine: continuous wins, the shorter interval, the younger age, the tighter accuracy")
    func combining() {
        let tenMinutes = FixDemand.every(.seconds(600), accuracy: 10)
        let minute = FixDemand.every(.seconds(60), maximumAge: .seconds(30))
        #expect(tenMinutes.combined(with: minute)
            == FixDemand(interval: .seconds(60), maximumAge: .seconds(30), horizontalAccuracy: 10))
        #expect(minute.combined(with: tenMinutes) == tenMinutes.combined(with: minute))
        #expect(tenMinutes.combined(with: .continuous).isContinuous)
        #expect(tenMinutes.combined(with: .continuous).horizontalAccuracy == 10)
        let loose = FixDemand.every(.seconds(600), accuracy: 50)
        #expect(loose.combined(with: tenMinutes).horizontalAccuracy == 10)
        // Associative, on a few triples.
        let demands = [tenMinutes, minute, loose, .continuous, .every(.seconds(5))]
        for a in demands {
            for b in demands {
                for c in demands {
                    #expect(a.combined(with: b).combined(with: c) == a.combined(with: b.combined(with: c)))
                }
            }
        }
        #expect(FixDemand.policy.combine(minute, tenMinutes) == minute.combined(with: tenMinutes))
    }

    @Test("descriptions say what is demanded and planned")
    func descriptions() {
        #expect(FixDemand.every(.seconds(600), accuracy: 10).description == "a fix every 600 s, 10 m")
        #expect(FixDemand.continuous.description == "continuous")
        #expect(PowerPlan.dutyCycle(interval: .seconds(600), leadTime: .milliseconds(3300), budget: .seconds(33))
            .description == "duty cycle, a fix every 600 s (on 3.3 s ahead, 33 s budget)")
    }

    @Test("nobody: off; a continuous subscriber: continuous")
    func offAndContinuous() {
        #expect(PowerPlanner.choose(for: nil, inputs: Self.inputs()).plan == .off)
        let choice = PowerPlanner.choose(for: .continuous, inputs: Self.inputs())
        #expect(choice.plan == .continuous)
        #expect(choice.reason == "a subscriber needs every epoch")
    }

    @Test("every ten minutes with backup RAM: a duty cycle of hot starts, far cheaper than tracking")
    func tenMinutesWithBackup() throws {
        let choice = PowerPlanner.choose(for: .every(.seconds(600), accuracy: 10), inputs: Self.inputs())
        guard case let .dutyCycle(interval, lead, budget) = choice.plan else {
            Issue.record("expected a duty cycle, got \(choice.plan)")
            return
        }
        #expect(interval == .seconds(600))
        #expect(lead == .milliseconds(1300))
        #expect(budget == .milliseconds(31_300))
        #expect(choice.reason.contains("(hot starts)"))
        let duty = try #require(choice.candidates.first).milliwattHoursPerHour
        let continuous = PowerPlanner.milliwattHoursPerHour(of: .continuous, inputs: Self.inputs())
        #expect(abs(continuous - 69.3) < 1e-9)
        // (25 mA x 1.3 s + 0.015 mA x 598.7 s) / 600 s x 3.3 V
        #expect(abs(duty - (25 * 1.3 + 0.015 * 598.7) / 600 * 3.3) < 1e-9)
    }

    @Test("after a supply cut: aided starts when the state file has aiding, cold ones when not")
    func cutSupply() {
        let aided = PowerPlanner.choose(for: .every(.seconds(600)), inputs: Self.inputs(offKeepsBackup: false))
        #expect(aided.plan
            == .dutyCycle(interval: .seconds(600), leadTime: .milliseconds(3300), budget: .milliseconds(33_300)))
        let cold = PowerPlanner.choose(
            for: .every(.seconds(600)), inputs: Self.inputs(offKeepsBackup: false, aiding: false))
        #expect(cold.plan
            == .dutyCycle(interval: .seconds(600), leadTime: .milliseconds(26_300), budget: .milliseconds(78_900)))
        #expect(cold.reason.contains("(cold starts)"))
    }

    @Test("a short interval: the receiver's power save; refused, the plan falls back and says why")
    func powerSaveAndRefusal() {
        let choice = PowerPlanner.choose(for: .every(.seconds(5)), inputs: Self.inputs())
        #expect(choice.plan == .receiverPowerSave(interval: .seconds(5)))
        #expect(choice.reason.contains("too long for a duty cycle"))
        let refused = PowerPlanner.choose(for: .every(.seconds(5)), inputs: Self.inputs(refused: true))
        #expect(refused.plan == .continuous)
        #expect(refused.reason.contains("the receiver refused its power save"))
        // Refused, with an interval a duty cycle can keep: the duty cycle.
        let long = PowerPlanner.choose(for: .every(.seconds(60)), inputs: Self.inputs(refused: true))
        guard case .dutyCycle = long.plan else {
            Issue.record("expected a duty cycle, got \(long.plan)")
            return
        }
    }

    @Test("a maximum age shorter than the interval sets the cycle")
    func maximumAge() {
        let demand = FixDemand.every(.seconds(600), maximumAge: .seconds(60))
        #expect(PowerPlanner.effectiveInterval(of: demand) == .seconds(60))
        guard case let .dutyCycle(interval, _, _) = PowerPlanner.choose(for: demand, inputs: Self.inputs()).plan else {
            Issue.record("expected a duty cycle")
            return
        }
        #expect(interval == .seconds(60))
    }

    @Test("an ephemeris older than its validity makes the next start cold, even with backup RAM")
    func staleEphemeris() {
        #expect(PowerPlanner.startKind(after: .seconds(3600), inputs: Self.inputs()) == .hot)
        #expect(PowerPlanner.startKind(after: .seconds(5 * 3600), inputs: Self.inputs()) == .cold)
        #expect(PowerPlanner.startKind(after: .seconds(600), inputs: Self.inputs(offKeepsBackup: false)) == .aided)
    }

    @Test("measured start times replace the typical ones, the longest of the last five")
    func learnedStartTimes() {
        var history = StartTimeHistory()
        let typical = StartTimes(hot: .seconds(1), aided: .seconds(3), cold: .seconds(26))
        #expect(history.estimates(over: typical) == typical)
        for seconds in [4, 2, 3, 2, 2] { history.record(.seconds(seconds), kind: .aided) }
        #expect(history.estimates(over: typical).aided == .seconds(4))
        history.record(.seconds(2), kind: .aided)  // the 4 s start leaves the window
        #expect(history.measured(.aided) == [2, 3, 2, 2, 2].map { .seconds($0) })
        #expect(history.estimates(over: typical).aided == .seconds(3))
        #expect(history.estimates(over: typical).hot == .seconds(1))
    }

    @Test("a board's figures: the simulator's currents and start times; no currents, no plan inputs")
    func fromBoard() throws {
        let board = try BoardCatalog.load("simulator")
        let inputs = try #require(PowerPlanInputs(board: board, offKeepsBackup: true))
        #expect(inputs.trackingMilliamps == 21)
        #expect(inputs.startTimes.cold == .seconds(26))
        #expect(inputs.offMilliamps == 0.015)
        let cut = try #require(PowerPlanInputs(board: board, offKeepsBackup: false))
        #expect(cut.offMilliamps == 0)
        let cutBoard = try BoardCatalog.load("simulator-cut-supply")
        #expect(try #require(PowerPlanInputs(board: cutBoard)).offKeepsBackup == false)
        #expect(try #require(PowerPlanInputs(board: board)).offKeepsBackup)
        var bare = board
        bare.current = Board.Current()
        #expect(PowerPlanInputs(board: bare, offKeepsBackup: true) == nil)
    }
}
