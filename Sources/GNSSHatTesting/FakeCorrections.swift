// A corrections source for tests: RTCM 3 frames of a made-up base near the simulator, on request.
import GNSSHat
public import GNSSProtocol
public import Signals
import LinuxSystem

/// A corrections source for tests: a ref-counted signal of RTCM 3 frames (as NTRIP's, mapped),
/// counting its producer's starts and stops, and sending a station message and an MSM4 on request.
public final class FakeCorrections: Sendable {
    /// The reference station the frames come from.
    public static let station = 2003
    public let signal: RefCountedSignal<RTCM3Frame>
    private let producer = Producer()

    /// The producer's emitter while it runs, its starts and stops, and who waits for a stop.
    final class Producer: Sendable {
        private struct State {
            var emitter: SignalEmitter<RTCM3Frame>?
            var starts = 0
            var stops = 0
            var waiters: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Lock(State())

        func start(_ emitter: SignalEmitter<RTCM3Frame>) {
            state.withLock { $0.emitter = emitter; $0.starts += 1 }
        }

        func stop() {
            let waiters = state.withLock { state in
                state.emitter = nil
                state.stops += 1
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        var emitter: SignalEmitter<RTCM3Frame>? { state.withLock { $0.emitter } }
        var starts: Int { state.withLock { $0.starts } }
        var stops: Int { state.withLock { $0.stops } }

        func waitForStop() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.stops > 0 { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }

    public init(clock: ManualClock, linger: Duration) {
        let producer = producer
        signal = RefCountedSignal(configuration: SignalConfiguration(linger: linger, replay: .none), clock: clock) {
            emitter in producer.start(emitter)
        } stop: {
            producer.stop()
        }
    }

    public var starts: Int { producer.starts }
    public var stops: Int { producer.stops }

    /// Suspends until the producer has stopped once.
    public func waitForStop() async { await producer.waitForStop() }

    /// The frames of one epoch of a base near `fix`: 1005, then a GPS MSM4 of six satellites.
    public func sendEpoch(_ fix: Fix) {
        guard let emitter = producer.emitter else { return }
        let arp = RTCM3StationARP(stationID: Self.station, x: 3_980_581, y: -100, z: 4_966_825)
        let cells = [2, 5, 12, 15, 24, 29].map { RTCM3MSM.Cell(satellite: $0, signal: 2, carrierToNoise: 45) }
        let msm = RTCM3MSM(messageNumber: 1074, stationID: Self.station,
                           epochTime: UInt32(clamping: (fix.time?.timeOfDay.nanosecondsSinceMidnight ?? 0) / 1_000_000),
                           cells: cells)
        for bytes in [arp.frame, msm.frame] {
            if let frame = try? RTCM3Frame(frame: ArraySlice(bytes)) { emitter.send(frame) }
        }
    }
}
