// A Receiver as the service's source: its events become gpsd reports, encoded once for every client.
//
// The source's signal is derived from the receiver's: its first subscriber (the first watcher)
// subscribes the receiver's `events`, which powers the hat on; its last one releases it, and the
// receiver powers off after its linger. The reports come from the receiver's own epochs (its fixes and
// sky views, and its provisional fixes for early-position mode); the receiver's epoch starts say when
// each epoch's first message arrived, for TOFF and chrony.

public import GNSSHat
import GNSSProtocol
public import GPSDProtocol
import LinuxSystem
import Signals

extension GPSDSource {
    /// The reports of `receiver`: TPV, SKY, TOFF and PPS, NMEA sentences and binary frames. An early TPV
    /// goes out for each provisional fix the receiver delivers (`ReceiverOptions(provisionalFixes: true)`,
    /// what `gnss-hat serve --early-position` sets), then the complete TPV when the epoch ends.
    public static func receiver(_ receiver: Receiver) -> GPSDSource {
        let device = GPSDDevice(receiver: receiver)
        let upstream = Lock<SignalToken?>(nil)
        let path = device.path
        let demand = PassThroughDemand()
        let events = RefCountedSignal<GPSDEvent>(configuration: SignalConfiguration(replay: .none)) { emitter in
            let encoder = Lock(ReportEncoder(device: path, demand: demand))
            let token = receiver.events.subscribe(onValue: { event in
                // Most events are messages nobody asked for (no NMEA or raw watcher): nothing to do.
                if case .message = event, !demand.isWanted { return }
                // The clocks are read only for the events that carry a time (epoch starts, PPS edges).
                var now: Int64 = 0
                var monotonicNow: Int64 = 0
                switch event {
                case .epochStarted: now = WallClock.now()
                case .pps:
                    now = WallClock.now()
                    monotonicNow = WallClock.monotonicNow()
                default: break
                }
                // Lock, encode, unlock, then send: the watchers are not called under the encoder's lock.
                let reports = encoder.withLock { $0.consume(event, at: now, monotonicNow: monotonicNow) }
                for report in reports { emitter.send(report) }
            }, onCompletion: { completion in
                if case .failure(let error) = completion { emitter.fail(error) }
            })
            upstream.withLock { $0 = token }
        } stop: {
            let token = upstream.withLock { token -> SignalToken? in
                defer { token = nil }
                return token
            }
            token?.cancel()
        }
        var source = GPSDSource(
            device: device,
            events: events,
            activity: {
                // The hardware's power, not the signal's: between a duty cycle's fixes the receiver is
                // off and its device closed, and DEVICE says so ("activated":0) until the next power-on.
                let changes = receiver.hardwarePowerChanges()
                return AsyncStream { continuation in
                    let task = Task {
                        var last: Bool?
                        for await change in changes {
                            let active = change.power == .on || change.power == .powerSave
                            if active != last { continuation.yield(active) }
                            last = active
                        }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in task.cancel() }
                }
            },
            shutdown: {
                await events.shutdown()
                await receiver.shutdown()
            },
            passThroughDemand: demand
        )
        source.scheduled = scheduledViews(of: receiver, path: path)
        source.demandHold = { accuracy in
            receiver.fixes(for: FixDemand(horizontalAccuracy: accuracy)).hold()
        }
        return source
    }

    /// The TPVs of a client that watches with an interval (and maybe an accuracy): one signal per interval
    /// and accuracy, shared by every client that watches with them.
    private static func scheduledViews(of receiver: Receiver, path: String)
        -> @Sendable (Duration, Double?) -> RefCountedSignal<GPSDEvent>
    {
        let views = Lock<[FixDemand: RefCountedSignal<GPSDEvent>]>([:])
        return { interval, accuracy in
            let demand = FixDemand.every(interval, accuracy: accuracy)
            return views.withLock { views in
                if let view = views[demand] { return view }
                let view = receiver.fixes(for: demand).map { fix -> GPSDEvent in
                    var buffer: [UInt8] = []
                    GPSDReport.appendTPV(fix, device: path, to: &buffer)
                    return .tpv(buffer)
                }
                views[demand] = view
                return view
            }
        }
    }
}

extension GPSDDevice {
    /// The device a receiver runs on: its link's serial port (or I2C bus) and speed, and its board's
    /// chip (gpsd's driver name), navigation period and PPS line.
    public init(receiver: Receiver) {
        let board = receiver.board
        let link = receiver.link
        let period = board.configuration.period.components
        self.init(
            path: link.path,
            driver: board.chip.family.isUBlox ? "u-blox" : "MTK-3301",
            subtype: board.chip.model,
            bps: link.speed,
            cycle: Double(period.seconds) + Double(period.attoseconds) / 1e18,
            native: board.chip.family.isUBlox && board.configuration.enabled ? 1 : 0,
            hasPPS: board.gpio.pps != nil
        )
    }
}

/// Turns receiver events into gpsd events: encodes each TPV and SKY once, and notes when each epoch
/// began. It assembles nothing: the receiver's fixes and sky views are the reports.
struct ReportEncoder {
    let device: String
    /// Sentences and frames are encoded again only while a watcher wants them.
    let demand: PassThroughDemand
    /// Wall-clock time of the latest epoch start: the arrival of the first message after an epoch ended.
    private var epochStart: Int64?
    private var buffer: [UInt8] = []
    /// The reports of an epoch's end (TPV, TOFF, SKY), held until it has ended: they go out as one batch,
    /// one write per client. Any other event lets them go first, so none waits for longer than the
    /// epoch's own events.
    private var held: [GPSDEvent] = []

    init(device: String, demand: PassThroughDemand = PassThroughDemand(wanted: true)) {
        self.device = device
        self.demand = demand
        buffer.reserveCapacity(4096)
    }

    /// The reports of one receiver event received at wall-clock `now` (monotonic `monotonicNow`).
    mutating func consume(_ event: ReceiverEvent, at now: Int64, monotonicNow: Int64) -> Reports {
        switch event {
        case .fix, .sky:
            for report in reports(event, at: now, monotonicNow: monotonicNow) { held.append(report) }
            return Reports()
        case .epochEnded:
            return releaseHeld()
        default:
            // Not expected between a fix and its epoch's end; should one come, what was held goes first.
            var released = releaseHeld()
            guard let first = released.next() else { return reports(event, at: now, monotonicNow: monotonicNow) }
            // The event's own reports are at most one here (a fix's two are held).
            var own = reports(event, at: now, monotonicNow: monotonicNow)
            return Reports(first, own.next())
        }
    }

    /// The held reports as one event (none, one, or a batch).
    private mutating func releaseHeld() -> Reports {
        defer { held.removeAll(keepingCapacity: true) }
        switch held.count {
        case 0: return Reports()
        case 1: return Reports(held[0])
        default: return Reports(.batch(held))
        }
    }

    private mutating func reports(_ event: ReceiverEvent, at now: Int64, monotonicNow: Int64) -> Reports {
        switch event {
        case .message(let message):
            return demand.isWanted ? Reports(Self.passThrough(message)) : Reports()
        case .epochStarted:
            epochStart = now
            return Reports()
        case .provisionalFix(let fix):
            return Reports(.tpv(encodeTPV(fix)))
        case .fix(let fix):
            let tpv = GPSDEvent.tpv(encodeTPV(fix))
            guard fix.hasPosition, let time = fix.time, let start = epochStart else { return Reports(tpv) }
            return Reports(tpv, .timeOffset(TimeOffset(real: time.nanosecondsSinceEpoch, clock: start)))
        case .sky(let sky):
            buffer.removeAll(keepingCapacity: true)
            GPSDReport.appendSKY(sky, device: device, to: &buffer)
            return Reports(.sky(buffer))
        case .pps(let pulse):
            // The edge's system time (realtime stamps as they are, monotonic ones moved to the wall
            // clock). The second it marks is the nearest whole one (the system clock is assumed
            // within half a second, as when chrony already uses the serial time).
            let clock = pulse.systemTime(wallNow: now, monotonicNow: monotonicNow)
            let real = (clock + 500_000_000) / 1_000_000_000 * 1_000_000_000
            return Reports(.pulse(TimeOffset(real: real, clock: clock)))
        case .notice, .fixWindowClosed, .epochEnded:
            return Reports()
        }
    }

    /// A message as the receiver sent it, for watchers of raw or NMEA output: a UBX message framed again,
    /// an RTCM 3 frame whole, a sentence as `bytes(of:)` gives it.
    private static func passThrough(_ message: Message) -> GPSDEvent {
        switch message {
        case .nmea(let sentence): .sentence(bytes(of: sentence))
        case .ubx(let ubx): .frame(ubx.frame)
        case .rtcm3(let frame): .frame(Array(frame.bytes))
        }
    }

    private mutating func encodeTPV(_ fix: Fix) -> [UInt8] {
        buffer.removeAll(keepingCapacity: true)
        GPSDReport.appendTPV(fix, device: device, to: &buffer)
        return buffer
    }

    /// A sentence as bytes: kept whole when it was not decoded, otherwise encoded again from its
    /// fields (the receiver hands over decoded messages, not the bytes they came in).
    static func bytes(of sentence: NMEASentence) -> [UInt8] {
        switch sentence {
        case .proprietary(_, let bytes), .unsupported(_, let bytes):
            var whole = Array(bytes)
            if whole.last != 0x0A { whole += [0x0D, 0x0A] }
            return whole
        default:
            return sentence.sentence()
        }
    }
}

/// The reports of one receiver event: none, one, or two (a fix's TPV and its TOFF), without an array.
struct Reports: Sequence, IteratorProtocol {
    private var first: GPSDEvent?
    private var second: GPSDEvent?

    init(_ first: GPSDEvent? = nil, _ second: GPSDEvent? = nil) {
        self.first = first
        self.second = second
    }

    mutating func next() -> GPSDEvent? {
        defer {
            first = second
            second = nil
        }
        return first
    }
}
