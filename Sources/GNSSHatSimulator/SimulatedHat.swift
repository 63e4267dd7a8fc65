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
public final class SimulatedHat: ReceiverHardware, ActivityReporting {
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
        var inProcessLink: InProcessLink?
        var readerRunning = false
        var present = true
    }

    private let state = Lock(State())
    /// The hat as its own serial opener sees it.
    private struct WeakReference: Sendable {
        weak var hat: SimulatedHat?
    }
    /// Tests: runs once the host's open of the in-process link has been accepted, before the
    /// open returns, so that a fault can come in the middle of an open deterministically.
    /// (A closure in a struct: see `SimulatedReceiver`'s sink.)
    private let hostOpenAccepted = Lock(HostOpenHook())
    private struct HostOpenHook {
        var body: (@Sendable () -> Void)?
    }
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
        let hatLines = HatLines(board: board, inner: lines ?? InMemoryLines(), receiver: receiver)
        // The opener is part of `hardware`, which this hat holds: it reaches the hat through a
        // weak reference, or the hat (its clock, receiver and wake-up descriptor) would hold
        // itself for ever. Once the hat is gone, there is nothing to open.
        let hatBox = Lock(WeakReference())
        access = HardwareAccess(
            gpio: hatLines,
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
        receiver.ppsOutput.countInFlight(in: traffic)
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
        let (terminal, inProcessLink) = state.withLock { state -> (PseudoTerminal?, InProcessLink?) in
            state.present = false
            state.readerRunning = false
            defer {
                state.terminal = nil
                state.inProcessLink = nil
            }
            return (state.terminal, state.inProcessLink)
        }
        inProcessLink?.vanish()
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
        hostOpenAccepted.withLock { $0.body = body }
    }

    /// Whether the device is there.
    public var isPresent: Bool { state.withLock { $0.present } }

    /// Suspends until nothing is in flight: everything the receiver sent has been read and
    /// processed by the host (or dropped because the host closed the port), everything the host
    /// sent has been processed by the receiver, and every PPS edge the host reads has been handled.
    public func settled() async {
        await traffic.waitUntilSettled()
    }

    /// Idle when nothing is in flight (the traffic's activity): the hat itself only passes bytes
    /// and edges on, its receiver on a `.driven` timing acts only when its driver ticks it.
    package var activity: Activity { traffic.activity }

    package func waitForActivity(after changes: UInt64) async {
        await traffic.waitForActivity(after: changes)
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
                state.inProcessLink = nil
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
            hostOpenAccepted.withLock { $0.body }?()
            guard state.withLock({ $0.present && $0.terminal === terminal }) else {
                port.close()
                throw notFound(terminal.devicePath)
            }
            return TrafficCountingLink(inner: port, traffic: traffic)
        case .inProcess:
            // The hat's presence is checked and the link attached under one lock, so that a hat
            // disappearing meanwhile vanishes this link too. Apart, a link opened as the hat
            // disappeared was attached to an absent hat, and after `reappear()` (which starts
            // with no link) to nothing: the receiver's output, counted as in flight, never
            // reached it, and a HatDriver waited for ever for the host to read it.
            let link = InProcessLink(speed: speed, hat: self)
            let attached = state.withLock { state -> Bool in
                guard state.present else { return false }
                state.inProcessLink = link
                return true
            }
            guard attached else { throw notFound("simulator") }
            hostOpenAccepted.withLock { $0.body }?()
            return TrafficCountingLink(inner: link, traffic: traffic)
        }
    }

    /// The receiver's output, to whatever link is attached.
    private func receiverSends(_ bytes: [UInt8]) {
        let (terminal, inProcessLink) = state.withLock { ($0.terminal, $0.inProcessLink) }
        traffic.receiverWriting(bytes.count)
        if let terminal {
            // A full buffer or a closed terminal loses the bytes, as a UART nobody reads does.
            try? terminal.write(bytes)
        } else if let inProcessLink {
            inProcessLink.deliver(bytes, atSpeed: baud)
        }
    }

    /// Host bytes through the in-process link.
    func hostSends(_ bytes: [UInt8], atSpeed speed: Int) {
        receiver.receive(speed == baud ? bytes : InProcessLink.garble(bytes))
        traffic.receiverConsumed(bytes.count)
    }
}
