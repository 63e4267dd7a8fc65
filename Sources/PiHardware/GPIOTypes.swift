// The public vocabulary of GPIO: how a chip and a line are named, what an edge event is, the
// protocols the board layer programs against, and the typed error.
public import LinuxSystem

/// Which GPIO chip to use.
public enum GPIOChipSelector: Hashable, Sendable, CustomStringConvertible {
    /// A device path, e.g. `/dev/gpiochip0`.
    case path(String)
    /// A kernel chip name, e.g. `gpiochip4`, opened as `/dev/<name>`.
    case name(String)
    /// A chip label, e.g. `pinctrl-bcm2711`, searched across `/dev/gpiochip*`.
    case label(String)
    /// The Raspberry Pi's header GPIO chip: the first label of `raspberryPiLabels` found
    /// across `/dev/gpiochip*`.
    case automatic

    /// The labels of the Raspberry Pi's header GPIO chip, in the order `automatic` tries them:
    /// Pi 4 (BCM2711), older Pis (BCM2835), Pi 5 (RP1).
    public static let raspberryPiLabels = ["pinctrl-bcm2711", "pinctrl-bcm2835", "pinctrl-rp1"]

    /// Parses a board file's chip field: `auto`, a path (`/dev/…`), a name (`gpiochipN`), or
    /// else a label.
    public init(_ text: String) {
        if text == "auto" || text.isEmpty {
            self = .automatic
        } else if text.hasPrefix("/") {
            self = .path(text)
        } else if text.hasPrefix("gpiochip"), text.dropFirst(8).allSatisfy(\.isNumber), text.count > 8 {
            self = .name(text)
        } else {
            self = .label(text)
        }
    }

    public var description: String {
        switch self {
        case .path(let path): path
        case .name(let name): name
        case .label(let label): "label \(label)"
        case .automatic: "auto (" + Self.raspberryPiLabels.joined(separator: ", ") + ")"
        }
    }
}

/// Which line of a chip to use.
public enum GPIOLineSelector: Hashable, Sendable, CustomStringConvertible {
    /// The line's offset on its chip (on a Pi: the BCM GPIO number).
    case offset(Int)
    /// The line's name in the device tree, e.g. `GPIO17`.
    case name(String)

    /// Parses a board file's line field: a number is an offset, anything else a name.
    public init(_ text: String) {
        if let offset = Int(text), offset >= 0 { self = .offset(offset) } else { self = .name(text) }
    }

    public var description: String {
        switch self {
        case .offset(let offset): "line \(offset)"
        case .name(let name): "line \"\(name)\""
        }
    }
}

/// A line on a chip.
public struct GPIOLineAddress: Hashable, Sendable, CustomStringConvertible {
    /// The chip.
    public var chip: GPIOChipSelector
    /// The line on it.
    public var line: GPIOLineSelector

    public init(chip: GPIOChipSelector = .automatic, line: GPIOLineSelector) {
        self.chip = chip
        self.line = line
    }

    public var description: String { "\(chip) \(line)" }
}

/// Which edges an input line reports.
public enum GPIOEdges: Hashable, Sendable {
    case rising, falling, both
}

/// The pull resistor of a line.
public enum GPIOBias: Hashable, Sendable {
    /// Leave it as it is.
    case asIs
    case disabled, pullUp, pullDown
}

/// The clock of an edge event's timestamp.
public enum EdgeClock: Hashable, Sendable {
    /// `CLOCK_MONOTONIC` (the libgpiod v1 API and the default).
    case monotonic
    /// `CLOCK_REALTIME` (the libgpiod v2 API on Linux 5.11 and later; LinuxPPS).
    case realtime
}

/// One edge seen by the kernel, with its kernel timestamp.
public struct EdgeEvent: Hashable, Sendable, CustomStringConvertible {
    /// Which way the line went (logical: active-low inverts it).
    public enum Kind: Hashable, Sendable {
        case rising, falling
    }

    /// Which way the line went.
    public var kind: Kind
    /// The kernel's timestamp, since the epoch of `clock`.
    public var timestamp: Duration
    /// The clock of `timestamp`.
    public var clock: EdgeClock
    /// The event's sequence number on its line or PPS source (gaps mean lost events).
    public var sequence: UInt64

    public init(kind: Kind, timestamp: Duration, clock: EdgeClock, sequence: UInt64) {
        self.kind = kind
        self.timestamp = timestamp
        self.clock = clock
        self.sequence = sequence
    }

    public var description: String { "\(kind) #\(sequence) at \(timestamp) (\(clock))" }
}

/// A line driven by this program, e.g. a receiver's power enable or reset.
public protocol OutputLine: AnyObject, Sendable {
    /// The line, for errors and logs.
    var name: String { get }
    /// Drives the line active (`true`) or inactive; active-low lines are inverted by the kernel.
    func setActive(_ active: Bool) throws
    /// Reads the line's logical value back.
    func isActive() throws -> Bool
}

/// A source of timestamped edges, e.g. a PPS signal on a GPIO line or `/dev/ppsN`.
public protocol EdgeEventSource: AnyObject, Sendable {
    /// The source, for errors and logs.
    var name: String { get }
    /// Waits up to `timeout` for the next edge; returns nil on time-out.
    func nextEdge(timeout: Duration) throws -> EdgeEvent?
    /// Waits with no time-out for the next edge, or until `waker` is woken (then returns nil): a
    /// reader that must stop wakes it rather than waking up every so often to look. Like
    /// `SerialPort.read(maxCount:until:)`, a wake that came while nobody waited ends the next wait.
    func nextEdge(until waker: Waker) throws -> EdgeEvent?
    /// The host reads this source from now on (a session's PPS loop is about to start). A source
    /// that accounts for edges in flight (the simulator's) expects the edges it gives to be read.
    func readingStarted()
    /// The host reads no more from this source (the loop has ended): edges from now on are not in
    /// flight to anyone.
    func readingEnded()
}

extension EdgeEventSource {
    /// Nothing to do for a source that counts nothing: the kernel keeps what arrives.
    public func readingStarted() {}

    public func readingEnded() {}

    /// For sources that cannot wait on a descriptor beside the waker (`/dev/ppsN`, whose `poll`
    /// is not usable): ``nextEdgeInSteps(until:_:)`` with ``nextEdge(timeout:)``.
    public func nextEdge(until waker: Waker) throws -> EdgeEvent? {
        try nextEdgeInSteps(until: waker) { try nextEdge(timeout: $0) }
    }
}

/// How long each wait of ``nextEdgeInSteps(until:_:)`` lasts: the most a woken reader of a
/// source that cannot wait on a descriptor takes to notice. A PPS loop with no waker at all
/// (no eventfd to be had) waits this long at a time between looks at whether to stop.
package let edgeWakeCheckInterval: Duration = .milliseconds(50)

/// Waits for an edge in steps of ``edgeWakeCheckInterval`` with `timedWait` (a source's
/// `nextEdge(timeout:)`) and looks after each whether `waker` was woken (`poll` on it with a zero
/// time-out, which drains it): returns the first edge, or nil once woken. For sources with
/// nothing to `poll` beside the waker: `/dev/ppsN`, and in-process sources that found no eventfd.
package func nextEdgeInSteps(
    until waker: Waker, _ timedWait: (Duration) throws -> EdgeEvent?
) rethrows -> EdgeEvent? {
    while true {
        if let edge = try timedWait(edgeWakeCheckInterval) { return edge }
        if waker.takeWake() { return nil }
    }
}

/// The GPIO lines of a machine, as the board layer needs them: a real implementation
/// (`SystemGPIO`) and a test double (`GNSSHatTesting.FakeGPIO`).
public protocol GPIOLines: Sendable {
    /// Requests `address` as an output, driven to `initiallyActive` from the start.
    func output(_ address: GPIOLineAddress, initiallyActive: Bool, activeLow: Bool) throws -> any OutputLine
    /// Requests `address` as an input reporting `edges`.
    func edges(_ address: GPIOLineAddress, _ edges: GPIOEdges, activeLow: Bool, bias: GPIOBias) throws
        -> any EdgeEventSource
}

/// What the kernel says about a line.
public struct GPIOLineInfo: Hashable, Sendable {
    /// The offset on its chip.
    public var offset: Int
    /// The line's name, if the device tree gives one.
    public var name: String?
    /// Who holds the line, if anyone gave a name (e.g. `gpsd`, `gnss-hat`, `kernel`).
    public var consumer: String?
    /// Whether the line is in use (requested by a program or claimed by a driver).
    public var isUsed: Bool

    public init(offset: Int, name: String?, consumer: String?, isUsed: Bool) {
        self.offset = offset
        self.name = name
        self.consumer = consumer
        self.isUsed = isUsed
    }
}

/// What the kernel says about a chip.
public struct GPIOChipInfo: Hashable, Sendable {
    /// The device path, e.g. `/dev/gpiochip0`.
    public var path: String
    /// The kernel name, e.g. `gpiochip0`.
    public var name: String
    /// The label, e.g. `pinctrl-bcm2711`.
    public var label: String
    /// The number of lines.
    public var lineCount: Int

    public init(path: String, name: String, label: String, lineCount: Int) {
        self.path = path
        self.name = name
        self.label = label
        self.lineCount = lineCount
    }
}

/// Why a GPIO call failed.
public enum GPIOError: HardwareFault, Equatable {
    /// No chip matches; `searched` lists each chip looked at, with its label or its error.
    case chipNotFound(GPIOChipSelector, searched: [String])
    /// The chip has no such line.
    case lineNotFound(GPIOLineSelector, chip: String)
    /// `EBUSY`: the line is held by `consumer` (from the kernel's line info), e.g. another
    /// gnss-hat, gpsd, or a kernel driver such as pps-gpio.
    case busy(FailedCall, line: String, consumer: String?)
    /// `EACCES`/`EPERM`: the user may not open the chip (not in the `gpio` group?).
    case permissionDenied(FailedCall)
    /// This libgpiod API or kernel cannot do what was asked (e.g. realtime timestamps on v1).
    case unsupported(String, device: String)
    /// `ENODEV`/`ENXIO`: the chip went away.
    case vanished(FailedCall)
    /// The line or chip was released or closed.
    case released(device: String)
    /// Any other failed call.
    case failed(FailedCall)

    /// Maps a failed call to the error a caller can act on (also for test doubles).
    public init(_ failure: FailedCall, line: String? = nil, consumer: String? = nil) {
        switch failure.errno {
        case Errno.resourceBusy?: self = .busy(failure, line: line ?? failure.device, consumer: consumer)
        case Errno.permissionDenied?, Errno.notPermitted?: self = .permissionDenied(failure)
        case Errno.noSuchDevice?, Errno.noSuchDeviceOrAddress?: self = .vanished(failure)
        default: self = .failed(failure)
        }
    }

    public var failedCall: FailedCall? {
        switch self {
        case .busy(let f, _, _), .permissionDenied(let f), .vanished(let f), .failed(let f): f
        case .chipNotFound, .lineNotFound, .unsupported, .released: nil
        }
    }

    public var deviceIsGone: Bool {
        switch self {
        case .vanished, .released: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .chipNotFound(let selector, let searched):
            "no GPIO chip matches \(selector); searched: "
                + (searched.isEmpty ? "no /dev/gpiochip* devices" : searched.joined(separator: "; "))
        case .lineNotFound(let line, let chip): "\(chip) has no \(line)"
        case .busy(let f, let line, let consumer):
            "\(line) is busy, held by " + (consumer.map { "\"\($0)\"" } ?? "an unnamed consumer") + ": \(f)"
        case .permissionDenied(let f): "no permission for the GPIO chip (is the user in group gpio?): \(f)"
        case .unsupported(let what, let device): "\(device): \(what) is not supported"
        case .vanished(let f): "the GPIO chip went away: \(f)"
        case .released(let device): "\(device) was released"
        case .failed(let f): "GPIO call failed: \(f)"
        }
    }
}
