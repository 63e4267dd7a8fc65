// A virtual receiver: a u-blox (UBX + NMEA) or an MTK (NMEA + PMTK) that boots when powered,
// takes a cold, hot or aided time to its first fix, dumps and takes back its navigation database, has a
// power save of its own, follows a scripted trajectory, answers and obeys
// configuration and power commands, and misbehaves on request. It writes its output to any
// sink (a pseudo-terminal, an in-process link, a DDC simulator's control device) and takes
// host bytes from whoever reads that sink. Every encoding is GNSSProtocol's.
import GNSSHat
public import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// A simulated GNSS receiver.
public final class SimulatedReceiver: Sendable {
    /// 2025-06-21 10:00:00 UTC: a fixed start so that simulations repeat exactly.
    public static let defaultStartTime = GNSSTime(
        date: GNSSDate(year: 2025, month: 6, day: 21), time: TimeOfDay(hour: 10, minute: 0, second: 0))

    public let settings: Settings
    public let timing: Timing
    let clock: SimulationClock
    private let state: Lock<ReceiverMachine>
    /// In a struct, not as the lock's state itself: a closure that is a `Lock`'s whole state comes back
    /// from `withLock { $0 }` wrapped in two more reabstraction thunks each time, and is stored back so
    /// (Swift 6.3.1, debug and release builds): each call then runs through every earlier read's thunks,
    /// memory grows with every delivery, and a day's chain overflows the stack (scripts/soak.sh found it).
    private struct Sink {
        var send: (@Sendable ([UInt8]) -> Void)?
    }

    private let sink = Lock(Sink())
    private let timer = Lock<(generation: UInt64, task: Task<Void, Never>?)>((0, nil))
    /// The receiver's time pulse, as a GPIO edge source.
    public let ppsOutput = SimulatedEdgeSource(name: "simulated PPS")

    public init(settings: Settings, clock: some Clock<Duration>, timing: Timing = .selfTimed) {
        self.settings = settings
        self.timing = timing
        self.clock = SimulationClock(clock)
        state = Lock(ReceiverMachine(settings: settings))
    }

    /// Sends the receiver's output to `sink` from now on (nil: nowhere).
    public func connect(output: (@Sendable ([UInt8]) -> Void)?) {
        sink.withLock { $0.send = output }
    }

    // MARK: - Observing

    /// What the receiver is doing now.
    public var mode: Mode { state.withLock { $0.mode } }

    /// Time spent in each mode so far.
    public var timeInModes: [Mode: Duration] {
        let now = clock.now()
        return state.withLock { machine in
            var times = machine.timeIn
            times[machine.mode, default: .zero] += now - machine.modeSince
            return times
        }
    }

    /// Every change of mode so far, oldest first, on the receiver's clock (the most recent 10,000; it
    /// starts `off` at zero): when the receiver was really powered (any mode but `off`: its main supply
    /// on and out of reset), in its power save, in backup.
    public var modeChanges: [ModeChange] { state.withLock { $0.modeChanges } }

    /// The receiver's clock now: the time since it was made, which ``modeChanges`` are on.
    public var now: Duration { clock.now() }

    /// The starts so far, cold, hot or aided, in order.
    public var starts: [Start] { state.withLock { $0.starts } }

    /// The aiding taken and the database dumps sent so far.
    public var aidingReceived: AidingCounts { state.withLock { $0.aidingCounts } }

    /// Whether the receiver acknowledges aiding messages with MGA-ACK now (CFG-NAVX5, CFG-NAVSPG-ACKAIDING).
    public var acknowledgesAiding: Bool { state.withLock { $0.ackAiding } }

    /// The update period of the receiver's own power save when it is switched on (it is in mode
    /// ``Mode/powerSave`` from its first fix); nil in continuous operation.
    public var powerSaveInterval: Duration? { state.withLock { $0.powerSave.interval } }

    /// Navigation epochs sent, and those with a fix.
    public var epochsSent: Int { state.withLock { $0.epochsSent } }
    public var fixesSent: Int { state.withLock { $0.fixesSent } }

    /// The names of the commands received, in order (`MON-VER poll`, `CFG-VALSET`, `PMTK314`…).
    public var commandsReceived: [String] { state.withLock { $0.commands } }

    /// The navigation period now in force.
    public var period: Duration { state.withLock { $0.period } }

    /// Whether the receiver sends UBX NAV-PVT (enabled by configuration).
    public var sendsNavPVT: Bool { state.withLock { $0.ubxOutput.contains(.navPVT) } }

    /// What the receiver made of the RTCM 3 it was sent (see ReceiverMachineRTK.swift).
    public struct RTCMIntake: Sendable, Hashable {
        /// Whether its port takes RTCM 3 now (CFG-UART1INPROT-RTCM3X) and reports each message (RXM-RTCM).
        public var inputEnabled: Bool
        public var reportsMessages: Bool
        /// Messages used, not used, and frames whose CRC-24Q failed, since the receiver was made.
        public var used: Int
        public var notUsed: Int
        public var crcFailed: Int
        /// The reference station it knows (from 1005/1006), if any.
        public var station: Int?
    }

    public var rtcmIntake: RTCMIntake {
        state.withLock { machine in
            let rtk = machine.rtk
            return RTCMIntake(inputEnabled: rtk.inputEnabled, reportsMessages: rtk.reportsMessages, used: rtk.used,
                              notUsed: rtk.notUsed, crcFailed: rtk.crcFailed, station: rtk.station)
        }
    }

    /// How long until the next event (boot end, epoch, wake-up), for a driver of a `.driven`
    /// receiver; nil when nothing is due until something else happens.
    public var timeToNextEvent: Duration? {
        let now = clock.now()
        return state.withLock { $0.nextDeadline() }.map { max($0 - now, .zero) }
    }

    // MARK: - Lines

    /// Switches the main supply.
    public func setMainPower(_ on: Bool) {
        change { machine, now, output in machine.setMainPower(on, now: now, output: &output) }
    }

    /// Drives the reset input (asserted: held in reset).
    public func setReset(_ asserted: Bool) {
        change { machine, now, output in machine.setReset(asserted, now: now, output: &output) }
    }

    /// Drives the standby input (asserted: standby).
    public func setStandby(_ asserted: Bool) {
        change { machine, now, output in machine.setStandby(asserted, now: now, output: &output) }
    }

    /// Drives the FORCE_ON input: a pulse leaves perpetual backup.
    public func setForceOn(_ asserted: Bool) {
        change { machine, now, output in machine.setForceOn(asserted, now: now, output: &output) }
    }

    /// Drives the EXTINT input: a rising edge wakes a u-blox from backup when EXTINT0 is a wake source.
    public func setExtint(_ asserted: Bool) {
        change { machine, now, output in machine.setExtint(asserted, now: now, output: &output) }
    }

    // MARK: - Host traffic and faults

    /// Bytes from the host: commands, or a wake-up.
    public func receive(_ bytes: [UInt8]) {
        change { machine, now, output in machine.receive(bytes, now: now, output: &output) }
    }

    /// Injects a fault.
    public func inject(_ fault: Fault) {
        change { machine, now, output in machine.inject(fault, now: now, output: &output) }
    }

    /// Ends every fault.
    public func clearFaults() {
        change { machine, _, _ in machine.clearFaults() }
    }

    /// Handles every event due by the clock's time now (`.driven` timing).
    public func tick() {
        change { machine, now, output in machine.advance(to: now, output: &output) }
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
    private func change(_ body: (inout ReceiverMachine, Duration, inout ReceiverOutput) -> Void) {
        let now = clock.now()
        let output = state.withLock { machine -> ReceiverOutput in
            var output = ReceiverOutput()
            machine.advance(to: now, output: &output)
            body(&machine, now, &output)
            return output
        }
        deliver(output)
        if timing == .selfTimed { reschedule() }
    }

    private func deliver(_ output: ReceiverOutput) {
        if !output.bytes.isEmpty, let send = sink.withLock({ $0.send }) { send(output.bytes) }
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
