// The client's own position, for the GGA it sends and the nearest mountpoint it chooses: the owner
// updates it (from the receiver's fixes, or a fixed survey position); the client reads the latest.
public import GNSSProtocol
import LinuxSystem

/// A position to report to the caster.
public struct NTRIPPosition: Sendable, Hashable {
    /// Degrees, north and east positive.
    public var latitude: Double
    public var longitude: Double
    /// Metres above mean sea level (0 when unknown: VRS casters need only the horizontal position).
    public var altitudeMSL: Double
    /// The UTC time of day the position is for; nil: the time the GGA is sent.
    public var time: TimeOfDay?
    /// GGA quality: 1 autonomous (the default), 2 differential, 4 RTK fixed, 5 RTK float.
    public var quality: Int
    public var satellitesUsed: Int
    public var hdop: Double

    public init(
        latitude: Double, longitude: Double, altitudeMSL: Double = 0, time: TimeOfDay? = nil, quality: Int = 1,
        satellitesUsed: Int = 12, hdop: Double = 1
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeMSL = altitudeMSL
        self.time = time
        self.quality = quality
        self.satellitesUsed = satellitesUsed
        self.hdop = hdop
    }

    /// The GGA sentence (`$GPGGA,...*hh\r\n`) of this position, GNSSProtocol's NMEA encoding; `now`
    /// (nanoseconds since the Unix epoch) gives the time of day when the position has none.
    public func ggaSentence(now: Int64) -> [UInt8] {
        let dayNanos = ((now % 86_400_000_000_000) + 86_400_000_000_000) % 86_400_000_000_000
        let seconds = Int(dayNanos / 1_000_000_000)
        let time = self.time ?? TimeOfDay(
            hour: seconds / 3600, minute: seconds / 60 % 60, second: seconds % 60,
            nanosecond: Int(dayNanos % 1_000_000_000) / 10_000_000 * 10_000_000)
        return NMEAGGA(
            talker: .gp, time: time, latitude: latitude, longitude: longitude, quality: quality,
            satellitesUsed: satellitesUsed, hdop: hdop, altitudeMSL: altitudeMSL, geoidSeparation: 0
        ).sentence()
    }
}

/// The latest position, updated by its owner from any thread; the client reads it when it sends a
/// GGA or chooses a mountpoint, and a client waiting for a first position is told of it.
public final class PositionFeed: Sendable {
    private struct State {
        var latest: NTRIPPosition?
        var observers: [UInt64: @Sendable (NTRIPPosition) -> Void] = [:]
        var nextObserver: UInt64 = 0
    }

    private let state: Lock<State>

    /// A feed with no position yet, or with a fixed one (a surveyed base, a test).
    public init(_ position: NTRIPPosition? = nil) {
        state = Lock(State(latest: position))
    }

    /// The latest position, if there is one.
    public var latest: NTRIPPosition? { state.withLock { $0.latest } }

    /// Sets the latest position; observers are told outside the lock.
    public func update(_ position: NTRIPPosition) {
        let observers = state.withLock { state in
            state.latest = position
            return Array(state.observers.values)
        }
        for observer in observers { observer(position) }
    }

    /// Calls `body` at every update until the returned id is given to ``stopObserving(_:)``.
    func observe(_ body: @escaping @Sendable (NTRIPPosition) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = body
            return state.nextObserver
        }
    }

    func stopObserving(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }
}
