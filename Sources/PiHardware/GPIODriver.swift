// The narrow interface between the GPIO logic (finding chips and lines, mapping errors) and
// libgpiod. Two implementations sit behind it, one per libgpiod API, chosen at build time; tests
// put a fake behind it to exercise the logic without a kernel.
internal import LinuxSystem

/// How a line is to be requested.
struct GPIOLineSettings: Hashable, Sendable {
    enum Direction: Hashable, Sendable {
        case input
        case output(initiallyActive: Bool)
    }

    var direction: Direction
    var edges: GPIOEdges?
    var bias: GPIOBias = .asIs
    var activeLow = false
    var clock: EdgeClock = .monotonic
    var consumer: String
}

/// The libgpiod calls the GPIO logic needs. Each method's C calls go through the seam.
protocol GPIODriver: Sendable {
    /// The API (`1.6.3`, `2.1.3`) of the library that runs.
    var libraryVersion: String { get }
    /// Whether edge events can carry `CLOCK_REALTIME` timestamps.
    var supportsRealtimeClock: Bool { get }
    /// The paths of all GPIO chips, `/dev/gpiochip*` in number order.
    func chipPaths() throws(FailedCall) -> [String]
    /// Opens a chip.
    func openChip(_ path: String) throws(FailedCall) -> any GPIOChipHandle
}

/// An open chip. Implementations are not thread-safe and say `@unchecked Sendable` because
/// `GPIOChip` only ever uses them under its lock.
protocol GPIOChipHandle: AnyObject, Sendable {
    var info: GPIOChipInfo { get }
    func lineInfo(_ offset: Int) throws(FailedCall) -> GPIOLineInfo
    /// The offset of the first line called `name`, or nil when there is none.
    func offset(ofLineNamed name: String) throws(FailedCall) -> Int?
    func request(_ offset: Int, _ settings: GPIOLineSettings) throws(FailedCall) -> any GPIOLineHandle
    func close()
}

/// A requested line. Implementations are not thread-safe and say `@unchecked Sendable` because
/// the line objects only ever use them under their lock.
protocol GPIOLineHandle: AnyObject, Sendable {
    func setValue(_ active: Bool) throws(FailedCall)
    func value() throws(FailedCall) -> Bool
    /// Waits up to `timeout`; true when edge events are waiting.
    func waitForEvents(timeout: Duration) throws(FailedCall) -> Bool
    /// The descriptor that is readable while edge events wait, to `poll` beside others; it
    /// stays the line's (released with it).
    func eventDescriptor() throws(FailedCall) -> CInt
    /// Reads the waiting edge events (at least one after `waitForEvents` returned true or the
    /// event descriptor was readable).
    func readEvents() throws(FailedCall) -> [EdgeEvent]
    func release()
}

/// Lists `/dev/gpiochip*` (`opendir`, `readdir`, `closedir`) in number order.
func listGPIOChipPaths(directory: String = "/dev") throws(FailedCall) -> [String] {
    try listDirectory(directory).compactMap { entry -> (Int, String)? in
        guard entry.hasPrefix("gpiochip"), let number = Int(entry.dropFirst(8)) else { return nil }
        return (number, directory + "/" + entry)
    }.sorted { $0.0 < $1.0 }.map(\.1)
}
