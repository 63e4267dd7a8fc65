// A virtual receiver: a u-blox (UBX + NMEA) or an MTK (NMEA + PMTK) that boots when powered,
// takes a cold or hot time to its first fix, follows a scripted trajectory, answers and obeys
// configuration and power commands, and misbehaves on request. It writes its output to any
// sink (a pseudo-terminal, an in-process link, a DDC simulator's control device) and takes
// host bytes from whoever reads that sink. Every encoding is GNSSProtocol's.
public import GNSSHat
public import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// A simulated GNSS receiver.
public final class SimulatedReceiver: Sendable {
    /// What it speaks.
    public enum Dialect: Sendable, Hashable {
        /// A u-blox with this protocol version (CFG-VALSET from 27).
        case ublox(protocolVersion: Double)
        /// A MediaTek receiver (NMEA and `$PMTK`).
        case mtk

        /// The dialect of a chip family.
        public init(_ family: Board.ChipFamily) {
            switch family {
            case .ubloxGen8: self = .ublox(protocolVersion: 18.0)
            case .ubloxGen9: self = .ublox(protocolVersion: 27.31)
            case .ubloxM10: self = .ublox(protocolVersion: 34.10)
            case .mtk: self = .mtk
            }
        }
    }

    /// What the receiver is doing, which decides what it sends and what it draws.
    public enum Mode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// No main supply (or held in reset).
        case off
        /// Powered, starting up: silent until its boot messages.
        case booting
        /// Searching for satellites: epochs without a fix.
        case acquiring
        /// Tracking: epochs with a fix, and PPS pulses.
        case tracking
        /// u-blox GNSS stopped by CFG-RST: the interface answers, no navigation output.
        case gnssStopped
        /// MTK standby (`$PMTK161,0` or the standby line): silent until a byte (or the line) wakes it.
        case standby
        /// u-blox backup (RXM-PMREQ): silent until a wake-up source or the duration ends.
        case backup
        /// MTK perpetual backup (`$PMTK225,4`): silent until a FORCE_ON pulse.
        case perpetualBackup

        public var description: String { rawValue }

        /// Whether the receiver navigates (draws operating current) in this mode.
        public var isNavigating: Bool { self == .booting || self == .acquiring || self == .tracking }
    }

    /// Misbehaviour on request.
    public enum Fault: Sendable, Hashable {
        /// Sends this many random bytes at once (noise on the line).
        case garbage(Int)
        /// The next this many frames go out with a wrong checksum.
        case corruptFrames(Int)
        /// Sends nothing for this long, though powered and navigating.
        case stall(Duration)
        /// Sends nothing at all and ignores every command, until the faults are cleared.
        case silent
        /// Refuses every configuration command (ACK-NAK, `$PMTK001,n,2`).
        case rejectConfiguration
        /// Never acknowledges configuration commands.
        case ignoreConfiguration
    }

    /// How a start went: without or with the ephemeris kept in backup RAM.
    public enum Start: String, Sendable, Hashable {
        case cold, hot
    }

    /// Who moves the receiver's time on.
    public enum Timing: Sendable, Hashable {
        /// A task of its own sleeps on the clock until the next event (boot end, next epoch).
        case selfTimed
        /// A test or benchmark calls ``tick()`` after moving the clock, and reads
        /// ``nextDeadline`` to know how far to move it.
        case driven
    }

    /// A capture played back instead of the scripted trajectory.
    public struct Replay: Sendable {
        /// The captured bytes (NMEA, UBX, RTCM 3 as the receiver sent them); played in a loop.
        public var bytes: [UInt8]
        /// How fast: the line's speed in bytes per second (960 for 9600 baud), or faster.
        public var bytesPerSecond: Int

        public init(bytes: [UInt8], bytesPerSecond: Int = 960) {
            self.bytes = bytes
            self.bytesPerSecond = max(bytesPerSecond, 1)
        }
    }

    /// The simulation's settings.
    public struct Settings: Sendable {
        public var dialect: Dialect
        public var simulation: Board.Simulation
        /// The navigation period after boot (configuration may change it).
        public var period: Duration
        /// UTC at the clock's reading when the receiver was made.
        public var startTime: GNSSTime
        /// How long ephemeris kept in backup RAM allows a hot start.
        public var ephemerisLifetime: Duration
        /// The module name MON-VER reports.
        public var model: String
        /// Seeds the noise of `garbage` faults.
        public var seed: UInt64
        /// A capture to play back instead of the scripted trajectory (nil: the trajectory).
        public var replay: Replay?

        public init(
            dialect: Dialect, simulation: Board.Simulation = Board.Simulation(), period: Duration = .seconds(1),
            startTime: GNSSTime = SimulatedReceiver.defaultStartTime, ephemerisLifetime: Duration = .seconds(4 * 3600),
            model: String = "ZED-F9P", seed: UInt64 = 1, replay: Replay? = nil
        ) {
            self.dialect = dialect
            self.simulation = simulation
            self.period = period
            self.startTime = startTime
            self.ephemerisLifetime = ephemerisLifetime
            self.model = model
            self.seed = seed
            self.replay = replay
        }

        /// The settings a board describes (its chip, its simulation section).
        public init(board: Board, startTime: GNSSTime = SimulatedReceiver.defaultStartTime, seed: UInt64 = 1) {
            self.init(dialect: Dialect(board.chip.family), simulation: board.simulation ?? Board.Simulation(),
                      startTime: startTime, model: board.chip.model ?? board.chip.family.rawValue, seed: seed)
        }
    }

    /// 2025-06-21 10:00:00 UTC: a fixed start so that simulations repeat exactly.
    public static let defaultStartTime = GNSSTime(
        date: GNSSDate(year: 2025, month: 6, day: 21), time: TimeOfDay(hour: 10, minute: 0, second: 0))

    public let settings: Settings
    public let timing: Timing
    let clock: SimulationClock
    private let state: Lock<Model>
    private let sink = Lock<(@Sendable ([UInt8]) -> Void)?>(nil)
    private let timer = Lock<(generation: UInt64, task: Task<Void, Never>?)>((0, nil))
    /// The receiver's time pulse, as a GPIO edge source.
    public let ppsOutput = SimulatedEdgeSource(name: "simulated PPS")

    public init(settings: Settings, clock: some Clock<Duration>, timing: Timing = .selfTimed) {
        self.settings = settings
        self.timing = timing
        self.clock = SimulationClock(clock)
        state = Lock(Model(settings: settings))
    }

    /// Sends the receiver's output to `sink` from now on (nil: nowhere).
    public func connect(output: (@Sendable ([UInt8]) -> Void)?) {
        sink.withLock { $0 = output }
    }

    // MARK: - Observing

    /// What the receiver is doing now.
    public var mode: Mode { state.withLock { $0.mode } }

    /// Time spent in each mode so far.
    public var timeInModes: [Mode: Duration] {
        let now = clock.now()
        return state.withLock { model in
            var times = model.timeIn
            times[model.mode, default: .zero] += now - model.modeSince
            return times
        }
    }

    /// The starts so far, cold or hot, in order.
    public var starts: [Start] { state.withLock { $0.starts } }

    /// Navigation epochs sent, and those with a fix.
    public var epochsSent: Int { state.withLock { $0.epochsSent } }
    public var fixesSent: Int { state.withLock { $0.fixesSent } }

    /// The names of the commands received, in order (`MON-VER poll`, `CFG-VALSET`, `PMTK314`…).
    public var commandsReceived: [String] { state.withLock { $0.commands } }

    /// The navigation period now in force.
    public var period: Duration { state.withLock { $0.period } }

    /// Whether the receiver sends UBX NAV-PVT (enabled by configuration).
    public var sendsNavPVT: Bool { state.withLock { $0.ubxOutput.contains(.navPVT) } }

    /// How long until the next event (boot end, epoch, wake-up), for a driver of a `.driven`
    /// receiver; nil when nothing is due until something else happens.
    public var timeToNextEvent: Duration? {
        let now = clock.now()
        return state.withLock { $0.nextDeadline() }.map { max($0 - now, .zero) }
    }

    // MARK: - Lines

    /// Switches the main supply.
    public func setMainPower(_ on: Bool) {
        change { model, now, output in model.setMainPower(on, now: now, output: &output) }
    }

    /// Drives the reset input (asserted: held in reset).
    public func setReset(_ asserted: Bool) {
        change { model, now, output in model.setReset(asserted, now: now, output: &output) }
    }

    /// Drives the standby input (asserted: standby).
    public func setStandby(_ asserted: Bool) {
        change { model, now, output in model.setStandby(asserted, now: now, output: &output) }
    }

    /// Drives the FORCE_ON input: a pulse leaves perpetual backup.
    public func setForceOn(_ asserted: Bool) {
        change { model, now, output in model.setForceOn(asserted, now: now, output: &output) }
    }

    /// Drives the EXTINT input: a rising edge wakes a u-blox from backup when EXTINT0 is a wake source.
    public func setExtint(_ asserted: Bool) {
        change { model, now, output in model.setExtint(asserted, now: now, output: &output) }
    }

    // MARK: - Host traffic and faults

    /// Bytes from the host: commands, or a wake-up.
    public func receive(_ bytes: [UInt8]) {
        change { model, now, output in model.receive(bytes, now: now, output: &output) }
    }

    /// Injects a fault.
    public func inject(_ fault: Fault) {
        change { model, now, output in model.inject(fault, now: now, output: &output) }
    }

    /// Ends every fault.
    public func clearFaults() {
        change { model, _, _ in model.clearFaults() }
    }

    /// Handles every event due by the clock's time now (`.driven` timing).
    public func tick() {
        change { model, now, output in model.advance(to: now, output: &output) }
    }

    /// Stops the receiver's own timer.
    public func shutdown() {
        let task = timer.withLock { timer -> Task<Void, Never>? in
            timer.generation += 1
            defer { timer.task = nil }
            return timer.task
        }
        task?.cancel()
    }

    // MARK: - Internals

    /// Applies a change under the lock, then sends what it produced and re-arms the timer.
    private func change(_ body: (inout Model, Duration, inout Output) -> Void) {
        let now = clock.now()
        let output = state.withLock { model -> Output in
            var output = Output()
            model.advance(to: now, output: &output)
            body(&model, now, &output)
            return output
        }
        deliver(output)
        if timing == .selfTimed { reschedule() }
    }

    private func deliver(_ output: Output) {
        if !output.bytes.isEmpty, let sink = sink.withLock({ $0 }) { sink(output.bytes) }
        for edge in output.pulses { ppsOutput.emit(edge) }
    }

    private func reschedule() {
        let deadline = state.withLock { $0.nextDeadline() }
        let generation = timer.withLock { timer -> UInt64 in
            timer.generation += 1
            timer.task?.cancel()
            timer.task = nil
            return timer.generation
        }
        guard let deadline else { return }
        let clock = clock
        let task = Task { [weak self] in
            do { try await clock.sleepUntil(deadline) } catch { return }
            guard let self, self.timer.withLock({ $0.generation == generation }) else { return }
            self.tick()
        }
        let keep = timer.withLock { timer -> Bool in
            guard timer.generation == generation else { return false }
            timer.task = task
            return true
        }
        if !keep { task.cancel() }
    }
}

/// What one change produced, sent after the lock is released.
struct Output {
    var bytes: [UInt8] = []
    var pulses: [EdgeEvent] = []
}

/// The simulated receiver's state and behaviour, a plain value changed under a lock.
struct Model: Sendable {
    let settings: SimulatedReceiver.Settings
    var mode: SimulatedReceiver.Mode = .off
    var modeSince: Duration = .zero
    var timeIn: [SimulatedReceiver.Mode: Duration] = [:]
    var mainPower = false
    var reset = false
    var standbyLine = false
    var forceOnLine = false
    var extintLine = false
    var bootUntil: Duration?
    var fixAt: Duration?
    var nextEpoch: Duration?
    var ephemerisUntil: Duration?
    var pendingStart: SimulatedReceiver.Start = .cold
    var starts: [SimulatedReceiver.Start] = []
    var period: Duration
    var ubxOutput: Set<UBX.MessageID> = []
    var nmeaOutput = true
    var mtkRates = PMTK.SentenceRates()
    var backupWake: UBXRxmPmReq.WakeSources = []
    var backupUntil: Duration?
    var stallUntil: Duration?
    var silent = false
    var rejectConfiguration = false
    var ignoreConfiguration = false
    var corruptFrames = 0
    /// What the host sends, decoded (only its messages matter here).
    var intake = GNSSDecoder()
    var random: SeededGenerator
    var epochsSent = 0
    var fixesSent = 0
    var commands: [String] = []
    var ppsSequence: UInt64 = 0
    var replayOffset = 0

    init(settings: SimulatedReceiver.Settings) {
        self.settings = settings
        period = settings.period
        random = SeededGenerator(seed: settings.seed)
    }

    var isUBlox: Bool {
        if case .ublox = settings.dialect { return true }
        return false
    }

    var protocolVersion: Double {
        if case .ublox(let version) = settings.dialect { return version }
        return 0
    }

    // MARK: Mode changes

    mutating func enter(_ newMode: SimulatedReceiver.Mode, now: Duration) {
        guard newMode != mode else { return }
        timeIn[mode, default: .zero] += now - modeSince
        modeSince = now
        mode = newMode
        if !newMode.isNavigating { nextEpoch = nil }
    }

    /// Powered up, or woken: boot messages after the boot time, then acquisition, cold or hot.
    mutating func boot(now: Duration) {
        let hot = ephemerisUntil.map { now < $0 } ?? false
        pendingStart = hot ? .hot : .cold
        if !hot { ephemerisUntil = nil }
        // Configuration lives in RAM: a power cycle or a backup wake-up loses it.
        ubxOutput = []
        nmeaOutput = true
        mtkRates = PMTK.SentenceRates()
        period = settings.period
        intake.reset()
        bootUntil = now + settings.simulation.boot
        enter(.booting, now: now)
    }

    /// Resumes navigation without a reboot (GNSS start, MTK wake-up): the ephemeris is kept.
    mutating func resume(now: Duration) {
        let hot = ephemerisUntil.map { now < $0 } ?? false
        starts.append(hot ? .hot : .cold)
        fixAt = now + (hot ? settings.simulation.hotStart : settings.simulation.coldStart)
        enter(.acquiring, now: now)
        nextEpoch = gridAfter(now)
    }

    mutating func powerLoss(now: Duration) {
        if !settings.simulation.backupSupply { ephemerisUntil = nil }
        bootUntil = nil
        backupUntil = nil
        enter(.off, now: now)
    }

    mutating func setMainPower(_ on: Bool, now: Duration, output: inout Output) {
        guard on != mainPower else { return }
        mainPower = on
        if !on {
            powerLoss(now: now)
        } else if !reset {
            boot(now: now)
        }
    }

    mutating func setReset(_ asserted: Bool, now: Duration, output: inout Output) {
        guard asserted != reset else { return }
        reset = asserted
        guard mainPower else { return }
        if asserted {
            bootUntil = nil
            enter(.off, now: now)
        } else {
            boot(now: now)
        }
    }

    mutating func setStandby(_ asserted: Bool, now: Duration, output: inout Output) {
        guard asserted != standbyLine else { return }
        standbyLine = asserted
        guard mainPower, !reset else { return }
        if asserted, mode == .acquiring || mode == .tracking {
            enter(.standby, now: now)
        } else if !asserted, mode == .standby {
            wakeFromStandby(now: now, output: &output)
        }
    }

    mutating func setForceOn(_ asserted: Bool, now: Duration, output: inout Output) {
        guard asserted != forceOnLine else { return }
        forceOnLine = asserted
        if asserted, mainPower, mode == .perpetualBackup { boot(now: now) }
    }

    mutating func setExtint(_ asserted: Bool, now: Duration, output: inout Output) {
        guard asserted != extintLine else { return }
        extintLine = asserted
        if asserted, mode == .backup, backupWake.contains(.extint0) { boot(now: now) }
    }

    mutating func wakeFromStandby(now: Duration, output: inout Output) {
        resume(now: now)
        send(PMTKMessage.system(message: 2).sentence(), now: now, output: &output)
    }

    // MARK: Time

    func gridAfter(_ time: Duration) -> Duration {
        let periodNanos = max(period.clampedNanoseconds, 1_000_000)
        let nanos = time.clampedNanoseconds
        return .nanoseconds((nanos / periodNanos + 1) * periodNanos)
    }

    func nextDeadline() -> Duration? {
        var candidates: [Duration] = []
        if mode == .booting, let bootUntil { candidates.append(bootUntil) }
        if mode == .acquiring || mode == .tracking, let nextEpoch { candidates.append(nextEpoch) }
        if mode == .backup, let backupUntil { candidates.append(backupUntil) }
        return candidates.min()
    }

    /// Handles everything due by `now`: the end of a boot, a backup duration, navigation
    /// epochs (only the latest of several missed ones is sent, as a receiver would).
    mutating func advance(to now: Duration, output: inout Output) {
        if mode == .booting, let until = bootUntil, until <= now {
            bootUntil = nil
            starts.append(pendingStart)
            fixAt = until + (pendingStart == .hot ? settings.simulation.hotStart : settings.simulation.coldStart)
            enter(.acquiring, now: until)
            sendBootMessages(now: until, output: &output)
            nextEpoch = gridAfter(until)
        }
        if mode == .backup, let until = backupUntil, until <= now {
            backupUntil = nil
            boot(now: until)
            advance(to: now, output: &output)
            return
        }
        guard mode == .acquiring || mode == .tracking, let due = nextEpoch, due <= now else { return }
        var epoch = due
        while gridAfter(epoch) <= now { epoch = gridAfter(epoch) }
        nextEpoch = gridAfter(epoch)
        sendEpoch(at: epoch, output: &output)
    }

    // MARK: Output

    /// Frames out, unless silent or stalled; corrupted on request.
    mutating func send(_ frame: [UInt8], now: Duration, output: inout Output) {
        if silent { return }
        if let until = stallUntil {
            if now < until { return }
            stallUntil = nil
        }
        var frame = frame
        if corruptFrames > 0, frame.count > 4 {
            corruptFrames -= 1
            // The checksum: UBX's last byte, or the last hex digit before NMEA's CR LF.
            if frame[0] == 0xB5 {
                frame[frame.count - 1] ^= 0x5A
            } else {
                let index = frame.count - 3
                frame[index] = frame[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            }
        }
        output.bytes += frame
    }

    mutating func sendBootMessages(now: Duration, output: inout Output) {
        if isUBlox {
            let lines = [
                "u-blox AG - www.u-blox.com", "HW UBX 9 00190000", "ROM CORE 1.00 (simulated)",
                "PROTVER=" + String(format2: protocolVersion), "MOD=" + settings.model,
            ]
            for line in lines {
                send(NMEATXT(talker: .gn, sentenceCount: 1, sentenceNumber: 1, textID: 2, text: line).sentence(),
                     now: now, output: &output)
            }
        } else {
            send(PMTK.command(11, ["MTKGPS"]), now: now, output: &output)
            send(PMTKMessage.system(message: 1).sentence(), now: now, output: &output)
        }
    }

    /// The scripted trajectory at `time` (clock offset): a straight line at constant speed.
    func position(at time: Duration) -> (latitude: Double, longitude: Double) {
        let simulation = settings.simulation
        let metres = simulation.speed * SimulationMath.seconds(time)
        let course = SimulationMath.radians(simulation.course)
        let north = metres * SimulationMath.cosine(course)
        let east = metres * SimulationMath.sine(course)
        let latitude = simulation.latitude + north / 111_320
        let scale = max(SimulationMath.cosine(SimulationMath.radians(latitude)), 0.01)
        return (latitude, simulation.longitude + east / (111_320 * scale))
    }

    /// A fixed constellation whose geometry turns slowly with time.
    func satellites(at time: Duration, tracking: Bool) -> [SimulatedSatellite] {
        let minutes = SimulationMath.seconds(time) / 60
        let ids: [(GNSSSystem, Int)] = [
            (.gps, 2), (.gps, 5), (.gps, 12), (.gps, 15), (.gps, 19), (.gps, 24), (.gps, 25), (.gps, 29),
            (.galileo, 3), (.galileo, 8), (.galileo, 13), (.galileo, 26),
        ]
        return ids.enumerated().map { index, id in
            let elevation = 10 + (index * 37 + Int(minutes / 4)) % 75
            let azimuth = (index * 53 + Int(minutes)) % 360
            let strength = tracking ? 28 + (index * 7) % 20 : 12 + (index * 5) % 10
            return SimulatedSatellite(system: id.0, svid: id.1, elevation: elevation, azimuth: azimuth,
                                      strength: strength, used: tracking && index < 9)
        }
    }

    mutating func sendEpoch(at epoch: Duration, output: inout Output) {
        if let replay = settings.replay, !replay.bytes.isEmpty {
            // A period's worth of the capture at its line speed, in a loop.
            let count = max(1, Int(Double(replay.bytesPerSecond) * SimulationMath.seconds(period)))
            var chunk: [UInt8] = []
            chunk.reserveCapacity(count)
            while chunk.count < count {
                let take = min(count - chunk.count, replay.bytes.count - replayOffset)
                chunk += replay.bytes[replayOffset..<(replayOffset + take)]
                replayOffset = (replayOffset + take) % replay.bytes.count
            }
            send(chunk, now: epoch, output: &output)
            epochsSent += 1
            return
        }
        let fixed = fixAt.map { epoch >= $0 } ?? false
        if fixed, mode == .acquiring { enter(.tracking, now: epoch) }
        if fixed { ephemerisUntil = epoch + settings.ephemerisLifetime }
        let time = GNSSTime(nanosecondsSinceEpoch: settings.startTime.nanosecondsSinceEpoch
            + epoch.clampedNanoseconds)
        let satellites = satellites(at: epoch, tracking: fixed)
        let frames = isUBlox
            ? SimulatedEpoch.ublox(time: time, position: fixed ? position(at: epoch) : nil, settings: settings,
                                   satellites: satellites, nmea: nmeaOutput, ubx: ubxOutput)
            : SimulatedEpoch.mtk(time: time, position: fixed ? position(at: epoch) : nil, settings: settings,
                                 satellites: satellites, rates: mtkRates)
        let before = output.bytes.count
        for frame in frames { send(frame, now: epoch, output: &output) }
        if output.bytes.count > before || frames.isEmpty {
            epochsSent += 1
            if fixed { fixesSent += 1 }
        }
        if fixed && !silent {
            ppsSequence += 1
            output.pulses.append(EdgeEvent(kind: .rising, timestamp: epoch, clock: .monotonic, sequence: ppsSequence))
        }
    }

    // MARK: Host bytes

    mutating func receive(_ bytes: [UInt8], now: Duration, output: inout Output) {
        guard mainPower, !reset, !bytes.isEmpty else { return }
        switch mode {
        case .off, .booting, .perpetualBackup:
            return
        case .backup:
            // The bytes that wake a u-blox are lost.
            if backupWake.contains(.uartRX) { boot(now: now) }
            return
        case .standby:
            if !isUBlox, !standbyLine { wakeFromStandby(now: now, output: &output) }
            return
        case .acquiring, .tracking, .gnssStopped:
            break
        }
        if silent { return }
        intake.append(contentsOf: bytes)
        while let decoded = intake.next() {
            // A command is acted on at once and never kept, so it may share the decoder's buffer.
            guard case .message(let message) = decoded else { continue }
            handle(message, now: now, output: &output)
            // A command may have put the receiver to sleep: the rest is not read.
            if mode == .backup || mode == .standby || mode == .perpetualBackup || mode == .booting { break }
        }
    }

    mutating func handle(_ message: Message, now: Duration, output: inout Output) {
        switch message {
        case .ubx(let ubx) where isUBlox:
            handleUBX(ubx, now: now, output: &output)
        case .nmea(.pmtk(let pmtk)) where !isUBlox:
            handlePMTK(pmtk, now: now, output: &output)
        default:
            return
        }
    }

    mutating func acknowledge(_ id: UBX.MessageID, now: Duration, output: inout Output) {
        if ignoreConfiguration { return }
        let ack = UBXAck(id)
        send(rejectConfiguration ? ack.nakFrame : ack.ackFrame, now: now, output: &output)
    }

    mutating func handleUBX(_ message: UBXMessage, now: Duration, output: inout Output) {
        switch message {
        case .poll(.monVER):
            commands.append("MON-VER poll")
            let version = UBXMonVER(
                softwareVersion: "ROM CORE 1.00 (simulated)", hardwareVersion: "00190000",
                extensions: ["FWVER=SIM 1.00", "PROTVER=" + String(format2: protocolVersion), "MOD=" + settings.model])
            send(version.frame, now: now, output: &output)
        case .cfgValSet(let valset):
            commands.append("CFG-VALSET")
            guard protocolVersion >= 27 else {
                send(UBXAck(.cfgVALSET).nakFrame, now: now, output: &output)
                return
            }
            if !rejectConfiguration && !ignoreConfiguration {
                for item in valset.items { apply(item) }
            }
            acknowledge(.cfgVALSET, now: now, output: &output)
        case .cfgMsg(let msg):
            commands.append("CFG-MSG \(msg.message)")
            if !rejectConfiguration && !ignoreConfiguration {
                let rate = msg.rates.count == 1 ? msg.rates[0] : (msg.rates.count > 1 ? msg.rates[1] : 0)
                setUBXOutput(msg.message, rate > 0)
            }
            acknowledge(.cfgMSG, now: now, output: &output)
        case .cfgRate(let rate):
            commands.append("CFG-RATE")
            if !rejectConfiguration && !ignoreConfiguration, rate.measRate >= 25 {
                period = .milliseconds(Int(rate.measRate))
            }
            acknowledge(.cfgRATE, now: now, output: &output)
        case .cfgPrt:
            commands.append("CFG-PRT")
            acknowledge(.cfgPRT, now: now, output: &output)
        case .cfgRst(let rst):
            commands.append("CFG-RST \(rst.resetMode)")
            switch rst.resetMode {
            case 0x08:
                if mode == .acquiring || mode == .tracking { enter(.gnssStopped, now: now) }
            case 0x09:
                if mode == .gnssStopped { resume(now: now) }
            default:
                if rst.navBbrMask == 0xFFFF { ephemerisUntil = nil }
                boot(now: now)
            }
        case .rxmPMREQ(let request):
            commands.append("RXM-PMREQ")
            guard request.flags & UBXRxmPmReq.flagBackup != 0 else { return }
            backupWake = request.wakeupSources ?? [.uartRX, .extint0]
            backupUntil = request.duration > 0 ? now + .milliseconds(Int(request.duration)) : nil
            enter(.backup, now: now)
        case .other(let id, _) where id.messageClass == UBX.Class.cfg:
            commands.append("\(id)")
            send(UBXAck(id).nakFrame, now: now, output: &output)
        default:
            return
        }
    }

    mutating func apply(_ item: UBXConfigItem) {
        switch item.key {
        case UBXConfigItem.rateMeas:
            if item.value >= 25 { period = .milliseconds(Int(item.value)) }
        case 0x2091_0006, 0x2091_0007: setUBXOutput(.navPVT, item.value > 0)
        case 0x2091_0015, 0x2091_0016: setUBXOutput(.navSAT, item.value > 0)
        case 0x2091_005B, 0x2091_005C: setUBXOutput(.navTimeUTC, item.value > 0)
        default: return
        }
    }

    mutating func setUBXOutput(_ id: UBX.MessageID, _ on: Bool) {
        if on { ubxOutput.insert(id) } else { ubxOutput.remove(id) }
    }

    mutating func handlePMTK(_ message: PMTKMessage, now: Duration, output: inout Output) {
        guard case .other(let number, let fields) = message else { return }
        commands.append("PMTK\(number)")
        func ack(_ flag: Int) {
            send(PMTKMessage.ack(command: number, flag: flag).sentence(), now: now, output: &output)
        }
        switch number {
        case 0:
            ack(3)
        case 314, 220:
            if ignoreConfiguration { return }
            if rejectConfiguration { return ack(2) }
            if number == 314 {
                let rates = fields.map { Int($0) ?? 0 }
                if rates.count >= 6 {
                    mtkRates = PMTK.SentenceRates(gll: rates[0], rmc: rates[1], vtg: rates[2], gga: rates[3],
                                                  gsa: rates[4], gsv: rates[5], zda: rates.count > 17 ? rates[17] : 0)
                }
            } else if let milliseconds = fields.first.flatMap({ Int($0) }), milliseconds >= 100 {
                period = .milliseconds(milliseconds)
            }
            ack(3)
        case 161:
            ack(3)
            enter(.standby, now: now)
        case 225:
            ack(3)
            if fields.first == "4" { enter(.perpetualBackup, now: now) }
        case 101, 102, 103:
            if number == 103 { ephemerisUntil = nil }
            boot(now: now)
        case 605:
            send(PMTKMessage.firmware(release: "AXN_5.1.7_3333_19020118", buildID: "0027", model: settings.model,
                                      extra: ["1.0"]).sentence(), now: now, output: &output)
        default:
            ack(1)
        }
    }

    // MARK: Faults

    mutating func inject(_ fault: SimulatedReceiver.Fault, now: Duration, output: inout Output) {
        switch fault {
        case .garbage(let count):
            guard mode.isNavigating || mode == .gnssStopped, !silent else { return }
            for _ in 0..<count { output.bytes.append(UInt8.random(in: 0...255, using: &random)) }
        case .corruptFrames(let count): corruptFrames += count
        case .stall(let duration): stallUntil = now + duration
        case .silent: silent = true
        case .rejectConfiguration: rejectConfiguration = true
        case .ignoreConfiguration: ignoreConfiguration = true
        }
    }

    mutating func clearFaults() {
        silent = false
        rejectConfiguration = false
        ignoreConfiguration = false
        corruptFrames = 0
        stallUntil = nil
    }
}

extension String {
    /// A number with two decimals (`27.31`), as MON-VER's PROTVER prints it.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        self = "\(hundredths / 100)." + (fraction < 10 ? "0\(fraction)" : "\(fraction)")
    }
}
