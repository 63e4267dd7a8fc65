// A Receiver as the service's source: its events become gpsd reports, encoded once for every client.
//
// The source's signal is derived from the receiver's: its first subscriber (the first watcher)
// subscribes the receiver's `events`, which powers the hat on; its last one releases it, and the
// receiver powers off after its linger. Epochs are assembled here from the receiver's messages so
// that a TPV can go out as soon as an epoch's position is known (early-position mode) and so that
// each epoch's arrival time is known for TOFF and chrony.

public import GNSSHat
import GNSSProtocol
import LinuxSystem
import Signals

/// How a receiver's events become reports.
public struct ReceiverReportOptions: Sendable {
    /// Publish a TPV as soon as the epoch's position is known, then the complete TPV when the epoch
    /// ends (gpsd waits for the end of the cycle).
    public var earlyPosition: Bool

    public init(earlyPosition: Bool = false) {
        self.earlyPosition = earlyPosition
    }
}

extension GPSDSource {
    /// The reports of `receiver`: TPV, SKY, TOFF and PPS, NMEA sentences and binary frames.
    public static func receiver(_ receiver: Receiver, options: ReceiverReportOptions = ReceiverReportOptions())
        -> GPSDSource
    {
        let device = GPSDDevice(receiver: receiver)
        let upstream = Lock<SignalToken?>(nil)
        let path = device.path
        let demand = PassThroughDemand()
        let events = RefCountedSignal<GPSDEvent>(configuration: SignalConfiguration(replay: .none)) { emitter in
            let encoder = Lock(ReportEncoder(device: path, earlyPosition: options.earlyPosition, demand: demand))
            let token = receiver.events.subscribe(onValue: { event in
                let now = WallClock.now()
                encoder.withLock { $0.consume(event, at: now, monotonicNow: WallClock.monotonicNow()) { emitter.send($0) } }
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
        return GPSDSource(
            device: device,
            events: events,
            activity: {
                let states = receiver.powerStates()
                return AsyncStream { continuation in
                    let task = Task {
                        var last: Bool?
                        for await state in states {
                            let active = state == .on || state == .lingering
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
    }
}

extension GPSDDevice {
    /// The device a receiver's board describes: its serial port (or I2C bus) and speed, its chip's
    /// gpsd driver name, its navigation period and whether it has PPS.
    public init(receiver: Receiver) {
        let board = receiver.board
        let path: String
        let bps: Int?
        switch board.link {
        case .uart(let uart):
            path = uart.path
            bps = uart.baud
        case .simulator(let baud):
            path = receiver.simulator?.devicePath ?? "simulator"
            bps = baud
        case .i2c(let i2c):
            path = i2c.path
            bps = nil
        }
        let period = board.configuration.period.components
        self.init(
            path: path,
            driver: board.chip.family.isUBlox ? "u-blox" : "MTK-3301",
            subtype: board.chip.model,
            bps: bps,
            cycle: Double(period.seconds) + Double(period.attoseconds) / 1e18,
            native: board.chip.family.isUBlox && board.configuration.enabled ? 1 : 0,
            hasPPS: board.gpio.pps != nil
        )
    }
}

/// Turns receiver events into gpsd events: runs its own epoch assembly over the messages, encodes
/// TPV and SKY once, and notes when each epoch began.
struct ReportEncoder {
    let device: String
    let earlyPosition: Bool
    /// Sentences and frames are encoded again only while a watcher wants them.
    let demand: PassThroughDemand
    private var assembler = EpochAssembler()
    /// Wall-clock time of the first message of the epoch in progress.
    private var epochStart: Int64?
    /// The early TPV of the epoch in progress was sent.
    private var earlySent = false
    private var buffer: [UInt8] = []

    init(device: String, earlyPosition: Bool, demand: PassThroughDemand = PassThroughDemand(wanted: true)) {
        self.device = device
        self.earlyPosition = earlyPosition
        self.demand = demand
        buffer.reserveCapacity(4096)
    }

    /// Consumes one receiver event received at wall-clock `now`; calls `emit` for each report.
    mutating func consume(
        _ event: ReceiverEvent, at now: Int64, monotonicNow: Int64, emit: (GPSDEvent) -> Void
    ) {
        switch event {
        case .message(let message):
            consume(message, at: now, emit: emit)
        case .pps(let pulse):
            // The edge's system time (realtime stamps as they are, monotonic ones moved to the wall
            // clock). The second it marks is the nearest whole one (the system clock is assumed
            // within half a second, as when chrony already uses the serial time).
            let clock = pulse.systemTime(wallNow: now, monotonicNow: monotonicNow)
            let real = (clock + 500_000_000) / 1_000_000_000 * 1_000_000_000
            emit(.pulse(TimeOffset(real: real, clock: clock)))
        case .fix, .sky, .notice:
            // Fixes and sky views are assembled here from the messages (see above).
            break
        }
    }

    mutating func consume(_ message: Message, at now: Int64, emit: (GPSDEvent) -> Void) {
        if epochStart == nil { epochStart = now }
        if demand.isWanted { passThrough(message, emit: emit) }
        assemble(message, at: now, emit: emit)
    }

    private func passThrough(_ message: Message, emit: (GPSDEvent) -> Void) {
        switch message {
        case .nmea(let sentence):
            emit(.sentence(Self.bytes(of: sentence)))
        case .ubx(let ubx):
            if let frame = Self.frame(of: ubx) { emit(.frame(frame)) }
        case .rtcm3(let frame):
            emit(.frame(Array(frame.bytes)))
        }
    }

    private mutating func assemble(_ message: Message, at now: Int64, emit: (GPSDEvent) -> Void) {
        var epochs: [Epoch] = []
        assembler.consume(message) { epochs.append($0) }
        if epochs.isEmpty {
            if earlyPosition, !earlySent, let fix = assembler.pendingFix, fix.hasPosition {
                earlySent = true
                emit(.tpv(encodeTPV(fix)))
            }
            return
        }
        for epoch in epochs {
            if let fix = epoch.fix {
                emit(.tpv(encodeTPV(fix)))
                if fix.hasPosition, let time = fix.time, let start = epochStart {
                    emit(.timeOffset(TimeOffset(real: time.nanosecondsSinceEpoch, clock: start)))
                }
            }
            if let sky = epoch.sky {
                buffer.removeAll(keepingCapacity: true)
                GPSDReport.appendSKY(sky, device: device, to: &buffer)
                emit(.sky(buffer))
            }
        }
        epochStart = nil
        earlySent = false
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

    /// A UBX message as a frame again.
    static func frame(of message: UBXMessage) -> [UInt8]? {
        switch message {
        case .navPVT(let m): m.frame
        case .navSAT(let m): m.frame
        case .navSVINFO(let m): m.frame
        case .navStatus(let m): m.frame
        case .navDOP(let m): m.frame
        case .navTimeUTC(let m): m.frame
        case .navSOL(let m): m.frame
        case .navPOSLLH(let m): m.frame
        case .navVELNED(let m): m.frame
        case .navTimeGPS(let m): m.frame
        case .navHPPOSLLH(let m): m.frame
        case .hnrPVT(let m): m.frame
        case .monVER(let m): m.frame
        case .ack(let m): UBX.frame(message.messageID, payload: m.payload)
        case .nak(let m): UBX.frame(message.messageID, payload: m.payload)
        case .inf(let m): m.frame
        case .cfgValGet(let m): m.frame
        case .cfgValSet(let m): m.frame
        case .cfgMsg(let m): m.frame
        case .cfgPrt(let m): m.frame
        case .cfgRate(let m): m.frame
        case .cfgRst(let m): m.frame
        case .rxmPMREQ(let m): m.frame
        case .poll(let id): UBX.frame(id, payload: [UInt8]())
        case .other(let id, let payload): UBX.frame(id, payload: payload)
        }
    }
}
