// The real Receiver on the simulated hat, end to end through the guest kernel: a subscription
// switches GNSS_PWR_EN on through libgpiod, the simulated receiver (HatSimulator, watching that
// line from outside) starts talking, fixes arrive through I2C_RDWR or termios, and the last
// subscriber's cancellation switches the line off after the linger and stops DDC polling. The
// boards are the rig's guest-only files (scripts/hil/boards, installed in /etc/gnss-hat/boards).
//
// Waits are conditions polled with a deadline (a bound on a hang, failing with what was
// awaited); the one fixed window is the observation that DDC polling has stopped.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
// Glibc: `symlink` (the simulated UART at a stable path) and `getpid`, calls no product code makes;
// the rig is test code, not under the seam.
import Glibc
import LinuxSystem
import PiHardware
import Signals

let receiverScenarios: [Scenario] = [
    Scenario("receiver.ddc-power-cycle") { try await checkPowerCycle(link: .ddc) },
    Scenario("receiver.uart-power-cycle") { try await checkPowerCycle(link: .uart) },
    Scenario("receiver.ddc-nak-storm") { try await checkNAKStorm() },
    Scenario("receiver.busy-line") { try await checkBusyLineWithReceiver() },
    Scenario("receiver.ddc-cut-restore") { try await checkCutAndRestore() },
]

/// The environment variable that breaks the driver on purpose (run.sh --self-test-failure):
/// `enable-never-set` drops every attempt to switch GNSS_PWR_EN on.
let brokenDriverVariable = "GNSSHAT_HIL_BROKEN"

/// The system's hardware, or — when the self-test asks for a broken driver — the system's with
/// an enable line that is never set.
func rigHardware() -> HardwareAccess {
    var hardware = HardwareAccess.system()
    if let broken = getenv(brokenDriverVariable), String(cString: broken) == "enable-never-set" {
        emit("hil: GNSS_PWR_EN is never set (\(brokenDriverVariable)=enable-never-set): Receiver scenarios must fail")
        hardware.gpio = EnableNeverSet(inner: hardware.gpio)
    }
    return hardware
}

/// GPIO lines whose GNSS_PWR_EN output ignores every request to switch it on.
struct EnableNeverSet: GPIOLines {
    let inner: any GPIOLines

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        guard address.line == .name("GNSS_PWR_EN") else {
            return try inner.output(address, initiallyActive: initiallyActive, activeLow: activeLow)
        }
        return NeverActive(inner: try inner.output(address, initiallyActive: false, activeLow: activeLow))
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        try inner.edges(address, edges, activeLow: activeLow, bias: bias)
    }

    final class NeverActive: OutputLine {
        let inner: any OutputLine
        init(inner: any OutputLine) { self.inner = inner }
        var name: String { inner.name }
        func setActive(_ active: Bool) throws { if !active { try inner.setActive(false) } }
        func isActive() throws -> Bool { try inner.isActive() }
    }
}

/// A subscription iterated by a task of its own: what it yielded and how it ended.
final class Collector<Value: Sendable>: Sendable {
    private struct State {
        var values: [Value] = []
        var error: (any Error)?
        var ended = false
    }

    private let state = Shared(State())
    private let subscription: SignalSubscription<Value>
    private let task: Task<Void, Never>

    init(_ subscription: SignalSubscription<Value>) {
        self.subscription = subscription
        task = Task { [state] in
            do {
                for try await value in subscription {
                    state.withLock { $0.values.append(value) }
                }
            } catch {
                state.withLock { $0.error = error }
            }
            state.withLock { $0.ended = true }
        }
    }

    var values: [Value] { state.withLock { $0.values } }
    var error: (any Error)? { state.withLock { $0.error } }
    var ended: Bool { state.withLock { $0.ended } }

    /// Ends the subscription (the Receiver's subscriber count drops) and waits for the task.
    func cancel() async {
        subscription.cancel()
        await task.value
    }
}

/// State shared by an object and the task it starts (a `Lock` cannot be captured).
final class Shared<State: Sendable>: Sendable {
    private let mutex: Lock<State>

    init(_ initial: State) {
        mutex = Lock(initial)
    }

    func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

/// Polls `condition` every 10 ms until it holds; fails after `limit`, or at once when one of
/// the subscriptions in `watching` has failed or the simulator has.
func eventually(
    _ what: String, within limit: Duration, watching subscriptions: [Collector<Fix>] = [],
    simulator: HatSimulator? = nil, _ condition: () throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while true {
        if try condition() { return }
        for subscription in subscriptions {
            if let error = subscription.error {
                throw ScenarioFailure("waiting for \(what): the subscription failed: \(error)")
            }
        }
        if let failure = simulator?.failure {
            throw ScenarioFailure("waiting for \(what): the simulator failed: \(failure)")
        }
        guard clock.now < deadline else { throw ScenarioFailure("\(what): not within \(limit)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Runs `body` with a Receiver on the board `boardName` and the simulator behind `port`, then
/// shuts both down, whether `body` failed or not.
func withReceiver(
    board boardName: String, port: SimulatorPort, lines: GPIOSimBank, options: ReceiverOptions = ReceiverOptions(),
    settings: SimulatedReceiver.Settings = HatSimulator.settings(),
    _ body: (Receiver, HatSimulator) async throws -> Void
) async throws {
    let board = try BoardCatalog.load(boardName)
    let simulator = try HatSimulator(port: port, lines: lines, settings: settings)
    let receiver = try Receiver(board: board, options: options, hardware: SystemHardware(access: rigHardware()))
    do {
        try await body(receiver, simulator)
    } catch {
        await receiver.shutdown()
        await simulator.stop()
        throw error
    }
    await receiver.shutdown()
    await simulator.stop()
}

/// The board's link is the simulated hat's: bus 1 of ubx_ddc_sim at 0x42, or /tmp/hil-uart.
func checkBoardLink(_ board: Board, link: RigLink) throws {
    switch (board.link, link) {
    case (.i2c(let i2c), .ddc):
        let bus = try DDCSimModule.busPath()
        try expect(i2c.path == bus && i2c.address == DDCSimModule.address,
                   "board \(board.name) reads \(board.link), the simulated receiver is at \(bus) 0x42")
    case (.uart(let uart), .uart):
        try expect(uart.path == RigLink.uartPath, "board \(board.name) reads \(uart.path)")
    default:
        throw ScenarioFailure("board \(board.name) has the link \(board.link), expected \(link)")
    }
}

/// The two ways the rig's receiver is linked.
enum RigLink: CustomStringConvertible {
    case ddc, uart

    /// The path hil-uart.json names: a symbolic link to the simulator's pseudo-terminal.
    static let uartPath = "/tmp/hil-uart"

    var boardName: String { self == .ddc ? "hil-ddc" : "hil-uart" }
    var description: String { self == .ddc ? "DDC (I2C)" : "UART (pseudo-terminal)" }

    /// The simulator's port; for a UART, a new pseudo-terminal behind `uartPath`.
    func makePort() throws -> SimulatorPort {
        switch self {
        case .ddc:
            return .ddc
        case .uart:
            let terminal = try PseudoTerminal(holdDeviceOpen: true)
            unlink(Self.uartPath)
            guard symlink(terminal.devicePath, Self.uartPath) == 0 else {
                throw SystemError.ofLastCall("symlink to \(terminal.devicePath)", on: Self.uartPath)
            }
            return .pseudoTerminal(terminal)
        }
    }
}

/// The position HatSimulator's receiver starts at (Board.Simulation's default trajectory).
let simulatedStart = (latitude: 51.4779, longitude: -0.0015)

/// Subscribe → GNSS_PWR_EN high → the simulated receiver boots → fixes through the real link
/// → cancel → the receiver lingers with the line still high → the line goes low → (DDC) no
/// transfer on the adapter after the power-off.
func checkPowerCycle(link: RigLink) async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    try expect(try !lines.level(of: "GNSS_PWR_EN"), "GNSS_PWR_EN is high before anybody subscribed")
    try await withReceiver(board: link.boardName, port: try link.makePort(), lines: lines) { receiver, simulator in
        try checkBoardLink(receiver.board, link: link)
        let states = PowerRecorder(receiver)
        let fixes = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
        try await eventually("GNSS_PWR_EN high after subscribing", within: .seconds(10), watching: [fixes],
                             simulator: simulator) { simulator.isPowered }
        try expect(try lines.level(of: "GNSS_PWR_EN"), "the simulator saw GNSS_PWR_EN high, sysfs reads it low")
        try await eventually("three fixes with a position over \(link)", within: .seconds(30), watching: [fixes],
                             simulator: simulator) { fixes.values.filter(\.hasPosition).count >= 3 }
        guard let fix = fixes.values.last(where: \.hasPosition), let latitude = fix.latitude,
              let longitude = fix.longitude else {
            throw ScenarioFailure("no position")
        }
        try expect(abs(latitude - simulatedStart.latitude) < 0.01 && abs(longitude - simulatedStart.longitude) < 0.01,
                   "the fix \(latitude), \(longitude) is not the simulated trajectory's")
        try expect(simulator.receiver.commandsReceived.contains("CFG-VALSET"),
                   "the receiver was not configured over \(link): \(simulator.receiver.commandsReceived)")
        try expect(simulator.receiver.sendsNavPVT, "NAV-PVT was not enabled by the configuration")
        let statistics = receiver.statistics
        try expect(statistics.bytesReceived > 0 && statistics.epochs >= 3, "statistics \(statistics)")
        if link == .ddc { try checkDDCTraffic(ddc, simulator) }

        await fixes.cancel()
        try await eventually("the receiver lingering after the last subscriber left", within: .seconds(5)) {
            receiver.powerState == .lingering || !simulator.isPowered
        }
        // Read between two looks at the state: if both say lingering, the level was read while
        // the receiver lingered, and must still be high.
        let before = receiver.powerState
        let levelWhileLingering = try lines.level(of: "GNSS_PWR_EN")
        let after = receiver.powerState
        try expect(before == .lingering && after == .lingering,
                   "the linger (1 s) was over before its level could be read: \(before) then \(after)")
        try expect(levelWhileLingering, "GNSS_PWR_EN went low while the receiver lingered")

        try await eventually("GNSS_PWR_EN low after the linger", within: .seconds(10), simulator: simulator) {
            !simulator.isPowered
        }
        try expect(try !lines.level(of: "GNSS_PWR_EN"), "the simulator saw GNSS_PWR_EN low, sysfs reads it high")
        try await eventually("the receiver off", within: .seconds(10)) { receiver.powerState == .off }
        try expect(simulator.powerChanges == [true, false], "the supply switched \(simulator.powerChanges)")

        if link == .ddc { try await checkNoDDCTransfersAfterPowerOff(ddc, simulator) }
        try await eventually("the power-state stream to report off", within: .seconds(5)) {
            states.seen.last == .off
        }
        let seen = await states.stop()
        let lingering = seen.firstIndex(of: .lingering) ?? seen.count
        let off = seen.lastIndex(of: .off) ?? -1
        try expect(lingering < off, "power states \(seen.map(\.description).joined(separator: " → ")): "
                   + "expected lingering, then off")
    }
}

/// The stream was read through I2C_RDWR, and the module and the simulator count the same host bytes.
func checkDDCTraffic(_ ddc: DDCSimModule, _ simulator: HatSimulator) throws {
    let stats = try ddc.stats()
    try expect((stats["stream_bytes"] ?? 0) > 0, "no stream byte was read through I2C_RDWR: \(stats)")
    try expect((stats["host_bytes"] ?? 0) == UInt64(simulator.hostBytes) && simulator.hostBytes > 0,
               "host bytes: the module counted \(stats["host_bytes"] ?? 0), the simulator got "
               + "\(simulator.hostBytes)")
}

/// DDC polling must have stopped with the session: bytes now waiting would be read by any poll, which
/// comes at least every second (the slowest back-off).
func checkNoDDCTransfersAfterPowerOff(_ ddc: DDCSimModule, _ simulator: HatSimulator) async throws {
    // (Output the receiver sent after the last poll may still wait: count from here.)
    let before = try ddc.stats()
    let transfers = before["transfers"] ?? 0
    guard let atPowerOff = simulator.transfersAtPowerOff else {
        throw ScenarioFailure("the simulator read no transfer count when GNSS_PWR_EN went low")
    }
    try expect(transfers == atPowerOff,
               "\(transfers - atPowerOff) transfers on the adapter after GNSS_PWR_EN went low")
    let pending = (before["pending"] ?? 0) + UInt64(navStatusPoll.count)
    try ddc.feed(navStatusPoll)
    try await Task.sleep(for: .seconds(2))
    let stats = try ddc.stats()
    try expect(stats["transfers"] == transfers,
               "\((stats["transfers"] ?? 0) - transfers) transfers on the adapter after the power-off")
    try expect(stats["pending"] == pending,
               "\(stats["pending"] ?? 0) bytes wait after the power-off, \(pending) were left")
}

/// Records the receiver's power states as they change.
final class PowerRecorder: Sendable {
    private let states = Shared<[PowerState]>([])
    private let task: Task<Void, Never>

    init(_ receiver: Receiver) {
        let stream = receiver.powerStates()
        task = Task { [states] in
            for await state in stream { states.withLock { $0.append(state) } }
        }
    }

    /// The states seen so far, in order.
    var seen: [PowerState] { states.withLock { $0 } }

    /// Stops recording; returns the states seen, in order.
    func stop() async -> [PowerState] {
        task.cancel()
        await task.value
        return states.withLock { $0 }
    }
}

/// A NAK storm on the DDC port while fixes flow: every subscriber gets the typed link error
/// (an `I2CError.nak`), and GNSS_PWR_EN goes low.
func checkNAKStorm() async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    try await withReceiver(board: "hil-ddc", port: .ddc, lines: lines) { receiver, simulator in
        let fixes = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
        let messages = Collector(receiver.messages.subscribe(buffering: .bounded(1000)))
        try await eventually("a fix with a position over DDC", within: .seconds(30), watching: [fixes],
                             simulator: simulator) { fixes.values.contains(where: \.hasPosition) }
        try ddc.nakNext(1000)
        try await eventually("both subscriptions ending after the NAK storm", within: .seconds(20)) {
            fixes.ended && messages.ended
        }
        try ddc.reset()
        for (name, error) in [("fixes", fixes.error), ("messages", messages.error)] {
            guard let failure = error as? ReceiverError else {
                throw ScenarioFailure("the \(name) subscription ended with \(error.map { "\($0)" } ?? "no error")")
            }
            guard case .link(_, let fault) = failure, let i2c = fault as? I2CError, case .nak = i2c else {
                throw ScenarioFailure("the \(name) subscription failed with \(failure), expected a link NAK")
            }
        }
        try await eventually("GNSS_PWR_EN low after the NAK storm", within: .seconds(10), simulator: simulator) {
            !simulator.isPowered
        }
        try expect(try !lines.level(of: "GNSS_PWR_EN"), "sysfs reads GNSS_PWR_EN high after the NAK storm")
        try await eventually("the receiver failed or off", within: .seconds(10)) {
            receiver.powerState == .failed || receiver.powerState == .off
        }
        try expect(simulator.powerChanges == [true, false], "the supply switched \(simulator.powerChanges)")
    }
}

/// A line the board needs, held by another consumer: the subscriber gets the typed busy error
/// naming the holder, and nothing is powered — whether the busy line is the enable line itself
/// or one requested after it. Once the holder lets go, the next subscriber gets fixes.
func checkBusyLineWithReceiver() async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    let chip = try GPIOChip.open(simulatedChip)
    defer { chip.close() }
    try await withReceiver(board: "hil-ddc", port: .ddc, lines: lines) { receiver, simulator in
        for (line, role) in [("GNSS_PWR_EN", "enable"), ("GNSS_RESET_N", "reset")] {
            let holder = try chip.requestOutput(.name(line), initiallyActive: false, consumer: "other-holder")
            let fixes = Collector(receiver.fixes.subscribe())
            try await eventually("the subscription failing on the busy \(line)", within: .seconds(10)) { fixes.ended }
            holder.release()
            guard let failure = fixes.error as? ReceiverError, case .gpio(let failedRole, let gpio) = failure,
                  case .busy(_, _, let consumer) = gpio else {
                throw ScenarioFailure("with \(line) held: \(fixes.error.map { "\($0)" } ?? "no error"), expected busy")
            }
            try expect(failedRole == role && consumer == "other-holder",
                       "with \(line) held: the \(failedRole) line busy, held by \(consumer ?? "nil")")
            // The subscriber hears of the failure first; the clean-up stop (releasing the lines a
            // partial start requested) runs after it, so the state settles a moment later.
            try await eventually("the receiver failed or off after the busy \(line)", within: .seconds(10)) {
                receiver.powerState == .failed || receiver.powerState == .off
            }
            try expect(try !lines.level(of: "GNSS_PWR_EN"), "GNSS_PWR_EN is high after the busy \(line)")
            try expect(simulator.powerChanges.isEmpty, "the supply switched \(simulator.powerChanges) (\(line) busy)")
        }
        let fixes = Collector(receiver.fixes.subscribe())
        try await eventually("a fix once the lines are free", within: .seconds(30), watching: [fixes],
                             simulator: simulator) { fixes.values.contains(where: \.hasPosition) }
        await fixes.cancel()
    }
}

/// A supply cut and an aided restart over DDC: the first power-on is cold; the power-off saves the
/// navigation database (MGA-DBD over I2C), the position and the time before GNSS_PWR_EN goes low
/// (the simulator loses everything: no backup supply); the next power-on restores them through
/// I2C_RDWR, paced by MGA-ACK, and the simulated receiver makes an aided start.
func checkCutAndRestore() async throws {
    // The guest's clock as an NTP daemon would leave it: the restore then sends the time.
    try SystemClock.markSynchronised(maximumError: .milliseconds(50), estimatedError: .milliseconds(1))
    try expect(SystemClock.synchronisation().isSynchronised, "the guest clock is not synchronised after adjtimex")
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    let directory = "/tmp/hil-state-\(getpid())"
    var settings = HatSimulator.settings()
    settings.simulation.backupSupply = false
    settings.simulation.coldStart = .seconds(4)
    settings.aidedStart = .milliseconds(300)
    try await withReceiver(
        board: "hil-ddc-cut-supply", port: .ddc, lines: lines, options: ReceiverOptions(stateDirectory: directory),
        settings: settings
    ) { receiver, simulator in
        try checkBoardLink(receiver.board, link: .ddc)
        let first = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
        try await eventually("a cold fix over DDC", within: .seconds(60), watching: [first], simulator: simulator) {
            first.values.contains(where: \.hasPosition)
        }
        let lastCold = first.values.last(where: \.hasPosition)?.time
        await first.cancel()
        try await eventually("the supply cut after the linger", within: .seconds(30), simulator: simulator) {
            !simulator.isPowered && receiver.powerState == .off
        }
        let saved = AidingState.load(from: directory, receiver: nil, now: .system())
        guard let state = saved.state else { throw ScenarioFailure("no aiding state saved: \(saved)") }
        try expect(!state.databaseRecords.isEmpty && state.position != nil,
                   "the saved state has \(state.databaseRecords.count) records, "
                   + "position \(String(describing: state.position))")
        try expect(receiver.powerPlan.statistics.aidingSaves == 1, "aiding saves: \(receiver.powerPlan.statistics)")

        let second = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
        // The first value is the replayed cold fix: wait for one of the new power-on.
        try await eventually("an aided fix over DDC", within: .seconds(60), watching: [second], simulator: simulator) {
            second.values.contains { fix in
                guard fix.hasPosition, let time = fix.time else { return false }
                return lastCold.map { time > $0 } ?? true
            }
                && simulator.receiver.starts.count == 2
        }
        let starts = simulator.receiver.starts
        try expect(starts == [.cold, .aided], "starts \(starts), aiding received \(simulator.receiver.aidingReceived)")
        // The aided fix comes while the records are still being sent, one per MGA-ACK, each ack read by a
        // DDC poll: the restore ends after the last.
        try await eventually("the restore's end", within: .seconds(60), simulator: simulator) {
            receiver.powerPlan.statistics.aidingRestores == 1
        }
        let received = simulator.receiver.aidingReceived
        try expect(received.time == 1 && received.position == 1
                   && received.recordsAccepted == state.databaseRecords.count,
                   "aiding received \(received) of \(state.databaseRecords.count) records")
        await second.cancel()
        try await eventually("the supply cut again", within: .seconds(30), simulator: simulator) {
            !simulator.isPowered && receiver.powerState == .off
        }
    }
}
