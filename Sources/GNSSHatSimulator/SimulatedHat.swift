// A simulated hat: the simulated receiver wired to GPIO lines (its supply, reset, standby,
// FORCE_ON, EXTINT follow what the host drives; its PPS is an edge source) and to a link — a
// pseudo-terminal the host opens as a serial port, or an in-process link for fast tests — with
// traffic accounting so that a driver of a manual clock can tell when nothing is in flight.
public import GNSSHat
import Dispatch
import GNSSProtocol
import LinuxSystem
public import PiHardware
import Signals

/// The simulated receiver on its hat: the hardware a `Receiver` runs on (`Receiver(on: hat)`).
public final class SimulatedHat: ReceiverHardware {
    /// How the host reaches the simulated receiver's UART.
    public enum Connection: Sendable, Hashable {
        /// A pseudo-terminal: the host opens its device path as a serial port (speed ignored).
        case pseudoTerminal
        /// An in-process link: no kernel, closes at once, and garbles bytes when the host's
        /// speed differs from the receiver's (so speed detection can be tested).
        case inProcess
    }

    public let board: Board
    /// The simulated receiver.
    public let receiver: SimulatedReceiver
    /// The clock of the simulation; a `Receiver` on this hat uses it too.
    public let clock: any Clock<Duration>
    /// The GPIO lines, the serial port opener and the I2C opener a `Receiver` uses.
    public let access: HardwareAccess
    /// What is in flight between host and receiver.
    public let traffic = HatTraffic()
    public let connection: Connection
    /// The receiver's UART speed (the board's link speed unless given).
    public let baud: Int

    private struct State {
        var terminal: PseudoTerminal?
        var loopback: LoopbackLink?
        var readerRunning = false
        var present = true
    }

    private let state = Lock(State())
    /// Tests: runs once the host's open of the in-process link has been accepted, before the
    /// open returns, so that a fault can come in the middle of an open deterministically.
    private let hostOpenAccepted = Lock<(@Sendable () -> Void)?>(nil)
    private let reader = SerialThread(name: "gnss-sim-reader")
    /// Wakes the reader, which otherwise waits for the host with no timeout (an idle simulator
    /// does not wake the process).
    private let readerWake: Waker

    /// A hat for `board` (its chip family and simulation section decide the receiver). Lines
    /// the host drives go through `lines` (a test's `FakeGPIO`, say) and on to the simulated
    /// receiver; without `lines` they are kept in memory.
    public init(
        board: Board, clock: some Clock<Duration>, lines: (any GPIOLines)? = nil,
        connection: Connection = .pseudoTerminal, timing: SimulatedReceiver.Timing = .selfTimed,
        settings: SimulatedReceiver.Settings? = nil, receiverBaud: Int? = nil
    ) throws {
        self.board = board
        self.clock = clock
        self.connection = connection
        readerWake = try Waker()
        if let receiverBaud {
            baud = receiverBaud
        } else if case .simulator(let linkBaud) = board.link {
            baud = linkBaud
        } else {
            baud = 9600
        }
        let receiver = SimulatedReceiver(settings: settings ?? SimulatedReceiver.Settings(board: board), clock: clock,
                                         timing: timing)
        self.receiver = receiver
        let wired = WiredLines(board: board, inner: lines ?? MemoryLines(), receiver: receiver)
        // The opener is part of `hardware`, which this hat holds: it reaches the hat through a
        // weak reference, or the hat (its clock, receiver and wake-up descriptor) would hold
        // itself for ever. Once the hat is gone, there is nothing to open.
        let hatBox = Lock(WeakHat())
        access = HardwareAccess(
            gpio: wired,
            openSerial: { _, speed, _ in
                guard let hat = hatBox.withLock({ $0.hat }) else { throw SerialError.closed(device: "simulator") }
                return try hat.openHostSide(speed: speed)
            },
            openI2C: { _ in
                throw I2CError.closed(device: "the simulator has no I2C bus")
            }
        )
        hatBox.withLock { $0.hat = self }
        receiver.connect { [weak self] bytes in self?.receiverSends(bytes) }
        try attachLink()
        // Without an enable line nothing switches the supply: the receiver is always powered.
        if board.gpio.enable == nil { receiver.setMainPower(true) }
    }

    /// Wakes the reader of the host's writes, if one runs, so that it sees the hat is gone and
    /// ends (with it go its thread and the pseudo-terminal).
    deinit {
        readerWake.wake()
    }

    /// The device path a host opens: the pseudo-terminal's (it changes after `reappear()`).
    public var devicePath: String {
        state.withLock { $0.terminal?.devicePath ?? "simulator" }
    }

    /// The receiver's UART as the host sees it: the pseudo-terminal (or the in-process link) at the
    /// board's speed, with the other common speeds tried when the receiver does not answer there.
    public var link: HardwareLink {
        switch board.link {
        case .i2c(let i2c): .i2c(i2c)
        case .uart(let uart): .serial(Board.UART(path: devicePath, baud: uart.baud, detectSpeed: uart.detectSpeed))
        case .simulator(let baud): .serial(Board.UART(path: devicePath, baud: baud))
        }
    }

    /// That the hat is simulated, and so has no hardware line to show.
    public func status() -> HardwareStatus {
        HardwareStatus(lines: [
            note,
            "For a simulated receiver other programs can open, run 'gnss-hat simulate'.",
        ])
    }

    /// What the simulated receiver does after the power sequence (once it has had its boot time).
    public func powerReport(afterPowerOn: Bool) async -> [String] {
        if afterPowerOn, receiver.mode == .booting, let boot = receiver.timeToNextEvent {
            try? await clock.sleep(for: boot + .milliseconds(200))
        }
        return [note, "simulated receiver: \(receiver.mode) after power-\(afterPowerOn ? "on" : "off")"]
            + (afterPowerOn ? ["(the simulated hat goes away when this process ends)"] : [])
    }

    private var note: String {
        "\(board.name) is simulated: its enable \(board.gpio.enable.map(\.description) ?? "(none)") "
            + "and receiver exist only inside this process; no hardware line is touched."
    }

    // MARK: - Faults of the hat

    /// The device goes away: the pseudo-terminal closes (or the in-process link fails), so a
    /// host reading it gets a hang-up.
    public func disappear() {
        let (terminal, loopback) = state.withLock { state -> (PseudoTerminal?, LoopbackLink?) in
            state.present = false
            state.readerRunning = false
            defer {
                state.terminal = nil
                state.loopback = nil
            }
            return (state.terminal, state.loopback)
        }
        loopback?.vanish()
        readerWake.wake()
        terminal?.close()
    }

    /// The device comes back (a new pseudo-terminal, at a new path).
    public func reappear() throws {
        guard !state.withLock({ $0.present }) else { return }
        try attachLink()
    }

    /// Sets what runs in the middle of the host's open (tests): on the in-process link once the
    /// open has been accepted, on a pseudo-terminal once the device is open and before the open
    /// is checked against the hat's terminal.
    func whenHostOpenAccepted(_ body: (@Sendable () -> Void)?) {
        hostOpenAccepted.withLock { $0 = body }
    }

    /// Whether the device is there.
    public var isPresent: Bool { state.withLock { $0.present } }

    /// Suspends until no byte is in flight: everything the receiver sent has been read and
    /// processed by the host (or dropped because the host closed the port), and everything the
    /// host sent has been processed by the receiver.
    public func settled() async {
        await traffic.waitUntilSettled()
    }

    /// Stops the simulated receiver and closes the link.
    public func shutdown() async {
        receiver.shutdown()
        disappear()
    }

    // MARK: - Links

    private func attachLink() throws {
        switch connection {
        case .pseudoTerminal:
            let terminal = try PseudoTerminal(holdDeviceOpen: true)
            state.withLock { state in
                state.terminal = terminal
                state.readerRunning = true
                state.present = true
            }
            // The reader holds the hat only to ask whether to go on: a reader that held it while
            // waiting for the host would keep the hat (and itself) alive until `shutdown()`.
            let (receiver, traffic, wake) = (receiver, traffic, readerWake)
            try reader.async { [weak self] in
                while self?.isReading(terminal) == true {
                    let bytes: [UInt8]
                    do {
                        bytes = try terminal.read(maxCount: 4096, until: wake)
                    } catch {
                        return
                    }
                    guard !bytes.isEmpty else { continue }
                    receiver.receive(bytes)
                    traffic.receiverConsumed(bytes.count)
                }
            }
        case .inProcess:
            // The host attaches its link when it opens one. Present and link-less in one step: a
            // link attached between the two would be dropped while the host still reads it.
            state.withLock { state in
                state.present = true
                state.loopback = nil
            }
        }
    }

    /// Whether the reader of the host's writes to `terminal` should go on.
    private func isReading(_ terminal: PseudoTerminal) -> Bool {
        state.withLock { $0.readerRunning && $0.terminal === terminal }
    }

    private func openHostSide(speed: Int) throws -> any SerialLink {
        // What opening a device that is not there gives: the hat is absent, or went while opening.
        func notFound(_ device: String) -> SerialError {
            .notFound(FailedCall(call: "open", device: device, errno: .noSuchFileOrDirectory))
        }
        switch connection {
        case .pseudoTerminal:
            // The path is taken with the terminal it names, and the open is checked against that
            // terminal after: a hat that disappeared meanwhile closed it, and its /dev/pts number
            // may already name another terminal (another test's hat's), which this open must not
            // hand out as this hat's.
            guard let terminal = state.withLock({ $0.present ? $0.terminal : nil }) else { throw notFound("simulator") }
            let port = try SerialPort(path: terminal.devicePath, speed: speed)
            hostOpenAccepted.withLock { $0 }?()
            guard state.withLock({ $0.present && $0.terminal === terminal }) else {
                port.close()
                throw notFound(terminal.devicePath)
            }
            return CountingLink(inner: port, traffic: traffic)
        case .inProcess:
            // The hat's presence is checked and the link attached under one lock, so that a hat
            // disappearing meanwhile vanishes this link too. Apart, a link opened as the hat
            // disappeared was attached to an absent hat, and after `reappear()` (which starts
            // with no link) to nothing: the receiver's output, counted as in flight, never
            // reached it, and a HatDriver waited for ever for the host to read it.
            let link = LoopbackLink(speed: speed, hat: self)
            let attached = state.withLock { state -> Bool in
                guard state.present else { return false }
                state.loopback = link
                return true
            }
            guard attached else { throw notFound("simulator") }
            hostOpenAccepted.withLock { $0 }?()
            return CountingLink(inner: link, traffic: traffic)
        }
    }

    /// The receiver's output, to whatever link is attached.
    private func receiverSends(_ bytes: [UInt8]) {
        let (terminal, loopback) = state.withLock { ($0.terminal, $0.loopback) }
        traffic.receiverWriting(bytes.count)
        if let terminal {
            // A full buffer or a closed terminal loses the bytes, as a UART nobody reads does.
            try? terminal.write(bytes)
        } else if let loopback {
            loopback.deliver(bytes, atSpeed: baud)
        }
    }

    /// Host bytes through the in-process link.
    fileprivate func hostSends(_ bytes: [UInt8], atSpeed speed: Int) {
        receiver.receive(speed == baud ? bytes : LoopbackLink.garble(bytes))
        traffic.receiverConsumed(bytes.count)
    }
}

/// The hat as its own serial opener sees it.
private struct WeakHat: Sendable {
    weak var hat: SimulatedHat?
}

// MARK: - Traffic accounting

/// Counts the bytes between host and simulated receiver, to tell when none is in flight.
public final class HatTraffic: Sendable {
    private struct State {
        var receiverWrote = 0
        var hostConsumed = 0
        var hostOpen = false
        var hostWrote = 0
        var receiverConsumed = 0

        var isSettled: Bool { (!hostOpen || hostConsumed >= receiverWrote) && receiverConsumed >= hostWrote }
    }

    private let state = Lock(State())
    private let waiters = ConditionWaiters()

    public init() {}

    /// Whether nothing is in flight.
    public var isSettled: Bool { state.withLock { $0.isSettled } }

    /// The counts behind `isSettled`, for a test's diagnostics.
    public var counts: String {
        state.withLock { s in
            "receiver wrote \(s.receiverWrote), host consumed \(s.hostConsumed) (open: \(s.hostOpen)); "
                + "host wrote \(s.hostWrote), receiver consumed \(s.receiverConsumed)"
        }
    }

    /// Suspends until nothing is in flight, or until the task is cancelled (a test's time limit
    /// then ends a wait for bytes that never come, rather than leaving it hanging).
    public func waitUntilSettled() async {
        await waiters.wait { isSettled }
    }

    private func update(_ change: (inout State) -> Void) {
        let settled = state.withLock { state -> Bool in
            change(&state)
            return state.isSettled
        }
        if settled { waiters.resumeAll() }
    }

    /// The receiver is about to write bytes: the host must read them, if it listens.
    func receiverWriting(_ count: Int) {
        update { state in if state.hostOpen { state.receiverWrote += count } }
    }

    /// The host (re)opened its port, dropping what was sent before.
    func hostOpened() {
        update { state in
            state.hostOpen = true
            state.hostConsumed = state.receiverWrote
        }
    }

    /// The host has processed bytes it read.
    func hostConsumed(_ count: Int) {
        update { $0.hostConsumed += count }
    }

    /// The host closed its port: what it did not read is dropped.
    func hostClosed() {
        update { state in
            state.hostOpen = false
            state.hostConsumed = state.receiverWrote
        }
    }

    func hostWriting(_ count: Int) {
        update { $0.hostWrote += count }
    }

    func hostWriteFailed(_ count: Int) {
        update { $0.hostWrote -= count }
    }

    /// The receiver has processed bytes the host wrote.
    func receiverConsumed(_ count: Int) {
        update { $0.receiverConsumed += count }
    }
}

/// The host's serial link, counting: a chunk read counts as processed when the reader comes
/// back for more (its loop handles a chunk completely before reading again).
final class CountingLink: SerialLink {
    let inner: any SerialLink
    let traffic: HatTraffic
    private let pending = Lock(0)

    init(inner: any SerialLink, traffic: HatTraffic) {
        self.inner = inner
        self.traffic = traffic
        traffic.hostOpened()
    }

    var name: String { inner.name }

    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        try counting { try inner.read(maxCount: maxCount, timeout: timeout) }
    }

    func read(maxCount: Int, until waker: Waker) throws -> [UInt8] {
        try counting { try inner.read(maxCount: maxCount, until: waker) }
    }

    private func counting(_ read: () throws -> [UInt8]) throws -> [UInt8] {
        let done = pending.withLock { count -> Int in
            defer { count = 0 }
            return count
        }
        if done > 0 { traffic.hostConsumed(done) }
        let bytes = try read()
        pending.withLock { $0 = bytes.count }
        return bytes
    }

    func write(_ bytes: [UInt8]) throws {
        traffic.hostWriting(bytes.count)
        do {
            try inner.write(bytes)
        } catch {
            traffic.hostWriteFailed(bytes.count)
            throw error
        }
    }

    func setSpeed(_ speed: Int) throws {
        try inner.setSpeed(speed)
    }

    func discardInput() throws {
        try inner.discardInput()
        traffic.hostOpened()
    }

    func close() {
        inner.close()
        pending.withLock { $0 = 0 }
        traffic.hostClosed()
    }

    /// What the receiver sends from now on is never read (a receiver whose power-off has not
    /// taken yet still talks), so it is not in flight: as if the host had closed the port.
    func endReading() {
        inner.endReading()
        pending.withLock { $0 = 0 }
        traffic.hostClosed()
    }
}

/// The host side of the in-process link: reads what the receiver sent, writes straight into
/// the receiver. It garbles bytes when the two speeds differ, as a UART does.
final class LoopbackLink: SerialLink {
    private struct State {
        var input: [UInt8] = []
        var speed: Int
        var closed = false
        var vanished = false
    }

    private let state: Lock<State>
    private let signal = DispatchSemaphore(value: 0)
    private weak let hat: SimulatedHat?

    init(speed: Int, hat: SimulatedHat) {
        state = Lock(State(speed: speed))
        self.hat = hat
    }

    var name: String { "simulator (in-process)" }

    /// Noise in place of bytes sent at the wrong speed: 0x00, 0x80 and 0xF8-style framing
    /// errors, never a valid frame start.
    static func garble(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { byte in byte == UInt8(ascii: "$") || byte == 0xB5 ? 0x80 : (byte &* 7) | 0x80 }
    }

    func deliver(_ bytes: [UInt8], atSpeed speed: Int) {
        let delivered = state.withLock { state -> Bool in
            guard !state.closed, !state.vanished else { return false }
            state.input += state.speed == speed ? bytes : Self.garble(bytes)
            return true
        }
        if delivered { signal.signal() }
    }

    /// The device is gone: reads fail once what was received is read.
    func vanish() {
        state.withLock { $0.vanished = true }
        signal.signal()
    }

    func read(maxCount: Int, timeout: Duration) throws -> [UInt8] {
        if let bytes = try take(maxCount) { return bytes }
        _ = signal.wait(timeout: dispatchDeadline(after: timeout))
        return try take(maxCount) ?? []
    }

    private func take(_ maxCount: Int) throws -> [UInt8]? {
        let result = state.withLock { state -> Result<[UInt8]?, SerialError> in
            if state.closed { return .failure(.closed(device: name)) }
            if !state.input.isEmpty {
                let count = min(maxCount, state.input.count)
                defer { state.input.removeFirst(count) }
                return .success(Array(state.input.prefix(count)))
            }
            if state.vanished { return .failure(.hangUp(FailedCall(call: "read", device: name, errno: nil))) }
            return .success(nil)
        }
        return try result.get()
    }

    func write(_ bytes: [UInt8]) throws {
        let speed = try state.withLock { state throws(SerialError) -> Int in
            if state.closed { throw .closed(device: name) }
            if state.vanished { throw .vanished(FailedCall(call: "write", device: name, errno: .ioError)) }
            return state.speed
        }
        hat?.hostSends(bytes, atSpeed: speed)
    }

    func setSpeed(_ speed: Int) throws {
        state.withLock { $0.speed = speed }
    }

    func discardInput() throws {
        state.withLock { $0.input.removeAll() }
    }

    func close() {
        state.withLock { $0.closed = true }
        signal.signal()
    }
}

// MARK: - Lines

/// Lines that also drive the simulated receiver: every level the host drives on the
/// board's enable, reset, standby, FORCE_ON or EXTINT line reaches the receiver's input; the
/// PPS line is the receiver's time pulse.
final class WiredLines: GPIOLines {
    let board: Board
    let inner: any GPIOLines
    let receiver: SimulatedReceiver

    init(board: Board, inner: any GPIOLines, receiver: SimulatedReceiver) {
        self.board = board
        self.inner = inner
        self.receiver = receiver
    }

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        let line = try inner.output(address, initiallyActive: initiallyActive, activeLow: activeLow)
        let input = input(for: address)
        input?(initiallyActive)
        return WiredOutputLine(inner: line, input: input)
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        if let pps = board.gpio.pps, board.gpio.address(pps) == address { return receiver.ppsOutput }
        return try inner.edges(address, edges, activeLow: activeLow, bias: bias)
    }

    /// The receiver input a line drives (its logical level: asserted = the function on).
    private func input(for address: GPIOLineAddress) -> (@Sendable (Bool) -> Void)? {
        let gpio = board.gpio
        let receiver = receiver
        if let line = gpio.enable, gpio.address(line) == address { return { receiver.setMainPower($0) } }
        if let line = gpio.reset, gpio.address(line) == address { return { receiver.setReset($0) } }
        if let line = gpio.standby, gpio.address(line) == address { return { receiver.setStandby($0) } }
        if let line = gpio.forceOn, gpio.address(line) == address { return { receiver.setForceOn($0) } }
        if let line = gpio.extint, gpio.address(line) == address { return { receiver.setExtint($0) } }
        return nil
    }
}

final class WiredOutputLine: OutputLine {
    let inner: any OutputLine
    let input: (@Sendable (Bool) -> Void)?

    init(inner: any OutputLine, input: (@Sendable (Bool) -> Void)?) {
        self.inner = inner
        self.input = input
    }

    var name: String { inner.name }

    func setActive(_ active: Bool) throws {
        try inner.setActive(active)
        input?(active)
    }

    func isActive() throws -> Bool {
        try inner.isActive()
    }
}

/// GPIO lines kept in memory: what a simulated hat uses when no test lines are given.
final class MemoryLines: GPIOLines {
    private let lines = Lock<[GPIOLineAddress: MemoryLine]>([:])

    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine {
        let line = MemoryLine(name: address.description, level: initiallyActive)
        lines.withLock { $0[address] = line }
        return line
    }

    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
    {
        SimulatedEdgeSource(name: address.description)
    }
}

final class MemoryLine: OutputLine {
    let name: String
    private let level: Lock<Bool>

    init(name: String, level: Bool) {
        self.name = name
        self.level = Lock(level)
    }

    func setActive(_ active: Bool) throws {
        level.withLock { $0 = active }
    }

    func isActive() throws -> Bool {
        level.withLock { $0 }
    }
}
