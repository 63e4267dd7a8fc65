// The Receiver: one hardware session shared by every subscriber of every view.
public import GNSSProtocol
public import Signals

/// A GNSS receiver on a hat, powered only while somebody listens.
///
/// `events` is the base `RefCountedSignal`: its first subscriber (of it or of any derived
/// signal) runs the board's power-on sequence — switch on, wait for the receiver, configure
/// it — and its last one, after the linger, the power-off sequence. `fixes`, `sky`, `pps` and
/// `messages` are derived signals that share that one session; `fixes` and `sky` hand their
/// latest value to a new subscriber at once. Any failure (a busy GPIO line, a vanished device,
/// a receiver that never answers) reaches every subscriber as a ``ReceiverError`` after the
/// receiver has been switched off; the next subscriber starts afresh.
///
/// The hardware comes from a ``HardwareProvider``: the system's (`.system`, the default) for boards
/// on a UART or an I2C bus; GNSSHatSimulator's (`.simulated`) for the simulator boards.
///
/// ```swift
/// let receiver = try Receiver(board: BoardCatalog.load("uputronics-gps-rtc"))
/// for try await fix in receiver.fixes where fix.hasPosition {   // powers the receiver on
///     print(fix.latitude!, fix.longitude!)
///     break                                                     // last one out: off after the linger
/// }
/// ```
public final class Receiver: ActivityReporting {
    /// The board this receiver sits on.
    public let board: Board
    /// The hardware the receiver runs on (a ``BoardHardware``, a simulated hat, ...).
    public let hardware: any ReceiverHardware
    /// Every event of the hardware session (messages, epoch starts, provisional and complete fixes, sky
    /// views, PPS pulses, notices), decoded once for every view.
    public let events: RefCountedSignal<ReceiverEvent>
    /// The fix of each navigation epoch, once the epoch has ended (provisional fixes are in `events` only);
    /// the latest is replayed to new subscribers.
    public let fixes: RefCountedSignal<Fix>
    /// The sky view of each navigation epoch; the latest is replayed to new subscribers.
    public let sky: RefCountedSignal<SkyView>
    /// Time pulses from the board's PPS line (none on boards without one).
    public let pps: RefCountedSignal<PPSPulse>
    /// Every decoded message, in arrival order.
    public let messages: RefCountedSignal<Message>

    let session: HardwareSession
    /// Whether ``shutdown()`` ends the hardware too: it does when this receiver opened it.
    private let ownsHardware: Bool

    /// A receiver on `board`, on the hardware `provider` opens for it (the system's by default),
    /// with every timer (linger, time-outs, polling) on `clock`. The hardware ends with the
    /// receiver's ``shutdown()``. Throws ``NoHardwareProvider`` when `provider` does not serve the
    /// board, or what opening its hardware threw.
    public convenience init(
        board: Board, options: ReceiverOptions = ReceiverOptions(), hardware provider: some HardwareProvider = .system,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws {
        let hardware = try provider.hardware(for: board, clock: clock)
        self.init(hardware: hardware, options: options, ownsHardware: true)
    }

    /// A receiver on hardware made by its owner (a simulated hat a test drives, a rig's lines), on
    /// the hardware's board and clock. The hardware stays its owner's: ``shutdown()`` leaves it.
    public convenience init(on hardware: some ReceiverHardware, options: ReceiverOptions = ReceiverOptions()) {
        self.init(hardware: hardware, options: options, ownsHardware: false)
    }

    private init(hardware: any ReceiverHardware, options: ReceiverOptions, ownsHardware: Bool) {
        board = hardware.board
        self.hardware = hardware
        self.ownsHardware = ownsHardware
        let session = HardwareSession(hardware: hardware, options: options)
        self.session = session
        let configuration = SignalConfiguration(
            linger: options.linger ?? board.power.linger,
            minimumOffTime: board.power.minimumOffTime,
            replay: .none,
            restart: .onNextSubscriber
        )
        events = RefCountedSignal(configuration: configuration, clock: hardware.clock) { emitter in
            try await session.start(emitter)
        } stop: {
            await session.stop()
        }
        fixes = events.compactMap { event in
            if case .fix(let fix) = event { fix } else { nil }
        }
        sky = events.compactMap { event in
            if case .sky(let sky) = event { sky } else { nil }
        }
        pps = events.compactMap(configuration: SignalConfiguration(replay: .none)) { event in
            if case .pps(let pulse) = event { pulse } else { nil }
        }
        messages = events.compactMap(configuration: SignalConfiguration(replay: .none)) { event in
            if case .message(let message) = event { message } else { nil }
        }
    }

    /// How the receiver is reached now: its serial port and speed, or its I2C bus.
    public var link: HardwareLink { hardware.link }

    /// The device the receiver is read from: the UART's path (a simulated hat's pseudo-terminal) or
    /// the I2C bus's.
    public var devicePath: String { link.path }

    /// The power state now.
    public var powerState: PowerState { PowerState(events.state) }

    /// The power state now, then every change, until the receiver shuts down.
    public func powerStates() -> AsyncStream<PowerState> {
        let states = events.stateChanges()
        return AsyncStream { continuation in
            let task = Task {
                var last: PowerState?
                for await state in states {
                    let power = PowerState(state)
                    if power != last { continuation.yield(power) }
                    last = power
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Suspends until the power state satisfies `condition` (the current state counts).
    public func waitForPower(_ condition: @escaping @Sendable (PowerState) -> Bool) async {
        for await state in events.stateChanges() where condition(PowerState(state)) { return }
    }

    /// Whether the receiver has work in progress, for a driver of a manual clock: idle when its
    /// session only waits for time and no signal of it has a transition to make.
    ///
    /// It works while a line of its session's work works (a power-on or power-off sequence between
    /// its waits, the DDC poller between polls, a command being sent, a link failure being handed to
    /// the signal) or waits for a deadline that has passed; and while one of its signals has a
    /// transition due (a hook on its way or running, a timer whose time has come). The base signal's
    /// start or stop hook is the session's sequence, so it works only when the sequence does; a
    /// derived signal's start that waits for the base to run waits with it. `changes` counts the
    /// session's changes and the signals' transitions.
    public var activity: Activity {
        let work = session.clock.work
        let base = events.progress
        let derived = [fixes.progress, sky.progress, pps.progress, messages.progress]
        let changes = derived.reduce(work.changes &+ base.changes) { $0 &+ $1.changes }
        return Activity(isIdle: Self.isIdle(work: work, base: base, derived: derived), changes: changes)
    }

    private static func isIdle(work: ReceiverClock.Work, base: SignalProgress, derived: [SignalProgress]) -> Bool {
        guard work.othersWait else { return false }
        // The base's hook is the session's power sequence: it works while the sequence does.
        let baseHookRuns = base.state == .starting || base.state == .stopping
        if baseHookRuns {
            guard work.sequenceWaits == true else { return false }
        } else if base.isPending {
            return false
        }
        // A derived start waits for the base to run; while the base itself waits (its sequence, its
        // minimum off time), so does it, once it has reached that wait.
        let starting = derived.count { $0.state == .starting }
        let baseWaits = baseHookRuns || base.state == .waitingToStart
        if starting > 0 && !(baseWaits && base.startsWaitingForRunning == starting) { return false }
        return !derived.contains { $0.state != .starting && $0.isPending }
    }

    /// Suspends until `activity.changes` is no longer `changes` (at once if it is not): a change of
    /// the session's work or a transition of one of the signals. Returns early when the task is
    /// cancelled.
    public func waitForActivity(after changes: UInt64) async {
        let work = session.clock.work
        let progress = [events.progress, fixes.progress, sky.progress, pps.progress, messages.progress]
        guard progress.reduce(work.changes, { $0 &+ $1.changes }) == changes else { return }
        await withTaskGroup(of: Void.self) { group in
            let session = session
            group.addTask { await session.clock.waitForChange(after: work.changes) }
            group.addTask { [events] in await events.waitForProgress(after: progress[0].changes) }
            group.addTask { [fixes] in await fixes.waitForProgress(after: progress[1].changes) }
            group.addTask { [sky] in await sky.waitForProgress(after: progress[2].changes) }
            group.addTask { [pps] in await pps.waitForProgress(after: progress[3].changes) }
            group.addTask { [messages] in await messages.waitForProgress(after: progress[4].changes) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long until the earliest deadline the receiver waits for: one of its session's waits (a
    /// power sequence's pause or time-out, a request's time-out, the DDC poller's next poll) or a
    /// signal's timer (a linger, the minimum off time); nil when it waits for nothing timed. A
    /// driver of a manual clock moves time no further than this (a waiting task may not be asleep
    /// on the clock yet).
    public var timeToNextDeadline: Duration? {
        let session = session.clock.work.nextDeadline.map { max($0 - self.session.clock.now(), .zero) }
        let timers = [events.progress, fixes.progress, sky.progress, pps.progress, messages.progress]
            .compactMap(\.timeToTimer)
        return (timers + [session].compactMap { $0 }).min()
    }

    /// Counters: power-ons, time powered, time to first fix of each power-on, traffic.
    public var statistics: ReceiverStatistics { session.statistics }

    /// The framer's counters over every session (frames, discarded bytes, checksum failures).
    public var framerStatistics: FramerStatistics { session.framerStatistics }

    /// Suspends until the statistics satisfy `condition` (e.g. a number of epochs decoded).
    public func waitForStatistics(_ condition: @escaping @Sendable (ReceiverStatistics) -> Bool) async {
        await session.waitForStatistics(condition)
    }

    /// Switches the receiver off (at once, without linger) and ends every subscription with
    /// `SignalError.shutDown`; releases the GPIO lines. Hardware this receiver opened itself (through
    /// a provider) ends too.
    public func shutdown() async {
        await fixes.shutdown()
        await sky.shutdown()
        await pps.shutdown()
        await messages.shutdown()
        await events.shutdown()
        session.release()
        if ownsHardware { await hardware.shutdown() }
    }
}

extension PowerState {
    /// The power state a signal state stands for.
    public init(_ state: SignalState) {
        switch state {
        case .idle, .waitingToStart, .shutDown: self = .off
        case .starting: self = .poweringOn
        case .running: self = .on
        case .lingering: self = .lingering
        case .stopping: self = .poweringOff
        case .failed: self = .failed
        }
    }
}
