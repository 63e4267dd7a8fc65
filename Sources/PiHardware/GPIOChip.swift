// GPIO chips and lines: finding the chip and the line, requesting it, mapping errors. The C
// calls live behind `GPIODriver` (libgpiod v1 or v2, chosen at build time).
public import LinuxSystem

/// An open GPIO chip (`/dev/gpiochipN`) through libgpiod.
public final class GPIOChip: Sendable {
    /// The consumer name lines are requested under, as `gpioinfo` shows it.
    public static let defaultConsumer = "gnss-hat"

    /// The chip's path, kernel name, label and number of lines.
    public let info: GPIOChipInfo
    /// The selector the chip was found by.
    public let selector: GPIOChipSelector

    let driver: any GPIODriver
    private let handle: Lock<(any GPIOChipHandle)?>

    /// The libgpiod version this module runs with (`gpiod_version_string` in v1,
    /// `gpiod_api_version` in v2).
    public static var libraryVersion: String { LibgpiodDriver().libraryVersion }

    /// The libgpiod API this module was built against: 1 or 2.
    public static var apiMajorVersion: Int { LibgpiodDriver.apiMajorVersion }

    /// Opens the chip `selector` names (`gpiod_chip_open`; for a label or `automatic`, every
    /// `/dev/gpiochip*` is opened in turn and its label compared).
    public static func open(_ selector: GPIOChipSelector) throws(GPIOError) -> GPIOChip {
        try open(selector, driver: LibgpiodDriver())
    }

    /// Every GPIO chip of the machine, in number order.
    public static func list() throws(GPIOError) -> [GPIOChipInfo] {
        try list(driver: LibgpiodDriver())
    }

    static func list(driver: any GPIODriver) throws(GPIOError) -> [GPIOChipInfo] {
        let paths: [String]
        do throws(FailedCall) { paths = try driver.chipPaths() } catch { throw GPIOError(error) }
        var chips: [GPIOChipInfo] = []
        for path in paths {
            do throws(FailedCall) {
                let chip = try driver.openChip(path)
                chips.append(chip.info)
                chip.close()
            } catch {
                throw GPIOError(error)
            }
        }
        return chips
    }

    static func open(_ selector: GPIOChipSelector, driver: any GPIODriver) throws(GPIOError) -> GPIOChip {
        switch selector {
        case .path(let path):
            return try openPath(path, selector: selector, driver: driver)
        case .name(let name):
            return try openPath("/dev/" + name, selector: selector, driver: driver)
        case .label(let label):
            return try search(selector: selector, labels: [label], driver: driver)
        case .automatic:
            return try search(selector: selector, labels: GPIOChipSelector.raspberryPiLabels, driver: driver)
        }
    }

    private static func openPath(
        _ path: String, selector: GPIOChipSelector, driver: any GPIODriver
    ) throws(GPIOError) -> GPIOChip {
        do throws(FailedCall) {
            return GPIOChip(handle: try driver.openChip(path), selector: selector, driver: driver)
        } catch where error.errno == .noSuchFileOrDirectory || error.errno == .notATerminal {
            throw .chipNotFound(selector, searched: ["\(path) (\(error.errno.map(\.description) ?? "failed"))"])
        } catch {
            throw GPIOError(error)
        }
    }

    /// Opens every chip and keeps the one whose label comes first in `labels`.
    private static func search(
        selector: GPIOChipSelector, labels: [String], driver: any GPIODriver
    ) throws(GPIOError) -> GPIOChip {
        let paths: [String]
        do throws(FailedCall) { paths = try driver.chipPaths() } catch { throw GPIOError(error) }
        var searched: [String] = []
        var best: (rank: Int, handle: any GPIOChipHandle)?
        var denied: FailedCall?
        for path in paths {
            let chip: any GPIOChipHandle
            do throws(FailedCall) {
                chip = try driver.openChip(path)
            } catch {
                searched.append("\(path) (\(error.errno.map(\.description) ?? "failed"))")
                if error.errno == .permissionDenied || error.errno == .notPermitted { denied = error }
                continue
            }
            searched.append("\(path) (label \(chip.info.label))")
            if let rank = labels.firstIndex(of: chip.info.label), rank < (best?.rank ?? .max) {
                best?.handle.close()
                best = (rank, chip)
            } else {
                chip.close()
            }
        }
        if let best { return GPIOChip(handle: best.handle, selector: selector, driver: driver) }
        // A chip we could not open may be the one: say so rather than "not found".
        if let denied { throw .permissionDenied(denied) }
        throw .chipNotFound(selector, searched: searched)
    }

    private init(handle: any GPIOChipHandle, selector: GPIOChipSelector, driver: any GPIODriver) {
        self.info = handle.info
        self.selector = selector
        self.driver = driver
        self.handle = Lock(handle)
    }

    deinit { close() }

    /// Closes the chip (`gpiod_chip_close`). Lines requested from it keep it open until they
    /// are released.
    public func close() {
        handle.withLock { handle in
            handle?.close()
            handle = nil
        }
    }

    /// `gpiochip0 (pinctrl-bcm2711)`.
    public var name: String { "\(info.name) (\(info.label))" }

    /// What the kernel says about a line (`gpiod_chip_get_line` and friends in v1,
    /// `gpiod_chip_get_line_info` in v2).
    public func lineInfo(_ line: GPIOLineSelector) throws(GPIOError) -> GPIOLineInfo {
        try withHandle { chip throws(GPIOError) in
            let offset = try resolve(line, chip)
            do throws(FailedCall) { return try chip.lineInfo(offset) } catch { throw GPIOError(error) }
        }
    }

    /// Requests `line` as an output driven to `initiallyActive` (`gpiod_line_request` in v1,
    /// `gpiod_chip_request_lines` in v2). Released when the returned line is released or freed.
    public func requestOutput(
        _ line: GPIOLineSelector, initiallyActive: Bool = false, activeLow: Bool = false,
        consumer: String = GPIOChip.defaultConsumer
    ) throws(GPIOError) -> GPIOOutputLine {
        let settings = GPIOLineSettings(
            direction: .output(initiallyActive: initiallyActive), activeLow: activeLow, consumer: consumer)
        let (handle, description) = try request(line, settings)
        return GPIOOutputLine(chip: self, handle: handle, name: description)
    }

    /// Requests `line` as an input, reporting `edges` with kernel timestamps of `clock` when
    /// `edges` is given (`gpiod_line_request` in v1, `gpiod_chip_request_lines` in v2).
    public func requestInput(
        _ line: GPIOLineSelector, edges: GPIOEdges? = nil, bias: GPIOBias = .asIs, activeLow: Bool = false,
        clock: EdgeClock = .monotonic, consumer: String = GPIOChip.defaultConsumer
    ) throws(GPIOError) -> GPIOInputLine {
        if clock == .realtime && !driver.supportsRealtimeClock {
            throw .unsupported("realtime edge timestamps with libgpiod \(driver.libraryVersion)", device: name)
        }
        let settings = GPIOLineSettings(
            direction: .input, edges: edges, bias: bias, activeLow: activeLow, clock: clock, consumer: consumer)
        let (handle, description) = try request(line, settings)
        return GPIOInputLine(chip: self, handle: handle, name: description, clock: clock)
    }

    private func request(
        _ line: GPIOLineSelector, _ settings: GPIOLineSettings
    ) throws(GPIOError) -> (any GPIOLineHandle, String) {
        try withHandle { chip throws(GPIOError) in
            let offset = try resolve(line, chip)
            let description = describe(line, offset: offset)
            do throws(FailedCall) {
                return (try chip.request(offset, settings), description)
            } catch where error.errno == .resourceBusy {
                // Name the holder: the most useful thing to say about a busy line.
                let consumer = try? chip.lineInfo(offset).consumer
                throw GPIOError.busy(error, line: description, consumer: consumer)
            } catch {
                throw GPIOError(error, line: description)
            }
        }
    }

    private func resolve(_ line: GPIOLineSelector, _ chip: any GPIOChipHandle) throws(GPIOError) -> Int {
        switch line {
        case .offset(let offset):
            guard offset >= 0 && offset < info.lineCount else { throw .lineNotFound(line, chip: name) }
            return offset
        case .name(let lineName):
            let found: Int?
            do throws(FailedCall) { found = try chip.offset(ofLineNamed: lineName) } catch { throw GPIOError(error) }
            guard let found else { throw .lineNotFound(line, chip: name) }
            return found
        }
    }

    private func describe(_ line: GPIOLineSelector, offset: Int) -> String {
        switch line {
        case .offset: "\(name) line \(offset)"
        case .name(let lineName): "\(name) line \(offset) \"\(lineName)\""
        }
    }

    private func withHandle<T>(
        _ body: (any GPIOChipHandle) throws(GPIOError) -> T
    ) throws(GPIOError) -> T {
        try handle.withLock { handle throws(GPIOError) -> T in
            guard let chip = handle else { throw .released(device: name) }
            return try body(chip)
        }
    }
}

/// A line requested as an output. Released on `release()` or when freed.
public final class GPIOOutputLine: OutputLine {
    /// `gpiochip0 (pinctrl-bcm2711) line 17`.
    public let name: String
    private let chip: GPIOChip
    private let handle: Lock<(any GPIOLineHandle)?>

    init(chip: GPIOChip, handle: any GPIOLineHandle, name: String) {
        self.chip = chip
        self.name = name
        self.handle = Lock(handle)
    }

    deinit { release() }

    /// Drives the line (`gpiod_line_set_value` in v1, `gpiod_line_request_set_value` in v2).
    public func setActive(_ active: Bool) throws(GPIOError) {
        try handle.withLock { handle throws(GPIOError) in
            guard let line = handle else { throw .released(device: name) }
            do throws(FailedCall) { try line.setValue(active) } catch { throw GPIOError(error, line: name) }
        }
    }

    /// Reads the logical value back (`gpiod_line_get_value` / `gpiod_line_request_get_value`).
    public func isActive() throws(GPIOError) -> Bool {
        try handle.withLock { handle throws(GPIOError) in
            guard let line = handle else { throw .released(device: name) }
            do throws(FailedCall) { return try line.value() } catch { throw GPIOError(error, line: name) }
        }
    }

    /// Releases the line (`gpiod_line_release` / `gpiod_line_request_release`); the kernel
    /// then keeps its last level or falls back to the pull, depending on the chip.
    public func release() {
        handle.withLock { handle in
            handle?.release()
            handle = nil
        }
    }
}

/// A line requested as an input, with edge events when asked. Released on `release()` or
/// when freed.
public final class GPIOInputLine: EdgeEventSource {
    /// `gpiochip0 (pinctrl-bcm2711) line 18`.
    public let name: String
    /// The clock of the edge timestamps.
    public let clock: EdgeClock
    private let chip: GPIOChip

    private struct State {
        var handle: (any GPIOLineHandle)?
        var pending: [EdgeEvent] = []
    }

    private let state: Lock<State>

    init(chip: GPIOChip, handle: any GPIOLineHandle, name: String, clock: EdgeClock) {
        self.chip = chip
        self.name = name
        self.clock = clock
        self.state = Lock(State(handle: handle))
    }

    deinit { release() }

    /// Reads the logical value (`gpiod_line_get_value` / `gpiod_line_request_get_value`).
    public func isActive() throws(GPIOError) -> Bool {
        try state.withLock { state throws(GPIOError) in
            guard let line = state.handle else { throw .released(device: name) }
            do throws(FailedCall) { return try line.value() } catch { throw GPIOError(error, line: name) }
        }
    }

    /// Waits up to `timeout` for the next edge (`gpiod_line_event_wait` and
    /// `gpiod_line_event_read_multiple` in v1, `gpiod_line_request_wait_edge_events` and
    /// `gpiod_line_request_read_edge_events` in v2). Returns nil on time-out. Holds the line's
    /// lock while waiting: other calls on this line wait for it.
    public func nextEdge(timeout: Duration) throws(GPIOError) -> EdgeEvent? {
        try state.withLock { state throws(GPIOError) -> EdgeEvent? in
            if !state.pending.isEmpty { return state.pending.removeFirst() }
            guard let line = state.handle else { throw .released(device: name) }
            do throws(FailedCall) {
                guard try line.waitForEvents(timeout: timeout) else { return nil }
                state.pending = try line.readEvents()
            } catch {
                throw GPIOError(error, line: name)
            }
            return state.pending.isEmpty ? nil : state.pending.removeFirst()
        }
    }

    /// Waits with no time-out for the next edge, or until `waker` is woken (then returns nil):
    /// `poll` on the line's event descriptor (`gpiod_line_event_get_fd` in v1,
    /// `gpiod_line_request_get_fd` in v2) beside the waker's, then reads the events as
    /// ``nextEdge(timeout:)`` does. Holds the line's lock while waiting, so wake the reader
    /// before releasing the line. A chip that goes away while we wait (`POLLHUP`/`POLLERR`)
    /// throws `vanished`.
    public func nextEdge(until waker: Waker) throws(GPIOError) -> EdgeEvent? {
        try state.withLock { state throws(GPIOError) -> EdgeEvent? in
            if !state.pending.isEmpty { return state.pending.removeFirst() }
            guard let line = state.handle else { throw .released(device: name) }
            // A read that found nothing after all waits again.
            while state.pending.isEmpty {
                let readiness: InputReadiness
                do throws(FailedCall) {
                    let fd = try line.eventDescriptor()
                    readiness = DescriptorIO.waitForInput(fd, device: name, timeout: nil, wake: waker)
                    if case .readable = readiness { state.pending = try line.readEvents() }
                } catch {
                    throw GPIOError(error, line: name)
                }
                switch readiness {
                case .readable: continue
                case .woken, .timedOut: return nil
                case .hungUp(let failure): throw .vanished(failure)
                case .failed(let failure): throw GPIOError(failure, line: name)
                }
            }
            return state.pending.removeFirst()
        }
    }

    /// Releases the line.
    public func release() {
        state.withLock { state in
            state.handle?.release()
            state.handle = nil
            state.pending = []
        }
    }
}

/// The machine's GPIO lines through libgpiod: opens the chip for each request (the line keeps
/// it open).
public struct SystemGPIO: GPIOLines {
    /// The consumer name lines are requested under.
    public var consumer: String

    public init(consumer: String = GPIOChip.defaultConsumer) {
        self.consumer = consumer
    }

    public func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws(GPIOError)
        -> any OutputLine
    {
        try GPIOChip.open(address.chip).requestOutput(
            address.line, initiallyActive: initiallyActive, activeLow: activeLow, consumer: consumer)
    }

    public func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias)
        throws(GPIOError) -> any EdgeEventSource
    {
        try GPIOChip.open(address.chip).requestInput(
            address.line, edges: edges, bias: bias, activeLow: activeLow, consumer: consumer)
    }
}
