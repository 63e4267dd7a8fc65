// libgpiod 1.x (v1 API: Raspberry Pi OS bookworm, Debian 12): the driver behind `GPIOChip`.
#if !GNSSHAT_GPIOD_V2
internal import CGPIOD
internal import CI2C
internal import CLinuxShims
internal import Glibc
internal import LinuxSystem

struct LibgpiodDriver: GPIODriver {
    static let apiMajorVersion = 1

    var libraryVersion: String { String(cString: system_gpiod_version_string()) }

    /// The v1 API reads events through the kernel's v1 uAPI, whose timestamps are
    /// `CLOCK_MONOTONIC` (Linux 5.7 and later) with no choice of clock.
    var supportsRealtimeClock: Bool { false }

    func chipPaths() throws(FailedCall) -> [String] { try listGPIOChipPaths() }

    func openChip(_ path: String) throws(FailedCall) -> any GPIOChipHandle {
        let chip = try retryingInterrupts("gpiod_chip_open", path) { system_gpiod_chip_open(path) }.get()
        return LibgpiodV1Chip(chip: chip, path: path)
    }
}

final class LibgpiodV1Chip: GPIOChipHandle, @unchecked Sendable {
    let info: GPIOChipInfo
    private let chip: OpaquePointer
    private var isClosed = false

    init(chip: OpaquePointer, path: String) {
        self.chip = chip
        self.info = GPIOChipInfo(
            path: path,
            name: String(cString: system_gpiod_chip_name(chip)),
            label: String(cString: system_gpiod_chip_label(chip)),
            lineCount: Int(system_gpiod_chip_num_lines(chip)))
    }

    deinit { close() }

    func close() {
        if !isClosed { system_gpiod_chip_close(chip, info.path) }
        isClosed = true
    }

    private func line(_ offset: Int) throws(FailedCall) -> OpaquePointer {
        try retryingInterrupts("gpiod_chip_get_line", info.path) {
            system_gpiod_chip_get_line(chip, UInt32(offset), info.path)
        }.get()
    }

    func lineInfo(_ offset: Int) throws(FailedCall) -> GPIOLineInfo {
        let line = try line(offset)
        _ = try retryingInterrupts("gpiod_line_update", info.path) { system_gpiod_line_update(line, info.path) }.get()
        return GPIOLineInfo(
            offset: offset,
            name: system_gpiod_line_name(line).map { String(cString: $0) },
            consumer: system_gpiod_line_consumer(line).map { String(cString: $0) },
            isUsed: system_gpiod_line_is_used(line))
    }

    func offset(ofLineNamed name: String) throws(FailedCall) -> Int? {
        let found = retryingInterrupts("gpiod_chip_find_line", info.path) {
            system_gpiod_chip_find_line(chip, name, info.path)
        }
        switch found {
        case .success(let line): return Int(system_gpiod_line_offset(line))
        case .failure(let failure) where failure.errno == .noSuchFileOrDirectory: return nil
        case .failure(let failure): throw failure
        }
    }

    func request(_ offset: Int, _ settings: GPIOLineSettings) throws(FailedCall) -> any GPIOLineHandle {
        let line = try line(offset)
        var flags: CInt = settings.activeLow ? CInt(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        switch settings.bias {
        case .asIs: break
        case .disabled: flags |= CInt(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: flags |= CInt(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: flags |= CInt(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
        let type: Int
        var initial: CInt = 0
        switch (settings.direction, settings.edges) {
        case (.output(let active), _):
            type = GPIOD_LINE_REQUEST_DIRECTION_OUTPUT
            initial = active ? 1 : 0
        case (.input, nil): type = GPIOD_LINE_REQUEST_DIRECTION_INPUT
        case (.input, .rising?): type = GPIOD_LINE_REQUEST_EVENT_RISING_EDGE
        case (.input, .falling?): type = GPIOD_LINE_REQUEST_EVENT_FALLING_EDGE
        case (.input, .both?): type = GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES
        }
        let device = "\(info.path) line \(offset)"
        _ = try settings.consumer.withCString { consumer in
            var config = gpiod_line_request_config(consumer: consumer, request_type: CInt(type), flags: flags)
            return retryingInterrupts("gpiod_line_request", device) {
                system_gpiod_line_request(line, &config, initial, device)
            }
        }.get()
        return LibgpiodV1Line(line: line, device: device)
    }
}

final class LibgpiodV1Line: GPIOLineHandle, @unchecked Sendable {
    private let line: OpaquePointer
    private let device: String
    private var isReleased = false
    /// v1 events carry no sequence number; count them here.
    private var sequence: UInt64 = 0

    init(line: OpaquePointer, device: String) {
        self.line = line
        self.device = device
    }

    deinit { release() }

    func setValue(_ active: Bool) throws(FailedCall) {
        _ = try retryingInterrupts("gpiod_line_set_value", device) {
            system_gpiod_line_set_value(line, active ? 1 : 0, device)
        }.get()
    }

    func value() throws(FailedCall) -> Bool {
        try retryingInterrupts("gpiod_line_get_value", device) { system_gpiod_line_get_value(line, device) }.get() != 0
    }

    func waitForEvents(timeout: Duration) throws(FailedCall) -> Bool {
        let nanos = timeout.clampedNanoseconds
        var ts = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
        return try retryingInterrupts("gpiod_line_event_wait", device) {
            system_gpiod_line_event_wait(line, &ts, device)
        }.get() == 1
    }

    func eventDescriptor() throws(FailedCall) -> CInt {
        try retryingInterrupts("gpiod_line_event_get_fd", device) { system_gpiod_line_event_get_fd(line, device) }.get()
    }

    func readEvents() throws(FailedCall) -> [EdgeEvent] {
        var events = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        let count = try events.withUnsafeMutableBufferPointer { buffer in
            retryingInterrupts("gpiod_line_event_read_multiple", device) {
                system_gpiod_line_event_read_multiple(line, buffer.baseAddress, UInt32(buffer.count), device)
            }
        }.get()
        return events.prefix(Int(count)).map { event in
            sequence += 1
            return EdgeEvent(
                kind: event.event_type == CInt(GPIOD_LINE_EVENT_RISING_EDGE) ? .rising : .falling,
                timestamp: .seconds(event.ts.tv_sec) + .nanoseconds(event.ts.tv_nsec),
                clock: .monotonic,
                sequence: sequence)
        }
    }

    func release() {
        if !isReleased { system_gpiod_line_release(line, device) }
        isReleased = true
    }
}

// MARK: - The seam for libgpiod v1: one function per C call.

func system_gpiod_version_string() -> UnsafePointer<CChar> { gpiod_version_string() }

func system_gpiod_chip_open(_ path: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_open", path) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_open(path)
}

func system_gpiod_chip_close(_ chip: OpaquePointer, _ device: String) {
    _ = seamEnter("gpiod_chip_close", device)
    gpiod_chip_close(chip)
}

func system_gpiod_chip_name(_ chip: OpaquePointer) -> UnsafePointer<CChar> { gpiod_chip_name(chip) }
func system_gpiod_chip_label(_ chip: OpaquePointer) -> UnsafePointer<CChar> { gpiod_chip_label(chip) }
func system_gpiod_chip_num_lines(_ chip: OpaquePointer) -> UInt32 { gpiod_chip_num_lines(chip) }

func system_gpiod_chip_get_line(_ chip: OpaquePointer, _ offset: UInt32, _ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_get_line", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_get_line(chip, offset)
}

func system_gpiod_chip_find_line(_ chip: OpaquePointer, _ name: String, _ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_find_line", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_find_line(chip, name)
}

func system_gpiod_line_update(_ line: OpaquePointer, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_update", device) { return failC(errno) }
    return gpiod_line_update(line)
}

func system_gpiod_line_offset(_ line: OpaquePointer) -> UInt32 { gpiod_line_offset(line) }
func system_gpiod_line_name(_ line: OpaquePointer) -> UnsafePointer<CChar>? { gpiod_line_name(line) }
func system_gpiod_line_consumer(_ line: OpaquePointer) -> UnsafePointer<CChar>? { gpiod_line_consumer(line) }
func system_gpiod_line_is_used(_ line: OpaquePointer) -> Bool { gpiod_line_is_used(line) }

func system_gpiod_line_request(
    _ line: OpaquePointer, _ config: UnsafePointer<gpiod_line_request_config>, _ initial: CInt, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_request", device) { return failC(errno) }
    return gpiod_line_request(line, config, initial)
}

func system_gpiod_line_release(_ line: OpaquePointer, _ device: String) {
    _ = seamEnter("gpiod_line_release", device)
    gpiod_line_release(line)
}

func system_gpiod_line_set_value(_ line: OpaquePointer, _ value: CInt, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_set_value", device) { return failC(errno) }
    return gpiod_line_set_value(line, value)
}

func system_gpiod_line_get_value(_ line: OpaquePointer, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_get_value", device) { return failC(errno) }
    return gpiod_line_get_value(line)
}

func system_gpiod_line_event_wait(_ line: OpaquePointer, _ timeout: UnsafePointer<timespec>, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_event_wait", device) { return failC(errno) }
    return gpiod_line_event_wait(line, timeout)
}

func system_gpiod_line_event_get_fd(_ line: OpaquePointer, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_event_get_fd", device) { return failC(errno) }
    return gpiod_line_event_get_fd(line)
}

func system_gpiod_line_event_read_multiple(
    _ line: OpaquePointer, _ events: UnsafeMutablePointer<gpiod_line_event>?, _ count: UInt32, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_event_read_multiple", device) { return failC(errno) }
    return gpiod_line_event_read_multiple(line, events, count)
}
#endif
