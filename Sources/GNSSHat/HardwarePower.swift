// The receiver's power as the hardware has it: what the session last did to its supply, its lines and
// its commands, and why. The signal's lifecycle (`PowerState`: subscribed, lingering, ...) says whether
// somebody is served; this says what the hat draws, which differs while a duty cycle sleeps between
// fixes or the receiver runs its own power save.

/// What the receiver's hardware is doing, as the session last drove it.
///
/// The session changes it exactly when it runs a power-on or power-off sequence and when the receiver
/// takes or leaves its own power save, whoever is subscribed: `off` between a duty cycle's fixes,
/// `on` while the signal lingers.
public enum HardwarePower: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The supply is cut (the board's `gpio-enable`), or the receiver has not been powered yet.
    case off
    /// Powered but idle: a standby line asserted, MTK standby (`$PMTK161,0`), or u-blox GNSS stopped
    /// (CFG-RST): the board has no enable line to cut its supply.
    case standby
    /// u-blox backup (RXM-PMREQ): only the backup domain is powered, until a wake-up.
    case backup
    /// The power-on sequence runs: switching on, waiting for the receiver, configuring it, restoring aiding.
    case poweringOn = "powering on"
    /// Powered and tracking every epoch.
    case on
    /// Powered, in the receiver's own power save (a fix every interval; it acquires at full power
    /// until its first fix).
    case powerSave = "power save"
    /// The power-off sequence runs (saving aiding first where the supply is cut).
    case poweringOff = "powering off"

    public var description: String { rawValue }

    /// Whether the receiver is powered for navigation: it may draw its operating current (its power
    /// save's average in ``powerSave``). Off, standby and backup draw at most a backup current.
    public var isPowered: Bool {
        switch self {
        case .poweringOn, .on, .powerSave, .poweringOff: true
        case .off, .standby, .backup: false
        }
    }

    /// What a board's power-off leaves the receiver in: `off` when an enable line cuts the supply,
    /// `backup` for u-blox backup, else `standby`.
    public static func afterPowerOff(_ power: Board.Power) -> HardwarePower {
        if power.strategies.contains(.gpioEnable) { return .off }
        if power.strategies.contains(.ubloxBackup) { return .backup }
        return .standby
    }
}

/// A change of ``HardwarePower``: the new state, why, and when on the receiver's clock.
public struct HardwarePowerChange: Sendable, Hashable, CustomStringConvertible {
    /// Why the hardware changed.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// Nothing has been driven yet: the receiver was just made.
        case initial
        /// What the subscribers need: the first one arrived, or their aggregate demand changed the plan
        /// (into or out of the receiver's power save, a continuous subscriber waking a duty cycle).
        case demand
        /// A duty cycle powers the receiver on for the next fix.
        case dutyCycleWake
        /// A duty cycle's fix is in (or its budget ran out): off until the next one is due.
        case dutyCycleSleep
        /// The last subscriber left and the linger ran out.
        case lingerEnded
        /// A power-on, the session or a power-off failed (the text says what). After a failed
        /// power-off the receiver may still draw power: `statistics.powerOffFailure` says so too.
        case failure(String)
        /// The Receiver shut down.
        case shutdown

        /// A short name for JSON and logs: "demand", "duty cycle wake", "failure", ...
        public var name: String {
            switch self {
            case .initial: "initial"
            case .demand: "demand"
            case .dutyCycleWake: "duty cycle wake"
            case .dutyCycleSleep: "duty cycle sleep"
            case .lingerEnded: "linger ended"
            case .failure: "failure"
            case .shutdown: "shutdown"
            }
        }

        /// The failure's text, for ``failure(_:)``.
        public var failure: String? {
            if case .failure(let text) = self { text } else { nil }
        }

        public var description: String { failure.map { "failure: \($0)" } ?? name }
    }

    public var power: HardwarePower
    public var reason: Reason
    /// When the change happened, on the receiver's clock (``Receiver/now``).
    public var at: Duration

    public init(power: HardwarePower, reason: Reason, at: Duration) {
        self.power = power
        self.reason = reason
        self.at = at
    }

    public var description: String { "\(power) (\(reason)) at \(PowerPlan.seconds(at))" }
}
