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
public final class Receiver: Sendable {
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

    /// Whether the receiver is working right now rather than waiting: a power-on or power-off
    /// sequence that is not waiting for time or for the receiver to answer, or a derived signal
    /// still on its way to (or from) the shared session. A derived signal that waits for a
    /// session which itself waits for time (the board's minimum off time, a power-off's pause
    /// before it drives a line again) is waiting, not working. A driver of a manual clock waits
    /// for this to clear before it moves time on.
    public var isBusy: Bool {
        let base = events.state
        let sessionWaits = session.isWaiting
        if (base == .starting || base == .stopping) && !sessionWaits { return true }
        let baseUp = base == .starting || base == .running || base == .lingering
        // Not `.failed`: a derived signal starting next to a failed session has not subscribed
        // it yet (its start hook is on its way), and a retry's back-off is not told apart.
        let baseWaitsForTime = base == .waitingToStart || (base == .stopping && sessionWaits)
        for state in [fixes.state, sky.state, pps.state, messages.state] {
            if state == .stopping || (state == .starting && !baseUp && !baseWaitsForTime) { return true }
        }
        return false
    }

    /// How long until the earliest time-out or pause of the power sequence in progress (nil when
    /// it waits for nothing timed).
    public var timeToNextDeadline: Duration? { session.timeToNextDeadline }

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
