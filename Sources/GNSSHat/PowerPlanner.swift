/// Chooses the power plan that serves a demand for the least expected energy. Pure: the
/// Receiver calls it whenever the aggregate demand, a measured start time or the receiver's answer
/// to its power save changes.
///
/// The model, per hour: *continuous* draws the tracking current; the *receiver's power save*
/// draws the board's power-save figure (the receiver wakes itself); a *duty cycle* draws the
/// acquisition current for the boot and the expected time to first fix of the start it will make
/// (hot with backup RAM, aided after a supply cut), and the off current for the rest of each
/// interval. A duty cycle is only considered when its interval is at least four times one start
/// (a shorter one spends most of its time starting, and a late fix costs the next).
public enum PowerPlanner {
    /// How many starts a duty cycle's interval must hold at least.
    public static let minimumStartsPerInterval = 4.0

    public static func choose(for demand: FixDemand?, inputs: PowerPlanInputs) -> PowerPlanChoice {
        guard let demand else {
            return PowerPlanChoice(plan: .off, reason: "nobody needs a fix", candidates: [])
        }
        guard let interval = effectiveInterval(of: demand) else {
            let continuous = candidate(.continuous, inputs: inputs)
            return PowerPlanChoice(
                plan: .continuous, reason: "a subscriber needs every epoch", candidates: [continuous])
        }
        var candidates = [candidate(.continuous, inputs: inputs)]
        var excluded: [String] = []
        if inputs.powerSaveMilliamps != nil, !inputs.powerSaveRefused {
            candidates.append(candidate(.receiverPowerSave(interval: interval), inputs: inputs))
        } else if inputs.powerSaveRefused {
            excluded.append("the receiver refused its power save")
        }
        let kind = startKind(after: interval, inputs: inputs)
        let start = startDuration(kind, inputs: inputs)
        if interval.seconds >= start.seconds * minimumStartsPerInterval {
            let plan = PowerPlan.dutyCycle(
                interval: interval, leadTime: start, budget: budget(for: start, interval: interval))
            candidates.append(candidate(plan, inputs: inputs))
        } else {
            excluded.append("a \(kind.rawValue) start (\(PowerPlan.seconds(start))) is too long for a duty cycle")
        }
        // Cheapest first; on a tie the simpler plan (continuous, then power save) stays first.
        let ranked = candidates.enumerated().sorted {
            ($0.element.milliwattHoursPerHour, $0.offset) < ($1.element.milliwattHoursPerHour, $1.offset)
        }.map(\.element)
        let best = ranked[0]
        var reason = "\(demand): \(best.plan) expects \(milliwatts(best.milliwattHoursPerHour))"
        if ranked.count > 1 {
            reason += ", " + ranked.dropFirst().map { "\(name(of: $0.plan)) \(milliwatts($0.milliwattHoursPerHour))" }
                .joined(separator: ", ")
        }
        if case .dutyCycle = best.plan {
            reason += " (\(kind.rawValue) starts"
            if let rtk = inputs.timeToRTKFixed { reason += " and \(PowerPlan.seconds(rtk)) to RTK fixed" }
            reason += ")"
        }
        if !excluded.isEmpty { reason += "; " + excluded.joined(separator: "; ") }
        return PowerPlanChoice(plan: best.plan, reason: reason, candidates: ranked)
    }

    /// The interval the plan must keep: the demand's, or its maximum age when that is shorter (a fix
    /// no older than a minute on request needs a fix every minute). Nil: continuous.
    public static func effectiveInterval(of demand: FixDemand) -> Duration? {
        guard let interval = demand.interval else { return nil }
        guard let maximumAge = demand.maximumAge else { return interval }
        return min(interval, maximumAge)
    }

    /// The start a power-on makes after `off`: hot while backup RAM holds an ephemeris that is
    /// still valid, aided after a cut (the state file carries time, position and the database),
    /// cold once the ephemeris is too old for either.
    public static func startKind(after off: Duration, inputs: PowerPlanInputs) -> StartKind {
        guard off <= inputs.ephemerisValidity else { return .cold }
        if inputs.offKeepsBackup { return .hot }
        return inputs.aidingAvailable ? .aided : .cold
    }

    /// Boot plus the expected time to first fix of a start of `kind`, plus the time to RTK fixed when
    /// the demand needs RTK: how long before a fix is due the duty cycle powers on.
    public static func startDuration(_ kind: StartKind, inputs: PowerPlanInputs) -> Duration {
        inputs.boot + inputs.startTimes[kind] + (inputs.timeToRTKFixed ?? .zero)
    }

    /// How long a duty cycle's power-on may look for a fix that meets the accuracy: three starts or
    /// a start and 30 s, whichever is longer, but not past the next fix's lead.
    public static func budget(for start: Duration, interval: Duration) -> Duration {
        min(max(start * 3, start + .seconds(30)), interval - start)
    }

    /// Expected energy per hour (mWh) of `plan`.
    public static func milliwattHoursPerHour(of plan: PowerPlan, inputs: PowerPlanInputs) -> Double {
        let milliamps: Double
        switch plan {
        case .off:
            milliamps = inputs.offMilliamps
        case .continuous:
            milliamps = inputs.trackingMilliamps
        case .receiverPowerSave:
            milliamps = inputs.powerSaveMilliamps ?? inputs.trackingMilliamps
        case let .dutyCycle(interval, start, _):
            let on = min(start.seconds, interval.seconds)
            milliamps = (inputs.acquisitionMilliamps * on + inputs.offMilliamps * (interval.seconds - on))
                / interval.seconds
        }
        return milliamps * inputs.volts
    }

    private static func candidate(_ plan: PowerPlan, inputs: PowerPlanInputs) -> PowerPlanChoice.Candidate {
        PowerPlanChoice.Candidate(plan: plan, milliwattHoursPerHour: milliwattHoursPerHour(of: plan, inputs: inputs))
    }

    private static func name(of plan: PowerPlan) -> String {
        switch plan {
        case .off: "off"
        case .continuous: "continuous"
        case .receiverPowerSave: "power save"
        case .dutyCycle: "duty cycle"
        }
    }

    private static func milliwatts(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return "\(rounded) mW"
    }
}

extension Duration {
    /// The duration in seconds, as a Double (for energy arithmetic).
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension PowerPlanInputs {
    /// The planner's inputs for `board`: its currents (acquisition and tracking required; a board
    /// without them plans continuous), whether its power-off keeps backup RAM (the board's
    /// `power.offKeepsBackup` unless given), and start times measured so far on top of the chip
    /// family's typical ones.
    /// `needsRTK`: the demand needs RTK corrections and they are at hand, so each start adds the time to
    /// RTK fixed (measured, else the board's typical figure, else ``Board/Corrections/defaultTimeToRTKFixed``).
    public init?(board: Board, offKeepsBackup: Bool? = nil, measured: StartTimeHistory = StartTimeHistory(),
                 aidingAvailable: Bool = false, powerSaveRefused: Bool = false, needsRTK: Bool = false) {
        let current = board.current
        let offKeepsBackup = offKeepsBackup ?? board.power.offKeepsBackup
        guard let acquisition = current.acquisition, let tracking = current.tracking else { return nil }
        var typical = StartTimes.typical(for: board.chip.family)
        if let simulation = board.simulation {
            typical.hot = simulation.hotStart
            typical.cold = simulation.coldStart
        }
        self.init(
            volts: current.volts, acquisitionMilliamps: acquisition, trackingMilliamps: tracking,
            powerSaveMilliamps: current.powerSave, offMilliamps: offKeepsBackup ? (current.backup ?? 0) : 0,
            offKeepsBackup: offKeepsBackup, aidingAvailable: aidingAvailable, powerSaveRefused: powerSaveRefused,
            boot: board.simulation?.boot ?? .milliseconds(300), startTimes: measured.estimates(over: typical),
            timeToRTKFixed: needsRTK ? measured.timeToRTKFixed(typical: Self.typicalTimeToRTKFixed(board)) : nil)
    }

    /// The board's typical time to RTK fixed: its own figure, the simulator's, else the default assumption.
    static func typicalTimeToRTKFixed(_ board: Board) -> Duration {
        board.corrections.typicalTimeToFixed ?? board.simulation?.rtkFixed ?? Board.Corrections.defaultTimeToRTKFixed
    }
}
