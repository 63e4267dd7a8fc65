// The Receiver: one hardware session shared by every subscriber of every view.
public import GNSSProtocol
public import Signals
public import LinuxSystem  // Lock; TimerThreadClock, the default clock

/// A GNSS receiver on a hat, powered only while somebody listens.
///
/// `demandEvents` is the base signal: its first subscriber (of it or of any view: `events`,
/// `fixes`, ...) runs the board's power-on sequence — switch on, wait for the receiver, configure
/// it — and its last one, after the linger, the power-off sequence. `events`, `fixes`, `sky`, `pps`
/// and `messages` are views that share that one session; `fixes` and `sky` hand their
/// latest value to a new subscriber at once. Any failure (a busy GPIO line, a vanished device,
/// a receiver that never answers) reaches every subscriber as a ``ReceiverError`` after the
/// receiver has been switched off; the next subscriber starts afresh.
///
/// Subscribers may say how much they need: ``fixes(every:maximumAge:accuracy:)`` wants a fix every
/// interval, and the receiver then spends only that (its own power save, or a duty cycle that
/// powers it on ahead of each due fix and off as soon as a fix is good enough; see ``powerPlan``).
/// Every other view (`events`, `fixes`, `sky`, `pps`, `messages`) counts as a continuous demand,
/// so a plain subscriber overrides any schedule at once.
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
    /// The base signal: every event, for subscriptions that carry a ``FixDemand`` (combined by
    /// ``FixDemand/policy``). Its first subscriber powers the receiver on, its aggregate demand
    /// chooses the power plan, its last subscriber powers it off after the linger. A subscription
    /// without a demand counts only; use `events` for one that needs every epoch.
    public let demandEvents: DemandSignal<ReceiverEvent, FixDemand>
    /// Every event of the hardware session (messages, epoch starts, provisional and complete fixes, sky
    /// views, PPS pulses, notices), decoded once for every view: `demandEvents` seen by a subscriber
    /// that needs every epoch (it counts as a continuous demand). An observer sees every event,
    /// whoever keeps the receiver on.
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
    /// The views made by ``fixes(for:)``, one per demand.
    private let scheduledViews = Lock<[FixDemand: RefCountedSignal<Fix>]>([:])

    /// A receiver on `board`, on the hardware `provider` opens for it (the system's by default),
    /// with every timer (linger, time-outs, polling) on `clock`. The hardware ends with the
    /// receiver's ``shutdown()``. Throws ``NoHardwareProvider`` when `provider` does not serve the
    /// board, or what opening its hardware threw.
    public convenience init(
        board: Board, options: ReceiverOptions = ReceiverOptions(), hardware provider: some HardwareProvider = .system,
        clock: some Clock<Duration> = TimerThreadClock()
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
        demandEvents = DemandSignal(
            configuration: configuration, demand: FixDemand.policy, clock: hardware.clock
        ) { emitter, demand in
            try await session.start(emitter, demand: demand)
        } replan: { demand in
            await session.replan(demand)
        } stop: {
            await session.stop()
        }
        events = demandEvents.withDemand(.continuous, configuration: SignalConfiguration(replay: .none))
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

    /// Fixes for a subscriber that needs one at least every `interval` (no older than
    /// `maximumAge`, at least as accurate as `accuracy` metres, gpsd's `eph`), and lets the receiver
    /// save power in between: the first fix that meets the accuracy once one is due, then none until
    /// the next is due. When a duty cycle's power-on finds no good enough fix within its budget, the
    /// subscriber gets the best one it saw, or the error ``ReceiverError/noFix(after:accuracy:)``
    /// (the subscription then ends; subscribe again for the next). Calls with the same demand share
    /// one signal.
    ///
    /// ```swift
    /// for try await fix in receiver.fixes(every: .seconds(600), accuracy: 10) {
    ///     report(fix)                     // the receiver is off again until the next one is due
    /// }
    /// ```
    public func fixes(every interval: Duration, maximumAge: Duration? = nil, accuracy: Double? = nil)
        -> RefCountedSignal<Fix>
    {
        fixes(for: .every(interval, maximumAge: maximumAge, accuracy: accuracy))
    }

    /// The fixes a subscriber with `demand` gets: `fixes` itself for a continuous demand (every
    /// epoch), else the schedule ``fixes(every:maximumAge:accuracy:)`` describes.
    public func fixes(for demand: FixDemand) -> RefCountedSignal<Fix> {
        guard let schedule = FixSchedule(demand: demand) else {
            // Every epoch; an accuracy asked (RTK corrections at or below the board's threshold) is a demand too.
            return demand == .continuous ? fixes : continuousFixes(demand)
        }
        return scheduledViews.withLock { views in
            if let view = views[demand] { return view }
            let rule = Lock(schedule)
            let clock = session.clock
            let view = demandEvents.withDemand(demand) { event -> Fix? in
                switch event {
                case .fix, .fixWindowClosed:
                    let decision = rule.withLock { $0.handle(event, now: clock.now()) }
                    switch decision {
                    case .skip: return nil
                    case .deliver(let fix): return fix
                    case .noFix(let after): throw ReceiverError.noFix(after: after, accuracy: demand.horizontalAccuracy)
                    }
                default:
                    return nil
                }
            }
            views[demand] = view
            return view
        }
    }

    /// Every fix, for a continuous subscriber that asks for an accuracy (the demand reaches the plan and the
    /// corrections feed; the fixes are not filtered).
    private func continuousFixes(_ demand: FixDemand) -> RefCountedSignal<Fix> {
        scheduledViews.withLock { views in
            if let view = views[demand] { return view }
            let view = demandEvents.withDemand(demand) { event -> Fix? in
                if case .fix(let fix) = event { fix } else { nil }
            }
            views[demand] = view
            return view
        }
    }

    /// The power plan now, with the reason it was chosen and what the receiver does under it.
    public var powerPlan: PowerPlanStatus { session.planStatus }

    /// The power plan now, then every change, until the receiver shuts down.
    public func powerPlans() -> AsyncStream<PowerPlanStatus> { session.planChanges() }

    /// How the receiver is reached now: its serial port and speed, or its I2C bus.
    public var link: HardwareLink { hardware.link }

    /// The device the receiver is read from: the UART's path (a simulated hat's pseudo-terminal) or
    /// the I2C bus's.
    public var devicePath: String { link.path }

    /// What the hardware is doing now (off, standby, backup, powering on, on, power save, powering
    /// off), why and since when: changed exactly when the session runs a power-on or power-off
    /// sequence or the receiver takes or leaves its own power save, whoever subscribes. A duty cycle
    /// shows `off` between its fixes; a lingering signal shows `on`.
    public var hardwarePower: HardwarePowerChange { session.hardwarePower.current }

    /// The hardware's power now, then every change (each timed on ``now``'s clock), until the
    /// receiver shuts down.
    public func hardwarePowerChanges() -> AsyncStream<HardwarePowerChange> { session.hardwarePower.changes() }

    /// Suspends until the hardware's power satisfies `condition` (the current one counts); returns
    /// that change. Returns nil when the receiver shuts down first.
    @discardableResult
    public func waitForHardwarePower(_ condition: @escaping @Sendable (HardwarePowerChange) -> Bool) async
        -> HardwarePowerChange?
    {
        for await change in hardwarePowerChanges() where condition(change) { return change }
        return nil
    }

    /// The receiver's clock: the time since the receiver was made. The instants of ``hardwarePower``
    /// and ``powerPlan`` are offsets on it.
    public var now: Duration { session.clock.now() }

    /// The signal's state now: whether somebody is served (on, lingering, ...), not what the hardware
    /// draws (see ``hardwarePower``; a duty cycle keeps this `on` between fixes).
    public var powerState: PowerState { PowerState(demandEvents.state) }

    /// The signal's state now, then every change, until the receiver shuts down.
    public func powerStates() -> AsyncStream<PowerState> {
        let states = demandEvents.stateChanges()
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
        for await state in demandEvents.stateChanges() where condition(PowerState(state)) { return }
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
    package var activity: Activity {
        let work = session.clock.work
        let tree = progressTree
        let changes = tree.all.reduce(work.changes) { $0 &+ $1.changes }
        return Activity(isIdle: Self.isIdle(work: work, tree: tree), changes: changes)
    }

    /// Every signal of the receiver, as the tree they form: the base, its children (`events`, the
    /// scheduled views of ``fixes(for:)``) and `events`' own children (`fixes`, `sky`, `pps`,
    /// `messages`).
    private struct ProgressTree {
        var base: SignalProgress
        var events: SignalProgress
        var views: [SignalProgress]
        var eventViews: [SignalProgress]
        var all: [SignalProgress] { [base, events] + views + eventViews }
    }

    private var progressTree: ProgressTree { progressTree(views: scheduledViews.withLock { Array($0.values) }) }

    private func progressTree(views: [RefCountedSignal<Fix>]) -> ProgressTree {
        ProgressTree(
            base: demandEvents.progress, events: events.progress, views: views.map(\.progress),
            eventViews: [fixes.progress, sky.progress, pps.progress, messages.progress])
    }

    private static func isIdle(work: ReceiverClock.Work, tree: ProgressTree) -> Bool {
        guard work.othersWait else { return false }
        // A power sequence outside the base's hooks (a duty cycle's power-on or -off) works too.
        if work.sequenceWaits == false { return false }
        // The base's hook is the session's power sequence: it works while the sequence does.
        let base = tree.base
        let baseHookRuns = base.state == .starting || base.state == .stopping
        if baseHookRuns || base.isReplanning {
            // A re-plan is a job of the session's too; a timer due meanwhile is work all the same.
            guard work.sequenceWaits == true, !(base.isReplanning && base.timeToTimer == .zero) else { return false }
        } else if base.isPending {
            return false
        }
        let baseWaits = baseHookRuns || base.state == .waitingToStart
        return childrenSettled(of: base, waiting: baseWaits, children: [tree.events] + tree.views)
            && childrenSettled(of: tree.events, waiting: tree.events.state == .starting, children: tree.eventViews)
    }

    /// A derived start waits for its upstream to run; while the upstream itself waits (its
    /// sequence, its minimum off time, its own upstream), so does it, once it has reached that wait.
    private static func childrenSettled(of parent: SignalProgress, waiting: Bool, children: [SignalProgress])
        -> Bool
    {
        let starting = children.count { $0.state == .starting }
        if starting > 0 && !(waiting && parent.startsWaitingForRunning == starting) { return false }
        return !children.contains { $0.state != .starting && $0.isPending }
    }

    /// Suspends until `activity.changes` is no longer `changes` (at once if it is not): a change of
    /// the session's work or a transition of one of the signals. Returns early when the task is
    /// cancelled.
    package func waitForActivity(after changes: UInt64) async {
        let work = session.clock.work
        let views = scheduledViews.withLock { Array($0.values) }
        let tree = progressTree(views: views)
        let progress = tree.all
        guard progress.reduce(work.changes, { $0 &+ $1.changes }) == changes else { return }
        await withTaskGroup(of: Void.self) { group in
            let session = session
            group.addTask { await session.clock.waitForChange(after: work.changes) }
            group.addTask { [demandEvents] in await demandEvents.waitForProgress(after: progress[0].changes) }
            group.addTask { [events] in await events.waitForProgress(after: progress[1].changes) }
            // The rest in the order of `ProgressTree.all`: the scheduled views, then events' own.
            for (index, signal) in (views + [fixes]).enumerated() {
                group.addTask { await signal.waitForProgress(after: progress[2 + index].changes) }
            }
            let offset = 2 + views.count
            group.addTask { [sky] in await sky.waitForProgress(after: progress[offset + 1].changes) }
            group.addTask { [pps] in await pps.waitForProgress(after: progress[offset + 2].changes) }
            group.addTask { [messages] in await messages.waitForProgress(after: progress[offset + 3].changes) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long until the earliest deadline the receiver waits for: one of its session's waits (a
    /// power sequence's pause or time-out, a request's time-out, the DDC poller's next poll, a duty
    /// cycle's next power-on) or a signal's timer (a linger, the minimum off time); nil when it
    /// waits for nothing timed. A driver of a manual clock moves time no further than this (a
    /// waiting task may not be asleep on the clock yet).
    public var timeToNextDeadline: Duration? {
        let session = session.clock.work.nextDeadline.map { max($0 - self.session.clock.now(), .zero) }
        let timers = progressTree.all.compactMap(\.timeToTimer)
        return (timers + [session].compactMap { $0 }).min()
    }

    // MARK: - RTK corrections

    /// Takes RTK corrections from `source`, a signal of RTCM 3 frames (nil: none any more). The receiver
    /// subscribes it only while it is powered, the aggregate demand's accuracy needs RTK (at or below
    /// the board's `corrections.rtkAccuracyMetres`, 0.5 m by default) on a board whose receiver takes
    /// RTCM 3, and it has a 3D fix; it cancels that subscription as soon as one of them goes, and the
    /// source's own linger then decides when its connection closes. Each frame is written to the
    /// receiver's link (UART, or u-blox DDC with every I2C write at least two bytes) on a task of its
    /// own; a link slower than the stream keeps the newest 16 frames and drops the older. A value the
    /// source replays (an old frame) is not written. On u-blox boards with `corrections.rtcm3` the
    /// power-on enables the port's RTCM 3 input and RXM-RTCM, whose verdicts ``corrections`` counts.
    ///
    /// With the NTRIP module (this module does not import it), a derived signal keeps the caster's
    /// connection tied to this subscription:
    ///
    /// ```swift
    /// receiver.useCorrections(client.corrections.map(configuration: .init(replay: .none)) { $0.frame })
    /// for try await fix in receiver.fixes(every: .seconds(60), accuracy: 0.02) {
    ///     print(fix.carrierSolution, fix.correctionAge ?? -1, fix.referenceStation ?? -1)
    /// }
    /// ```
    public func useCorrections(_ source: RefCountedSignal<RTCM3Frame>?) {
        session.corrections.attach(source)
    }

    /// The corrections feed now: whether it takes corrections (and why not), what it wrote, and the
    /// receiver's RXM-RTCM verdicts.
    public var corrections: CorrectionStatus { session.corrections.status }

    /// Suspends until the corrections feed's status satisfies `condition` (the current status counts).
    public func waitForCorrections(_ condition: @escaping @Sendable (CorrectionStatus) -> Bool) async {
        await session.corrections.wait(until: condition)
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
        session.hardwarePower.noteShutdown()
        for view in scheduledViews.withLock({ Array($0.values) }) { await view.shutdown() }
        await fixes.shutdown()
        await sky.shutdown()
        await pps.shutdown()
        await messages.shutdown()
        await events.shutdown()
        await demandEvents.shutdown()
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
