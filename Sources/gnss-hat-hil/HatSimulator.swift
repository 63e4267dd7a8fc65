// The simulated receiver on the rig's hat, played from outside the driver under test: a
// SimulatedReceiver whose supply and reset follow the physical levels of GNSS_PWR_EN and
// GNSS_RESET_N (read from gnss_gpio_sim's sysfs `value` files, woken by poll(2)), and whose
// UART or DDC port is a pseudo-terminal or /dev/ubx-sim. The Receiver under test reaches it
// only through the kernel: libgpiod, termios, I2C_RDWR.
import Dispatch
import GNSSHat
import GNSSHatSimulator
// Glibc: the rig plays the hat (gpio-sim's sysfs `value` files, /dev/ubx-sim: `open`, `pread`,
// `poll`), beside the code under test and not through its seam.
import Glibc
import LinuxSystem

/// Where the simulated receiver's output goes and its input comes from.
enum SimulatorPort: Sendable {
    /// The u-blox DDC port behind the ubx_ddc_sim adapter (/dev/ubx-sim).
    case ddc
    /// A UART: the controller side of a pseudo-terminal the host opens as a serial port.
    case pseudoTerminal(PseudoTerminal)
}

/// A SimulatedReceiver wired to the simulated hat from outside: power and reset from the line
/// levels, bytes through the port.
final class HatSimulator: Sendable {
    /// Settings that keep a scenario short under TCG: a quick boot and cold start.
    static func settings(period: Duration = .milliseconds(250)) -> SimulatedReceiver.Settings {
        let simulation = Board.Simulation(coldStart: .milliseconds(600), hotStart: .milliseconds(300),
                                          boot: .milliseconds(100))
        return SimulatedReceiver.Settings(dialect: .ublox(protocolVersion: 27.31), simulation: simulation,
                                          period: period)
    }

    private struct State {
        var running = true
        /// Every supply change the simulator saw on GNSS_PWR_EN, in order.
        var powerChanges: [Bool] = []
        var powered = false
        var inReset = false
        var hostBytes = 0
        /// The DDC adapter's transfer count when the supply was last seen going off.
        var transfersAtPowerOff: UInt64?
        var outputBytes = 0
        var droppedOutput = 0
        /// How many times the line files went away (the chip's driver unbound).
        var lineOutages = 0
        var failure: String?
    }

    let receiver: SimulatedReceiver
    let port: SimulatorPort
    private let state = Lock(State())
    private let threads = DispatchGroup()
    private let writer = DispatchQueue(label: "hil.simulator.output")
    private let powerPath: String
    private let resetPath: String
    /// The descriptor output is written to (/dev/ubx-sim), or -1; closed by `stop()`.
    private let outputFD: Int32

    /// Starts the simulated receiver behind `port`, watching the lines of `lines`.
    init(port: SimulatorPort, lines: GPIOSimBank, settings: SimulatedReceiver.Settings = HatSimulator.settings())
        throws
    {
        self.port = port
        receiver = SimulatedReceiver(settings: settings, clock: ContinuousClock())
        powerPath = "\(GPIOSimBank.device)/sim_gpio\(try lines.offset(of: "GNSS_PWR_EN"))/value"
        resetPath = "\(GPIOSimBank.device)/sim_gpio\(try lines.offset(of: "GNSS_RESET_N"))/value"
        let output: @Sendable ([UInt8]) -> Void
        switch port {
        case .ddc:
            let fd = try SysFile.open(DDCSimModule.control, O_WRONLY | O_NONBLOCK)
            outputFD = fd
            output = { [weak self] bytes in self?.send(bytes) { try SysFile.writeAll(fd, $0, what: "/dev/ubx-sim") } }
            threads.enter()
            DispatchQueue(label: "hil.simulator.ddc-input").async { [self] in
                defer { threads.leave() }
                readDDCInput()
            }
        case .pseudoTerminal(let terminal):
            outputFD = -1
            output = { [weak self] bytes in self?.send(bytes) { try terminal.write($0) } }
            threads.enter()
            DispatchQueue(label: "hil.simulator.uart-input").async { [self] in
                defer { threads.leave() }
                readUARTInput(terminal)
            }
        }
        receiver.connect(output: output)
        threads.enter()
        DispatchQueue(label: "hil.simulator.lines").async { [self] in
            defer { threads.leave() }
            watchLines()
        }
    }

    /// The supply changes seen so far (true: switched on).
    var powerChanges: [Bool] { state.withLock { $0.powerChanges } }
    /// Whether the simulator sees its supply on now.
    var isPowered: Bool { state.withLock { $0.powered } }

    /// The DDC adapter's transfer count read as soon as the supply was seen going off (nil
    /// before, or on a UART): no poll may come after it.
    var transfersAtPowerOff: UInt64? { state.withLock { $0.transfersAtPowerOff } }
    /// Bytes the host sent that reached the receiver.
    var hostBytes: Int { state.withLock { $0.hostBytes } }
    /// Receiver output that could not be delivered (a full DDC buffer, a terminal nobody reads).
    var droppedOutput: Int { state.withLock { $0.droppedOutput } }
    /// Why the simulator's own I/O failed, if it did.
    var failure: String? { state.withLock { $0.failure } }
    /// How many times the simulated chip's line files went away (its driver unbound) while watched.
    var lineOutages: Int { state.withLock { $0.lineOutages } }

    /// Stops the receiver and the threads; returns once they have ended.
    func stop() async {
        state.withLock { $0.running = false }
        receiver.connect(output: nil)
        receiver.shutdown()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            threads.notify(queue: .global()) { continuation.resume() }
        }
        // After every queued write (the queue is serial).
        let fd = outputFD
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writer.async {
                if fd >= 0 { close(fd) }
                continuation.resume()
            }
        }
    }

    private var running: Bool { state.withLock { $0.running } }

    private func fail(_ what: String) {
        state.withLock { $0.failure = $0.failure ?? what }
    }

    /// The receiver's output, written on a queue of its own so that a slow reader never blocks
    /// the receiver's timer; output nobody can take is dropped, as a UART nobody reads loses it.
    private func send(_ bytes: [UInt8], _ write: @escaping @Sendable ([UInt8]) throws -> Void) {
        writer.async { [self] in
            do {
                try write(bytes)
                state.withLock { $0.outputBytes += bytes.count }
            } catch {
                state.withLock { $0.droppedOutput += bytes.count }
            }
        }
    }

    /// Follows GNSS_PWR_EN and GNSS_RESET_N while their sysfs files exist. When the chip's driver is
    /// unbound the files go away: the pins stay where they were (a pin keeps its level when its
    /// controller's driver goes), so the receiver keeps its supply and reset, and the files are opened
    /// again once the driver is back (every pin then at its pull).
    private func watchLines() {
        var present = true
        while running {
            let power = try? SysFile.open(powerPath, O_RDONLY)
            let reset = try? SysFile.open(resetPath, O_RDONLY)
            var lost = true
            if let power, let reset {
                present = true
                lost = !followLines(power: power, reset: reset)
            }
            if let power { close(power) }
            if let reset { close(reset) }
            if lost && present { state.withLock { $0.lineOutages += 1 } }
            present = !lost
            if lost { _ = poll(nil, 0, 20) }
        }
    }

    /// Follows GNSS_PWR_EN (high: supply on) and GNSS_RESET_N (low: held in reset), woken by the
    /// module's sysfs notification; reset is applied before the supply so that a receiver
    /// powered while held in reset does not boot until it is released. Returns true when stopped,
    /// false when a level cannot be read (the files went away).
    private func followLines(power: Int32, reset: Int32) -> Bool {
        while running {
            guard let on = Self.level(power), let resetHigh = Self.level(reset) else { return false }
            let (changeReset, changePower) = state.withLock { state -> (Bool?, Bool?) in
                var changes: (Bool?, Bool?) = (nil, nil)
                if state.inReset == resetHigh {
                    state.inReset = !resetHigh
                    changes.0 = !resetHigh
                }
                if state.powered != on {
                    state.powered = on
                    state.powerChanges.append(on)
                    changes.1 = on
                }
                return changes
            }
            if changePower == false, case .ddc = port {
                // Read at once (poll(2) woke on the edge): the session stops polling before it
                // switches the supply off, so this count is final.
                let transfers = try? DDCSimModule().stats()["transfers"]
                state.withLock { $0.transfersAtPowerOff = transfers ?? nil }
            }
            if let changeReset { receiver.setReset(changeReset) }
            if let changePower { receiver.setMainPower(changePower) }
            // Both reads above re-armed the notifications; a change since then wakes this poll.
            var descriptors = [pollfd(fd: power, events: Int16(POLLPRI | POLLERR), revents: 0),
                               pollfd(fd: reset, events: Int16(POLLPRI | POLLERR), revents: 0)]
            _ = poll(&descriptors, 2, 50)
        }
        return true
    }

    /// A line's physical level (pread at offset 0 also re-arms the change notification).
    private static func level(_ fd: Int32) -> Bool? {
        var buffer = [UInt8](repeating: 0, count: 8)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? buffer[0] == UInt8(ascii: "1") : nil
    }

    /// Hands what the host wrote to the DDC port (messages of two or more bytes) to the receiver.
    private func readDDCInput() {
        let fd: Int32
        do {
            fd = try SysFile.open(DDCSimModule.control, O_RDONLY | O_NONBLOCK)
        } catch {
            fail("cannot read \(DDCSimModule.control): \(error)")
            return
        }
        defer { close(fd) }
        while running {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            do {
                let bytes = try SysFile.readAll(fd, what: DDCSimModule.control)
                deliver(bytes)
            } catch {
                fail("\(error)")
                return
            }
        }
    }

    /// Hands what the host wrote to the UART to the receiver.
    private func readUARTInput(_ terminal: PseudoTerminal) {
        while running {
            do {
                deliver(try terminal.read(maxCount: 4096, timeout: .milliseconds(50)))
            } catch {
                fail("\(terminal.name): \(error)")
                return
            }
        }
    }

    private func deliver(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        state.withLock { $0.hostBytes += bytes.count }
        receiver.receive(bytes)
    }
}
