// What the service reports, and where it comes from: a device description and a reference-counted
// signal of events. Each watching client subscribes the signal once, so the receiver behind it is
// powered exactly while somebody watches (plus the receiver's linger).

public import GPSDProtocol
public import Signals
import Synchronization

/// One thing a watching client may be sent, encoded once for every client that gets it.
public enum GPSDEvent: Sendable {
    /// A TPV object, one JSON line ending in CR LF.
    case tpv([UInt8])
    /// A SKY object, one JSON line ending in CR LF.
    case sky([UInt8])
    /// In-band time of a navigation epoch: the fix's time and the system time its first byte
    /// arrived (gpsd's TOFF; chrony's serial-time sample).
    case timeOffset(TimeOffset)
    /// A PPS edge: the whole second it marks and the system time of the edge (gpsd's PPS; chrony's
    /// PPS sample).
    case pulse(TimeOffset)
    /// An NMEA sentence as the receiver sent it, CR LF included.
    case sentence([UInt8])
    /// A binary frame (UBX, RTCM3) as the receiver sent it.
    case frame([UInt8])
    /// The reports of one epoch's end (its TPV, TOFF and SKY), in order: a client gets the lines it
    /// wants of them in one write.
    case batch([GPSDEvent])
}

/// How many watching clients want NMEA sentences or raw frames: a source can skip making
/// pass-through events nobody asked for. The server keeps it current.
public final class PassThroughDemand: Sendable {
    private let watchers = Atomic<Int>(0)
    private let changed = ConditionWaiters()

    public init() {}

    /// A demand fixed at `wanted` (for tests and tools that want every event).
    public convenience init(wanted: Bool) {
        self.init()
        set(wanted ? 1 : 0)
    }

    /// Whether any watcher wants sentences or frames.
    public var isWanted: Bool { watchers.load(ordering: .relaxed) > 0 }

    func set(_ count: Int) {
        watchers.store(count, ordering: .relaxed)
        changed.resumeAll()
    }

    /// Suspends until ``isWanted`` is `wanted` (or the task is cancelled).
    package func waitUntil(wanted: Bool) async {
        await changed.wait { isWanted == wanted }
    }
}

/// Where a service's reports come from.
public struct GPSDSource: Sendable {
    /// The device DEVICE and DEVICES objects describe.
    public var device: GPSDDevice
    /// Reports: one subscription per watching client, one hold for `--keep-on`, one subscription
    /// for a chrony socket. Its producer powers the receiver (usually by subscribing the
    /// receiver's own signals).
    public var events: RefCountedSignal<GPSDEvent>
    /// Whether the device is active (powered and open), now and at every change; DEVICE objects
    /// carry `activated` while it is, and watchers get `"activated":0` when it stops.
    public var activity: @Sendable () -> AsyncStream<Bool>
    /// Applies a `?DEVICE=` change and returns the device as it is afterwards; `nil` when the
    /// source cannot change anything.
    public var configure: (@Sendable (DeviceChange) async throws -> GPSDDevice)?
    /// Stops the receiver at once (no linger) and waits until it is powered off: the service's last
    /// act before it exits.
    public var shutdown: @Sendable () async -> Void
    /// For a client that watches with `"interval"` (GNSSHat's extension): the TPV reports of a fix
    /// at least every interval (with `"accuracy"` too, the first fix at least that accurate once one is
    /// due), a signal whose subscription lets the receiver save power in between and carries the accuracy
    /// to it, so that an RTK accuracy brings corrections in. Nil: such a client watches `events` like any
    /// other.
    public var scheduled: (@Sendable (_ interval: Duration, _ accuracy: Double?) -> RefCountedSignal<GPSDEvent>)?
    /// For a client that watches every epoch with `"accuracy"` (GNSSHat's extension): a hold that carries
    /// the accuracy to the receiver, so that an RTK accuracy brings corrections in. Nil: the accuracy is
    /// ignored.
    public var demandHold: (@Sendable (_ accuracy: Double) -> SignalToken)?
    /// Whether any watcher wants `.sentence` and `.frame` events (the server updates it).
    public let passThroughDemand: PassThroughDemand

    public init(
        device: GPSDDevice,
        events: RefCountedSignal<GPSDEvent>,
        activity: (@Sendable () -> AsyncStream<Bool>)? = nil,
        configure: (@Sendable (DeviceChange) async throws -> GPSDDevice)? = nil,
        shutdown: (@Sendable () async -> Void)? = nil,
        passThroughDemand: PassThroughDemand = PassThroughDemand()
    ) {
        self.passThroughDemand = passThroughDemand
        self.device = device
        self.events = events
        self.activity = activity ?? { Self.activity(of: events) }
        self.configure = configure
        self.shutdown = shutdown ?? { await events.shutdown() }
    }

    /// A signal's running state as device activity: active while running or lingering.
    public static func activity<Value>(of signal: RefCountedSignal<Value>) -> AsyncStream<Bool> {
        AsyncStream { continuation in
            let task = Task {
                var last: Bool?
                for await state in signal.stateChanges() {
                    let active = state == .running || state == .lingering
                    if active != last {
                        last = active
                        continuation.yield(active)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
