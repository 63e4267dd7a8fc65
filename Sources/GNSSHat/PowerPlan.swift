/// How the receiver runs between its subscribers' fixes, chosen from their aggregate demand.
public enum PowerPlan: Sendable, Hashable, CustomStringConvertible {
    /// Nobody listens: the board's power-off.
    case off
    /// Tracking every epoch, as before demand existed.
    case continuous
    /// The receiver's own power save (u-blox CFG-PM2 + CFG-RXM, CFG-PM-* keys, MTK PMTK225), set to
    /// a fix every `interval`; the receiver stays powered and wakes itself.
    case receiverPowerSave(interval: Duration)
    /// Off between fixes: powered on `leadTime` before a fix is due, off again as soon as a fix meets
    /// the accuracy or `budget` has passed since the power-on (the subscribers then get the best fix
    /// so far, or a `noFix` error).
    case dutyCycle(interval: Duration, leadTime: Duration, budget: Duration)

    public var description: String {
        switch self {
        case .off: "off"
        case .continuous: "continuous"
        case let .receiverPowerSave(interval): "receiver power save, a fix every \(Self.seconds(interval))"
        case let .dutyCycle(interval, leadTime, budget):
            "duty cycle, a fix every \(Self.seconds(interval)) (on \(Self.seconds(leadTime)) ahead, "
                + "\(Self.seconds(budget)) budget)"
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let tenths = Int((value * 10).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
    }
}

/// How a receiver starts after a power-on, which decides its time to first fix.
public enum StartKind: String, Sendable, Hashable, CaseIterable {
    /// Ephemeris, time and position kept (backup RAM, or the receiver's own power save).
    case hot
    /// After a supply cut, with time, position and the navigation database restored from the state file.
    case aided
    /// Nothing known.
    case cold
}

/// Times to first fix by start kind: the board's (or chip family's) figures until this receiver has
/// been measured, then the measured ones.
public struct StartTimes: Sendable, Hashable {
    public var hot: Duration
    public var aided: Duration
    public var cold: Duration

    public init(hot: Duration, aided: Duration, cold: Duration) {
        self.hot = hot
        self.aided = aided
        self.cold = cold
    }

    public subscript(kind: StartKind) -> Duration {
        get {
            switch kind {
            case .hot: hot
            case .aided: aided
            case .cold: cold
            }
        }
        set {
            switch kind {
            case .hot: hot = newValue
            case .aided: aided = newValue
            case .cold: cold = newValue
            }
        }
    }

    /// Typical figures of a chip family's data sheet, before anything is measured: u-blox M8/M9/M10
    /// cold 26 s, aided 3 s, hot 1 s (NEO-M8 data sheet: 26 s, 2 s with AssistNow Online, 1 s; we
    /// allow a second more for the aiding to be sent); MTK (MT3339/L76) cold 35 s, aided 5 s (EASY or
    /// PMTK740/741), hot 1 s.
    public static func typical(for family: Board.ChipFamily) -> StartTimes {
        switch family {
        case .mtk: StartTimes(hot: .seconds(1), aided: .seconds(5), cold: .seconds(35))
        case .ubloxGen8, .ubloxGen9, .ubloxM10: StartTimes(hot: .seconds(1), aided: .seconds(3), cold: .seconds(26))
        }
    }
}

/// What a board offers the planner: its currents, whether its power-off keeps backup RAM, and
/// whether its receiver has a power save it accepted.
public struct PowerPlanInputs: Sendable, Hashable {
    /// Currents (mA) at `volts`: acquiring, tracking, in the receiver's power save, and while off.
    public var volts: Double
    public var acquisitionMilliamps: Double
    public var trackingMilliamps: Double
    /// The receiver's power save's average; nil: the receiver has none the board knows of.
    public var powerSaveMilliamps: Double?
    /// What the board draws while powered off: the backup supply (V_BCKP) or nothing after a cut.
    public var offMilliamps: Double
    /// Whether a power-off keeps ephemeris and time (backup RAM); false: the supply is cut.
    public var offKeepsBackup: Bool
    /// Whether the state directory holds aiding (time, position, navigation database) that a start
    /// after a cut can use.
    public var aidingAvailable: Bool
    /// Whether the receiver refused its power save (NAK, or no reply): the planner then never picks it.
    public var powerSaveRefused: Bool
    /// Time from power to the first output.
    public var boot: Duration
    /// Expected times to first fix (learned ones where measured).
    public var startTimes: StartTimes
    /// The most a receiver keeps using the ephemeris it holds: a start later than this after the
    /// last fix is not hot even with backup RAM (GPS ephemerides are valid about 4 hours).
    public var ephemerisValidity: Duration
    /// When the demand needs RTK: the time from the first fix to RTK fixed (learned, as start times are),
    /// which every duty-cycle power-on adds to its start. nil: the demand needs no RTK.
    public var timeToRTKFixed: Duration?

    public init(
        volts: Double = 3.3, acquisitionMilliamps: Double, trackingMilliamps: Double,
        powerSaveMilliamps: Double?, offMilliamps: Double, offKeepsBackup: Bool, aidingAvailable: Bool = false,
        powerSaveRefused: Bool = false, boot: Duration = .milliseconds(300), startTimes: StartTimes,
        ephemerisValidity: Duration = .seconds(4 * 3600), timeToRTKFixed: Duration? = nil
    ) {
        self.timeToRTKFixed = timeToRTKFixed
        self.volts = volts
        self.acquisitionMilliamps = acquisitionMilliamps
        self.trackingMilliamps = trackingMilliamps
        self.powerSaveMilliamps = powerSaveMilliamps
        self.offMilliamps = offMilliamps
        self.offKeepsBackup = offKeepsBackup
        self.aidingAvailable = aidingAvailable
        self.powerSaveRefused = powerSaveRefused
        self.boot = boot
        self.startTimes = startTimes
        self.ephemerisValidity = ephemerisValidity
    }
}

/// The plan for a demand, why it was chosen, and the energy each candidate was expected to cost.
public struct PowerPlanChoice: Sendable, Hashable, CustomStringConvertible {
    public var plan: PowerPlan
    /// One line for people: what the demand is and why this plan serves it best.
    public var reason: String
    /// Expected energy per hour (mWh) of every plan considered, cheapest first.
    public var candidates: [Candidate]

    public struct Candidate: Sendable, Hashable {
        public var plan: PowerPlan
        public var milliwattHoursPerHour: Double
    }

    public var description: String { "\(plan): \(reason)" }
}

/// The power plan a Receiver follows now, why, and what the receiver does under it.
public struct PowerPlanStatus: Sendable, Hashable, CustomStringConvertible {
    /// What the receiver does under the plan.
    public enum Phase: Sendable, Hashable {
        /// Powered off (nobody listens, or the plan has not powered it yet).
        case off
        /// Powered and tracking every epoch.
        case on
        /// Powered, in the receiver's own power save.
        case powerSave(interval: Duration)
        /// A duty cycle's power-on, looking for a fix since `since` (the receiver's clock).
        case acquiring(since: Duration)
        /// A duty cycle's pause: off until `until`, the power-on for the next fix.
        case sleeping(until: Duration)
    }

    /// The plan, with the reason it was chosen and the energy of the plans considered.
    public var choice: PowerPlanChoice
    public var phase: Phase
    /// The receiver's clock when this status was read (offsets as in `phase`).
    public var now: Duration
    /// The starts measured on this receiver (the duty cycle's lead time comes from them).
    public var startTimes: StartTimeHistory
    public var statistics: PowerPlanStatistics

    public var plan: PowerPlan { choice.plan }

    /// One line for a live view: "duty cycle, next fix in 7:12", "continuous", "receiver power save".
    public var summary: String {
        switch (plan, phase) {
        case (.off, _): return "off"
        case (.continuous, _): return "continuous"
        case (.receiverPowerSave(let interval), _): return "receiver power save, a fix every \(Self.clock(interval))"
        case (.dutyCycle, .sleeping(let until)):
            return "duty cycle, next fix in \(Self.clock(max(until - now, .zero)))"
        case (.dutyCycle, .acquiring(let since)):
            return "duty cycle, looking for a fix for \(Self.clock(max(now - since, .zero)))"
        case (.dutyCycle, _): return "duty cycle"
        }
    }

    public var description: String { "\(summary) (\(choice.reason))" }

    /// Minutes and seconds, "7:12"; hours when there are any, "1:02:03".
    static func clock(_ duration: Duration) -> String {
        let total = Int(duration.components.seconds)
        let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(seconds))" : "\(minutes):\(two(seconds))"
    }
}

/// Counters of a Receiver's power plans.
public struct PowerPlanStatistics: Sendable, Hashable {
    /// Time spent under each plan kind ("continuous", "receiver power save", "duty cycle").
    public var timeInPlan: [String: Duration] = [:]
    /// How often the plan changed.
    public var changes = 0
    /// Duty-cycle power-ons.
    public var dutyCycles = 0
    /// Fixes a duty cycle handed on (met the accuracy, or the best when the budget ran out).
    public var scheduledFixes = 0
    /// Duty-cycle power-ons that found no fix within the budget.
    public var noFixes = 0
    /// Times the receiver refused its power save (the plan then fell back).
    public var powerSaveRefusals = 0
    /// Aiding states written before a supply cut, and restored after a power-on.
    public var aidingSaves = 0
    public var aidingRestores = 0
    /// Power-ons after a cut whose state file was missing, corrupt, foreign or stale.
    public var aidingSkipped = 0

    public init() {}

    mutating func add(_ plan: PowerPlan, since: Duration, until: Duration) {
        guard until > since else { return }
        let name: String
        switch plan {
        case .off: return
        case .continuous: name = "continuous"
        case .receiverPowerSave: name = "receiver power save"
        case .dutyCycle: name = "duty cycle"
        }
        timeInPlan[name, default: .zero] += until - since
    }
}
