// The time pair gpsd's PPS and TOFF objects report (and chrony's SOCK samples carry).

/// A moment as gpsd's PPS and TOFF objects and chrony's SOCK samples give it: what the receiver
/// says the time was (`real`) and what the system clock said at that moment (`clock`), both in
/// nanoseconds since the Unix epoch.
public struct TimeOffset: Hashable, Sendable {
    public var real: Int64
    public var clock: Int64

    public init(real: Int64, clock: Int64) {
        self.real = real
        self.clock = clock
    }
}
