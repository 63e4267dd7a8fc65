/// The times to first fix this receiver has taken, by start kind: the planner's lead time and
/// expected on-time come from them once measured, from the chip family's figures before.
///
/// The estimate of a kind is the longest of its last ``window`` measurements: a duty cycle that
/// powers on too late misses its fix, one that powers on a second early costs a second of
/// acquisition current, so the estimate errs long.
public struct StartTimeHistory: Sendable, Hashable {
    /// How many recent measurements of each kind count.
    public static let window = 5

    private var recent: [StartKind: [Duration]] = [:]
    private var recentRTKFixed: [Duration] = []

    public init() {}

    /// Records one measured time to first fix (from power-on to the first fix that met the accuracy).
    public mutating func record(_ duration: Duration, kind: StartKind) {
        var times = recent[kind, default: []]
        times.append(duration)
        if times.count > Self.window { times.removeFirst(times.count - Self.window) }
        recent[kind] = times
    }

    /// The measured times of `kind`, oldest first.
    public func measured(_ kind: StartKind) -> [Duration] {
        recent[kind] ?? []
    }

    /// `typical` with every measured kind replaced by its estimate.
    public func estimates(over typical: StartTimes) -> StartTimes {
        var times = typical
        for kind in StartKind.allCases {
            if let longest = recent[kind]?.max() { times[kind] = longest }
        }
        return times
    }

    /// Records one measured time from a power-on's first fix to its first fix good enough for a
    /// centimetre demand (RTK fixed), while corrections flowed.
    public mutating func recordTimeToRTKFixed(_ duration: Duration) {
        recentRTKFixed.append(duration)
        if recentRTKFixed.count > Self.window { recentRTKFixed.removeFirst(recentRTKFixed.count - Self.window) }
    }

    /// The measured times to RTK fixed, oldest first.
    public var measuredTimesToRTKFixed: [Duration] { recentRTKFixed }

    /// The time to RTK fixed to plan with: the longest of the last ``window`` measurements, else `typical`.
    public func timeToRTKFixed(typical: Duration) -> Duration {
        recentRTKFixed.max() ?? typical
    }
}
