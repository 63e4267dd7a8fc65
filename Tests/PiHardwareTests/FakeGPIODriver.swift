import LinuxSystem
@testable import PiHardware

/// A fake libgpiod behind `GPIODriver`: chips with labels and named lines, lines that remember
/// their settings and values, edge events a test queues. Its calls go through the seam's
/// `seamEnter`, so tests inject errors by the libgpiod call names the real drivers use.
final class FakeGPIODriver: GPIODriver {
    struct Line {
        var name: String?
        var consumer: String?
        var settings: GPIOLineSettings?
        var value = false
        var events: [EdgeEvent] = []
        /// The line's event descriptor (an eventfd), made when first asked for: readable while
        /// events wait, as the kernel's is.
        var ready: Waker?
    }

    struct Chip {
        var name: String
        var label: String
        var lines: [Line]
        var openError: Errno?
        var openCount = 0
    }

    struct State {
        var chips: [String: Chip] = [:]
        var order: [String] = []
        var openHandles = 0
    }

    let state = Lock(State())
    let supportsRealtimeClock: Bool
    var libraryVersion: String { "fake" }

    init(realtime: Bool = false) {
        supportsRealtimeClock = realtime
    }

    /// Adds `/dev/<name>` with `lines` lines, the named ones given in `names`.
    func addChip(_ name: String, label: String, lines: Int = 54, names: [Int: String] = [:], openError: Errno? = nil) {
        state.withLock { state in
            let path = "/dev/" + name
            state.chips[path] = Chip(
                name: name, label: label,
                lines: (0..<lines).map { Line(name: names[$0]) }, openError: openError)
            state.order.append(path)
        }
    }

    /// Marks a line as held by someone else.
    func hold(_ path: String, _ offset: Int, consumer: String?) {
        state.withLock { $0.chips[path]?.lines[offset].consumer = consumer ?? "" }
    }

    func line(_ path: String, _ offset: Int) -> Line? {
        state.withLock { $0.chips[path]?.lines[offset] }
    }

    func queue(_ path: String, _ offset: Int, _ events: [EdgeEvent]) {
        state.withLock { state in
            state.chips[path]?.lines[offset].events += events
            state.chips[path]?.lines[offset].ready?.wake()
        }
    }

    var openHandles: Int { state.withLock { $0.openHandles } }

    func chipPaths() throws(FailedCall) -> [String] {
        if let errno = seamEnter("opendir", "/dev") { throw FailedCall(call: "opendir", device: "/dev", errno: errno) }
        return state.withLock { $0.order }
    }

    func openChip(_ path: String) throws(FailedCall) -> any GPIOChipHandle {
        if let errno = seamEnter("gpiod_chip_open", path) {
            throw FailedCall(call: "gpiod_chip_open", device: path, errno: errno)
        }
        let info = try state.withLock { state throws(FailedCall) -> GPIOChipInfo in
            guard var chip = state.chips[path] else {
                throw FailedCall(call: "gpiod_chip_open", device: path, errno: .noSuchFileOrDirectory)
            }
            if let errno = chip.openError { throw FailedCall(call: "gpiod_chip_open", device: path, errno: errno) }
            chip.openCount += 1
            state.chips[path] = chip
            state.openHandles += 1
            return GPIOChipInfo(path: path, name: chip.name, label: chip.label, lineCount: chip.lines.count)
        }
        return FakeChipHandle(driver: self, info: info)
    }
}

final class FakeChipHandle: GPIOChipHandle, @unchecked Sendable {
    let driver: FakeGPIODriver
    let info: GPIOChipInfo
    private var closed = false

    init(driver: FakeGPIODriver, info: GPIOChipInfo) {
        self.driver = driver
        self.info = info
    }

    func lineInfo(_ offset: Int) throws(FailedCall) -> GPIOLineInfo {
        if let errno = seamEnter("gpiod_chip_get_line_info", info.path) {
            throw FailedCall(call: "gpiod_chip_get_line_info", device: info.path, errno: errno)
        }
        let line = driver.line(info.path, offset)
        return GPIOLineInfo(
            offset: offset, name: line?.name, consumer: line?.consumer.flatMap { $0.isEmpty ? nil : $0 },
            isUsed: line?.consumer != nil)
    }

    func offset(ofLineNamed name: String) throws(FailedCall) -> Int? {
        if let errno = seamEnter("gpiod_chip_get_line_offset_from_name", info.path) {
            throw FailedCall(call: "gpiod_chip_get_line_offset_from_name", device: info.path, errno: errno)
        }
        return driver.state.withLock { $0.chips[info.path]?.lines.firstIndex { $0.name == name } }
    }

    func request(_ offset: Int, _ settings: GPIOLineSettings) throws(FailedCall) -> any GPIOLineHandle {
        let device = "\(info.path) line \(offset)"
        if let errno = seamEnter("gpiod_chip_request_lines", device) {
            throw FailedCall(call: "gpiod_chip_request_lines", device: device, errno: errno)
        }
        try driver.state.withLock { state throws(FailedCall) in
            guard var line = state.chips[info.path]?.lines[offset] else { return }
            if line.consumer != nil {
                throw FailedCall(call: "gpiod_chip_request_lines", device: device, errno: .resourceBusy)
            }
            line.consumer = settings.consumer
            line.settings = settings
            if case .output(let active) = settings.direction { line.value = active }
            state.chips[info.path]?.lines[offset] = line
        }
        return FakeLineHandle(driver: driver, path: info.path, offset: offset, device: device)
    }

    func close() {
        if !closed { driver.state.withLock { $0.openHandles -= 1 } }
        closed = true
    }
}

final class FakeLineHandle: GPIOLineHandle, @unchecked Sendable {
    let driver: FakeGPIODriver
    let path: String
    let offset: Int
    let device: String

    init(driver: FakeGPIODriver, path: String, offset: Int, device: String) {
        self.driver = driver
        self.path = path
        self.offset = offset
        self.device = device
    }

    private func enter(_ call: SystemCall) throws(FailedCall) {
        if let errno = seamEnter(call, device) { throw FailedCall(call: call.rawValue, device: device, errno: errno) }
    }

    func setValue(_ active: Bool) throws(FailedCall) {
        try enter("gpiod_line_request_set_value")
        driver.state.withLock { $0.chips[path]?.lines[offset].value = active }
    }

    func value() throws(FailedCall) -> Bool {
        try enter("gpiod_line_request_get_value")
        return driver.state.withLock { $0.chips[path]?.lines[offset].value ?? false }
    }

    func waitForEvents(timeout: Duration) throws(FailedCall) -> Bool {
        try enter("gpiod_line_request_wait_edge_events")
        return driver.state.withLock { !($0.chips[path]?.lines[offset].events.isEmpty ?? true) }
    }

    func eventDescriptor() throws(FailedCall) -> CInt {
        try enter("gpiod_line_request_get_fd")
        return try driver.state.withLock { state throws(FailedCall) -> CInt in
            guard var line = state.chips[path]?.lines[offset], line.settings?.edges != nil else {
                throw FailedCall(call: "gpiod_line_request_get_fd", device: device, errno: .notPermitted)
            }
            if line.ready == nil {
                do throws(SystemError) {
                    line.ready = try Waker()
                } catch {
                    throw FailedCall(call: "eventfd", device: device, errno: error.failedCall?.errno)
                }
                if !line.events.isEmpty { line.ready?.wake() }
                state.chips[path]?.lines[offset] = line
            }
            return line.ready?.rawDescriptor ?? -1
        }
    }

    func readEvents() throws(FailedCall) -> [EdgeEvent] {
        try enter("gpiod_line_request_read_edge_events")
        return driver.state.withLock { state in
            let events = Array(state.chips[path]?.lines[offset].events.prefix(2) ?? [])
            state.chips[path]?.lines[offset].events.removeFirst(events.count)
            if state.chips[path]?.lines[offset].events.isEmpty == true {
                state.chips[path]?.lines[offset].ready?.drain()
            }
            return events
        }
    }

    func release() {
        driver.state.withLock { state in
            state.chips[path]?.lines[offset].consumer = nil
            state.chips[path]?.lines[offset].settings = nil
        }
    }
}
