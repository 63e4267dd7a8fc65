// One hardware session: power on, open the link, wait for the receiver, configure it, decode
// what it sends into events; and the reverse. The Receiver's RefCountedSignal runs `start` for
// its first subscriber and `stop` after its last one (or after any failure), never overlapping.
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// What a Receiver may change from its board's settings.
public struct ReceiverOptions: Sendable {
    /// How long the receiver stays on after the last subscriber leaves (nil: the board's).
    public var linger: Duration?
    /// Whether to configure the receiver on power-on (nil: the board's `configuration.enabled`).
    public var configure: Bool?
    /// The navigation period to configure (nil: the board's).
    public var period: Duration?
    /// Whether `events` also carries `.provisionalFix`: each epoch's fix as soon as it has a position,
    /// before the epoch ends (the service's `--early-position`). Costs one more fix per epoch.
    public var provisionalFixes: Bool
    /// Where the aiding state is kept for a board whose power-off cuts the supply (see
    /// ``aidingStateDirectory(option:isRoot:environment:)``); nil: nothing is saved, every start
    /// after a cut is cold.
    public var stateDirectory: String?
    /// Where the aiding reads the wall clock and whether it is synchronised (the system's: `adjtimex`).
    public var aidingTime: AidingTimeSource

    public init(
        linger: Duration? = nil, configure: Bool? = nil, period: Duration? = nil, provisionalFixes: Bool = false,
        stateDirectory: String? = nil, aidingTime: AidingTimeSource = .system
    ) {
        self.aidingTime = aidingTime
        self.linger = linger
        self.configure = configure
        self.period = period
        self.provisionalFixes = provisionalFixes
        self.stateDirectory = stateDirectory
    }
}

/// The speeds tried, in this order, when the configured one yields no valid frame.
let commonSpeeds = [9600, 38400, 115200, 4800, 19200, 57600, 230400, 460800, 921600]

final class HardwareSession: Sendable {
    let board: Board
    /// The hardware the session runs on: its lines and openers, its link, its clock.
    let hardware: any ReceiverHardware
    let clock: ReceiverClock
    let lines: PowerLines
    let log: MessageLog
    let configure: Bool
    let period: Duration
    /// How received bytes are decoded (a new decoder for each power-on).
    let decoding: GNSSDecoder.Options
    /// Where the aiding state lives (nil: none is kept).
    let stateDirectory: String?
    let aidingTime: AidingTimeSource

    private struct State {
        var emitter: SignalEmitter<ReceiverEvent>?
        var transport: (any Transport)?
        var decoder = GNSSDecoder()
        var statistics = ReceiverStatistics()
        /// The framer's counters of the sessions before the current one.
        var framer = FramerStatistics()
        var poweredSince: Duration?
        var firstFixSeen = false
        var statisticsWaiters: [(condition: @Sendable (ReceiverStatistics) -> Bool,
                                 continuation: CheckedContinuation<Void, Never>)] = []
        /// The worker of the power sequence in progress (start, stop, or a BoardPower run).
        var sequence: ReceiverClock.Worker?
        /// Whether each fix with a position goes to the plan (a duty cycle's acquisition).
        var reportsFixes = false
        /// The last position with its accuracy, for the aiding state.
        var lastPosition: AidingState.Position?
        /// Where the stream is in its epochs, for the read loop's pauses.
        var epochs = EpochProgress(provisionalFixes: false)
    }

    private let state = Lock(State())
    /// The power plan's state (see HardwareSession+Plan.swift).
    let plan = Lock(PlanState())
    /// The plan's jobs, run one at a time.
    let planJobs: AsyncStream<PlanJob>.Continuation
    private let planStream: AsyncStream<PlanJob>
    let planObservers = PlanObservers()
    /// The hardware's power, as the plan's jobs drive it (see HardwareSession+Plan.swift).
    let hardwarePower = HardwarePowerRecord()
    /// RTK corrections: subscribed while they are needed, written to the receiver (CorrectionFeed.swift).
    let corrections: CorrectionFeed
    private let ppsThread = SerialThread(name: "gnss-pps")
    private let ppsControl = LoopControl()
    /// Wakes the PPS loop to stop, so it waits for edges with no time-out (no wake-ups between
    /// pulses). Without one (no eventfd to be had) waits time out after `edgeWakeCheckInterval`
    /// instead, which bounds how long `stop()` waits for the loop to notice.
    private let ppsWake = try? Waker()
    /// Sleeps on the session's clock, as the power sequence's wait.
    func sleep(for duration: Duration) async throws {
        try await clock.sleep(for: duration, as: state.withLock { $0.sequence })
    }

    /// The first message after `mark` that matches, or nil after `timeout` (the power sequence's wait).
    func firstMessage(
        after mark: UInt64, within timeout: Duration, where matches: @escaping @Sendable (Message) -> Bool
    ) async throws -> Message? {
        try await log.first(after: mark, within: timeout, as: state.withLock { $0.sequence }, where: matches)
    }

    /// The power sequence's worker, while one runs.
    var sequenceWorker: ReceiverClock.Worker? { state.withLock { $0.sequence } }

    /// Runs `body` as the power sequence: one worker on the session's record of its work, whose
    /// waits (``sleep(for:)``, ``firstMessage(after:within:where:)``) say the sequence waits for time.
    func asSequence<T>(_ body: () async throws -> T) async rethrows -> T {
        let worker = clock.beginWork(sequence: true)
        state.withLock { $0.sequence = worker }
        defer {
            state.withLock { $0.sequence = nil }
            clock.endWork(worker)
        }
        return try await body()
    }

    init(hardware: any ReceiverHardware, options: ReceiverOptions) {
        let board = hardware.board
        self.board = board
        self.hardware = hardware
        let clock = ReceiverClock(hardware.clock)
        self.clock = clock
        self.lines = PowerLines(board: board, gpio: hardware.access.gpio)
        self.log = MessageLog(clock: clock)
        self.configure = options.configure ?? board.configuration.enabled
        self.period = options.period ?? board.configuration.period
        self.decoding = GNSSDecoder.Options(provisionalFixes: options.provisionalFixes)
        self.stateDirectory = options.stateDirectory
        self.aidingTime = options.aidingTime
        (planStream, planJobs) = AsyncStream.makeStream(of: PlanJob.self)
        corrections = CorrectionFeed(boardTakesRTCM: board.corrections.rtcm3, clock: clock)
        startPlanLoop(planStream)
    }

    // MARK: - Statistics

    var statistics: ReceiverStatistics {
        let now = clock.now()
        return state.withLock { state in
            var statistics = state.statistics
            if let since = state.poweredSince { statistics.timePowered += now - since }
            Self.addPauses(of: state.transport, to: &statistics)
            return statistics
        }
    }

    /// The read pauses of a UART transport (its pacer's lock is taken under the session's, never the
    /// other way round).
    private static func addPauses(of transport: (any Transport)?, to statistics: inout ReceiverStatistics) {
        guard let uart = transport as? UARTTransport else { return }
        let pauses = uart.pauses
        statistics.readPauses += pauses.taken
        statistics.readPausesOverslept += pauses.overslept
    }

    /// The framer's counters over every session.
    var framerStatistics: FramerStatistics {
        state.withLock { state in
            var total = state.framer
            total += state.decoder.statistics.framer
            return total
        }
    }

    func waitForStatistics(_ condition: @escaping @Sendable (ReceiverStatistics) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if condition(state.statistics) { return true }
                state.statisticsWaiters.append((condition, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Changes the statistics under the lock and resumes the waiters whose condition now holds.
    private func updateStatistics(_ change: (inout ReceiverStatistics) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state.statistics)
            return Self.readyWaiters(&state)
        }
        for waiter in ready { waiter.resume() }
    }

    private static func readyWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard !state.statisticsWaiters.isEmpty else { return [] }
        var ready: [CheckedContinuation<Void, Never>] = []
        let statistics = state.statistics
        state.statisticsWaiters.removeAll { waiter in
            guard waiter.condition(statistics) else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }

    // MARK: - Start

    /// The signal's start: the plan for `demand`, which powers the receiver on. Throws a
    /// `ReceiverError`; the signal then runs `stop()`, which switches everything off whatever point
    /// this reached.
    func start(_ emitter: SignalEmitter<ReceiverEvent>, demand: FixDemand?) async throws {
        try await runPlanJob(.start(emitter, demand))
    }

    /// The signal's re-plan: the aggregate demand changed while the session runs.
    func replan(_ demand: FixDemand?) async {
        try? await runPlanJob(.replan(demand))
    }

    /// The signal's stop: the plan ends and the receiver powers off.
    func stop() async {
        try? await runPlanJob(.stop)
    }

    /// Where events go while the signal runs (across a duty cycle's power cycles).
    func setEmitter(_ emitter: SignalEmitter<ReceiverEvent>?) {
        state.withLock { $0.emitter = emitter }
    }

    var emitter: SignalEmitter<ReceiverEvent>? { state.withLock { $0.emitter } }

    /// Whether fixes go to the plan as they arrive.
    func reportFixes(_ on: Bool) {
        state.withLock { $0.reportsFixes = on }
    }

    var lastPosition: AidingState.Position? { state.withLock { $0.lastPosition } }

    /// Whether the current power-on has had a fix with a position.
    var sessionHadFix: Bool { state.withLock { $0.firstFixSeen } }

    /// The power-on sequence (strategies, link, first frame, configuration, PPS), as part of the
    /// plan's job. Throws a `ReceiverError`; `hardwareOff()` then switches everything off.
    func hardwareOn() async throws {
        let now = clock.now()
        state.withLock { state in
            state.decoder = GNSSDecoder(options: decoding)
            state.epochs = EpochProgress(provisionalFixes: decoding.provisionalFixes)
            state.poweredSince = now
            state.firstFixSeen = false
            state.statistics.powerOns += 1
            state.statistics.timesToFirstFix.append(nil)
            if state.statistics.timesToFirstFix.count > 100 { state.statistics.timesToFirstFix.removeFirst() }
            state.statistics.linkSpeed = nil
        }
        log.open()
        // Read once: the hardware's link may move between power-ons (a pseudo-terminal that came back).
        let link = hardware.link
        do {
            try lines.acquire()
            let transport = try openTransport(link)
            state.withLock { $0.transport = transport }
            let startReading = {
                transport.start(
                    onBytes: { [weak self] bytes in self?.received(bytes) ?? .none },
                    onFailure: { [weak self] error in self?.linkFailed(error, device: transport.name) }
                )
            }
            // A UART is read from before the power comes, so that no boot message is missed; a
            // DDC port is polled only once it is powered (an unpowered receiver would NAK every
            // poll), and keeps what it says meanwhile in its own buffer.
            let pollsOnlyWhenPowered = if case .i2c = link { true } else { false }
            if !pollsOnlyWhenPowered { startReading() }
            let mark = log.mark
            let runner = PowerStrategyRunner(session: self, transport: transport)
            for strategy in board.power.strategies {
                try await runner.powerOn(strategy)
            }
            if pollsOnlyWhenPowered { startReading() }
            try await awaitUp(after: mark, link: link, transport: transport)
            if configure {
                let configurator = Configurator(session: self, transport: transport)
                try await configurator.configure()
            }
            if let emitter { startPPS(emitter) }
            corrections.power(transport)
        } catch {
            updateStatistics { statistics in
                statistics.failedPowerOns += 1
                statistics.lastFailure = "\(error)"
            }
            throw error
        }
    }

    /// Opens `link` through the hardware's openers: a UART transport or a DDC one.
    func openTransport(_ link: HardwareLink) throws(ReceiverError) -> any Transport {
        switch link {
        case .serial(let uart):
            return try openUART(path: uart.path, speed: uart.baud, rtsCts: uart.rtsCts)
        case .i2c(let i2c):
            let bus: any I2CBus
            do {
                bus = try hardware.access.openI2C(i2c.bus)
            } catch {
                throw .link(device: i2c.path, Self.fault(error, device: i2c.path))
            }
            return DDCTransport(port: UBloxDDC(bus: bus, address: i2c.address), period: period, clock: clock)
        }
    }

    private func openUART(path: String, speed: Int, rtsCts: Bool) throws(ReceiverError) -> UARTTransport {
        let link: any SerialLink
        do {
            link = try hardware.access.openSerial(path, speed, rtsCts)
        } catch {
            throw .link(device: path, Self.fault(error, device: path))
        }
        do {
            // Bytes from before this session (a receiver left running, a previous session's
            // tail) would be decoded as if they were new.
            try link.discardInput()
        } catch {
            link.close()
            throw .link(device: path, Self.fault(error, device: path))
        }
        updateStatistics { $0.linkSpeed = speed }
        return UARTTransport(link: link, name: path, speed: speed)
    }

    static func fault(_ error: any Error, device: String) -> any HardwareFault {
        (error as? any HardwareFault) ?? SerialError.failed(FailedCall(call: "\(error)", device: device, errno: nil))
    }

    /// Waits for the first valid frame after `mark`; on a UART that stays silent, tries the
    /// common speeds and says which one worked.
    private func awaitUp(after mark: UInt64, link: HardwareLink, transport: any Transport) async throws {
        let timeout = board.power.upTimeout
        if try await firstMessage(after: mark, within: timeout, where: { _ in true }) != nil { return }
        let configured: Int
        let detect: Bool
        switch link {
        case .serial(let uart): (configured, detect) = (uart.baud, uart.detectSpeed)
        case .i2c: (configured, detect) = (0, false)
        }
        guard detect, let uart = transport as? UARTTransport else {
            throw ReceiverError.noResponse(
                device: transport.name, waited: timeout, speedsTried: configured > 0 ? [configured] : [])
        }
        var tried = [configured]
        let window = max(period + .milliseconds(500), .milliseconds(1500))
        for speed in commonSpeeds where speed != configured {
            do {
                try uart.setSpeed(speed)
            } catch {
                continue
            }
            state.withLock { state in
                state.decoder.reset()
                state.epochs = EpochProgress(provisionalFixes: decoding.provisionalFixes)
            }
            let speedMark = log.mark
            tried.append(speed)
            if try await firstMessage(after: speedMark, within: window, where: { _ in true }) != nil {
                updateStatistics { $0.linkSpeed = speed }
                notice("\(transport.name): the receiver answered at \(speed) baud, not the configured \(configured)")
                return
            }
        }
        try? uart.setSpeed(configured)
        throw ReceiverError.noResponse(device: transport.name, waited: timeout + window * (tried.count - 1),
                                       speedsTried: tried)
    }

    // MARK: - Running

    /// Decodes bytes from the reader and emits what they complete, in the decoder's order. The events go
    /// out as soon as the chunk is decoded (the service's TPV follows from a fix), before the session's
    /// own bookkeeping: its message log and the waiters on statistics. Returns what the chunk did to the
    /// epochs, by which a UART's read loop paces its reads.
    private func received(_ bytes: [UInt8]) -> EpochMarks {
        let (emitter, outputs, ready, report, marks) = state.withLock { state in
            bytes.withUnsafeBytes { state.decoder.append($0) }
            state.statistics.bytesReceived += bytes.count
            var outputs: [GNSSDecoder.Output] = []
            while let output = state.decoder.next() {
                count(output, in: &state)
                state.epochs.observe(output)
                if case .message(let message) = output {
                    // Kept past the next append (by subscribers, the log): copied if it shares the decoder's buffer.
                    outputs.append(.message(message.owned))
                } else {
                    outputs.append(output)
                }
            }
            return (state.emitter, outputs, Self.readyWaiters(&state), state.reportsFixes, state.epochs.endChunk())
        }
        if let emitter {
            for output in outputs { ReceiverEvent.forEach(of: output) { emitter.send($0) } }
        }
        if report {
            for case .epoch(let epoch) in outputs {
                if let fix = epoch.fix, fix.hasPosition { enqueuePlanJob { .fix(fix, $0) } }
            }
        }
        feedCorrections(outputs)
        log.record(outputs)
        for waiter in ready { waiter.resume() }
        return marks
    }

    /// What the corrections feed needs of a chunk's outputs: each fix's mode, and the receiver's RXM-RTCM.
    private func feedCorrections(_ outputs: [GNSSDecoder.Output]) {
        for output in outputs {
            switch output {
            case .epoch(let epoch):
                if let fix = epoch.fix { corrections.fixMode(fix.mode) }
            case .message(.ubx(.rxmRTCM(let report))):
                corrections.confirm(report)
            default:
                break
            }
        }
    }

    /// The statistics one decoder output changes: messages, decode errors, epochs, fixes and the time to
    /// the session's first fix, and what MON-VER says.
    private func count(_ output: GNSSDecoder.Output, in state: inout State) {
        switch output {
        case .message(let message):
            state.statistics.messages += 1
            if case .ubx(.monVER(let version)) = message {
                state.statistics.protocolVersion = version.protocolVersion ?? state.statistics.protocolVersion
                state.statistics.firmware = version.softwareVersion
            }
        case .undecodable:
            state.statistics.decodeErrors += 1
        case .epoch(let epoch):
            state.statistics.epochs += 1
            guard let fix = epoch.fix, fix.hasPosition else { return }
            state.statistics.fixes += 1
            if let latitude = fix.latitude, let longitude = fix.longitude {
                state.lastPosition = AidingState.Position(
                    latitude: latitude, longitude: longitude, altitude: fix.altitudeHAE ?? fix.altitudeMSL ?? 0,
                    accuracy: fix.eph ?? 100)
            }
            if !state.firstFixSeen, let since = state.poweredSince {
                state.firstFixSeen = true
                let count = state.statistics.timesToFirstFix.count
                if count > 0 { state.statistics.timesToFirstFix[count - 1] = clock.now() - since }
            }
        case .epochStarted, .provisionalFix:
            break
        }
    }

    /// The read loop failed: the failure is counted, the waits for messages end, and the signal
    /// fails (it then runs `stop()`). Work of its own until the signal has the failure.
    private func linkFailed(_ error: any Error, device: String) {
        let handling = clock.beginWork()
        defer { clock.endWork(handling) }
        let fault = Self.fault(error, device: device)
        let failure: ReceiverError =
            fault.deviceIsGone ? .deviceGone(device: device, fault) : .link(device: device, fault)
        let emitter = state.withLock { $0.emitter }
        updateStatistics { statistics in
            statistics.sessionFailures += 1
            statistics.lastFailure = "\(failure)"
        }
        log.close(failure)
        hardwarePower.noteFailure(failure)
        emitter?.fail(failure)
    }

    func notice(_ text: String) {
        let emitter = state.withLock { $0.emitter }
        emitter?.send(.notice(text))
    }

    /// Sends bytes to the receiver, counting them: work of its own until the link has them.
    func send(_ bytes: [UInt8], through transport: any Transport) async throws {
        let sending = clock.beginWork()
        defer { clock.endWork(sending) }
        updateStatistics { $0.bytesSent += bytes.count }
        do {
            try await transport.send(bytes)
        } catch {
            let fault = Self.fault(error, device: transport.name)
            throw fault.deviceIsGone
                ? ReceiverError.deviceGone(device: transport.name, fault)
                : ReceiverError.link(device: transport.name, fault)
        }
    }

    // MARK: - PPS

    private func startPPS(_ emitter: SignalEmitter<ReceiverEvent>) {
        let source: any EdgeEventSource
        do {
            guard let found = try lines.pps() else { return }
            source = found
        } catch {
            // PPS is an extra: a line held elsewhere (the kernel's pps-gpio, say) is reported
            // and the session runs without it.
            notice("PPS is not available: \(error)")
            return
        }
        ppsControl.begin()
        // Before the loop's thread runs: an edge that comes meanwhile is on its way to the loop.
        source.readingStarted()
        do {
            try ppsThread.async { [self] in ppsLoop(source, emitter) }
        } catch {
            notice("PPS is not available: \(error)")
            source.readingEnded()
            lines.dropPPS()
            ppsControl.ended()
        }
    }

    private func ppsLoop(_ source: any EdgeEventSource, _ emitter: SignalEmitter<ReceiverEvent>) {
        while ppsControl.isRunning {
            do {
                let edge = if let ppsWake {
                    try source.nextEdge(until: ppsWake)
                } else {
                    try source.nextEdge(timeout: edgeWakeCheckInterval)
                }
                if let edge {
                    emitter.send(.pps(PPSPulse(edge: edge)))
                }
            } catch {
                if ppsControl.isRunning { notice("PPS stopped: \(error)") }
                lines.dropPPS()
                break
            }
        }
        source.readingEnded()
        ppsControl.ended()
    }

    // MARK: - Stop

    /// The power-off sequence: reading stops first (so nothing polls a receiver whose power is
    /// going), then every strategy's off action in reverse order (each tried even if an earlier
    /// one failed), then the link closes. Never throws: failures are recorded. Part of the plan's job.
    func hardwareOff() async {
        corrections.power(nil)
        await ppsControl.stop(waking: { ppsWake?.wake() })
        let transport = state.withLock { $0.transport }
        await transport?.stopReading()
        let runner = PowerStrategyRunner(session: self, transport: transport)
        var failures: [String] = []
        var supplyCut = false
        for strategy in board.power.strategies.reversed() {
            do {
                try await runner.powerOff(strategy)
                if strategy == .gpioEnable { supplyCut = true }
            } catch {
                failures.append("\(strategy): \(error)")
            }
        }
        await transport?.close()
        log.close(CancellationError())
        let now = clock.now()
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            Self.addPauses(of: state.transport, to: &state.statistics)
            state.transport = nil
            state.reportsFixes = false
            if let since = state.poweredSince {
                state.statistics.timePowered += now - since
                state.poweredSince = nil
            }
            // A failed software action (a backup command to a receiver that went away) leaves
            // nothing powered once an enable line has cut the supply.
            let failure = failures.isEmpty ? nil : "power-off: " + failures.joined(separator: "; ")
            if let failure { state.statistics.lastFailure = failure }
            state.statistics.powerOffFailure = supplyCut ? nil : failure
            if !supplyCut && failure != nil { state.statistics.failedPowerOffs += 1 }
            state.framer += state.decoder.statistics.framer
            state.decoder = GNSSDecoder(options: decoding)
            return Self.readyWaiters(&state)
        }
        for waiter in ready { waiter.resume() }
    }

    /// The transport of the running session, if one runs.
    var currentTransport: (any Transport)? { state.withLock { $0.transport } }

    /// Releases the lines (the Receiver shuts down).
    func release() {
        corrections.release()
        planJobs.finish()
        planObservers.finish()
        hardwarePower.finish()
        lines.releaseAll()
    }
}
