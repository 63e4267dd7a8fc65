public import Signals

/// How much of the receiver one subscriber needs: every epoch, or a fix at least every
/// `interval`, no older than `maximumAge` when it is delivered, and at least as accurate as
/// `horizontalAccuracy` (metres, gpsd's `eph`).
///
/// The Receiver keeps the aggregate of its subscribers' demands (``combined(with:)``) and plans
/// its power from it: a continuous demand keeps the receiver tracking, an interval lets it
/// sleep between fixes.
public struct FixDemand: Sendable, Hashable, CustomStringConvertible {
    /// The longest time between two fixes; nil: every epoch (continuous).
    public var interval: Duration?
    /// The oldest a delivered fix may be; nil: any age within the interval.
    public var maximumAge: Duration?
    /// The horizontal accuracy a fix must meet (metres); nil: any fix.
    public var horizontalAccuracy: Double?

    public init(interval: Duration? = nil, maximumAge: Duration? = nil, horizontalAccuracy: Double? = nil) {
        self.interval = interval
        self.maximumAge = maximumAge
        self.horizontalAccuracy = horizontalAccuracy
    }

    /// Every epoch, at the receiver's rate: what `pps`, `messages` and a plain subscription imply.
    public static let continuous = FixDemand()

    /// A fix at least every `interval`, optionally no older than `maximumAge` and at least as
    /// accurate as `accuracy` metres.
    public static func every(
        _ interval: Duration, maximumAge: Duration? = nil, accuracy: Double? = nil
    ) -> FixDemand {
        FixDemand(interval: interval, maximumAge: maximumAge, horizontalAccuracy: accuracy)
    }

    /// Whether the receiver must track without pause.
    public var isContinuous: Bool { interval == nil }

    /// The demand that serves both: continuous wins, else the shorter interval; the younger
    /// maximum age; the tighter accuracy. Associative and commutative, as `DemandPolicy` needs.
    public func combined(with other: FixDemand) -> FixDemand {
        FixDemand(
            interval: Self.smaller(interval, other.interval, nilWins: true),
            maximumAge: Self.smaller(maximumAge, other.maximumAge, nilWins: false),
            horizontalAccuracy: Self.smaller(horizontalAccuracy, other.horizontalAccuracy, nilWins: false))
    }

    /// How a Receiver's subscriptions combine.
    public static let policy = DemandPolicy<FixDemand> { $0.combined(with: $1) }

    public var description: String {
        guard let interval else {
            return horizontalAccuracy.map { "continuous, \(Self.metres($0))" } ?? "continuous"
        }
        var text = "a fix every \(Self.seconds(interval))"
        if let maximumAge { text += ", at most \(Self.seconds(maximumAge)) old" }
        if let horizontalAccuracy { text += ", \(Self.metres(horizontalAccuracy))" }
        return text
    }

    /// The smaller of two optional limits; a missing one is either no limit (`nilWins` false:
    /// the other stands) or the strongest demand (`nilWins` true: continuous beats any interval).
    private static func smaller<T: Comparable>(_ a: T?, _ b: T?, nilWins: Bool) -> T? {
        switch (a, b) {
        case let (a?, b?): return min(a, b)
        case (nil, nil): return nil
        case let (value?, nil), let (nil, value?): return nilWins ? nil : value
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }

    private static func metres(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) m" : "\(value) m"
    }
}
