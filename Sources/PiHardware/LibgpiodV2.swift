// libgpiod 2.x (v2 API: Raspberry Pi OS trixie, Debian 13): the driver behind `GPIOChip`.
#if GNSSHAT_GPIOD_V2
internal import CGPIOD
internal import CI2C
internal import CLinuxShims
internal import Glibc
internal import LinuxSystem

struct LibgpiodDriver: GPIODriver {
    static let apiMajorVersion = 2

    var libraryVersion: String { String(cString: system_gpiod_api_version()) }

    /// The v2 API chooses the clock per line (Linux 5.11 and later for `CLOCK_REALTIME`).
    var supportsRealtimeClock: Bool { true }

    func chipPaths() throws(FailedCall) -> [String] { try listGPIOChipPaths() }

    func openChip(_ path: String) throws(FailedCall) -> any GPIOChipHandle {
        let chip = try retryingInterrupts("gpiod_chip_open", path) { system_gpiod_chip_open(path) }.get()
        let info: OpaquePointer
        switch retryingInterrupts("gpiod_chip_get_info", path, { system_gpiod_chip_get_info(chip, path) }) {
        case .success(let value): info = value
        case .failure(let failure):
            system_gpiod_chip_close(chip, path)
            throw failure
        }
        defer { system_gpiod_chip_info_free(info) }
        let chipInfo = GPIOChipInfo(
            path: path,
            name: String(cString: system_gpiod_chip_info_get_name(info)),
            label: String(cString: system_gpiod_chip_info_get_label(info)),
            lineCount: system_gpiod_chip_info_get_num_lines(info))
        return LibgpiodV2Chip(chip: chip, info: chipInfo)
    }
}

final class LibgpiodV2Chip: GPIOChipHandle, @unchecked Sendable {
    let info: GPIOChipInfo
    private let chip: OpaquePointer
    private var isClosed = false

    init(chip: OpaquePointer, info: GPIOChipInfo) {
        self.chip = chip
        self.info = info
    }

    deinit { close() }

    func close() {
        if !isClosed { system_gpiod_chip_close(chip, info.path) }
        isClosed = true
    }

    func lineInfo(_ offset: Int) throws(FailedCall) -> GPIOLineInfo {
        let line = try retryingInterrupts("gpiod_chip_get_line_info", info.path) {
            system_gpiod_chip_get_line_info(chip, UInt32(offset), info.path)
        }.get()
        defer { system_gpiod_line_info_free(line) }
        return GPIOLineInfo(
            offset: offset,
            name: system_gpiod_line_info_get_name(line).map { String(cString: $0) },
            consumer: system_gpiod_line_info_get_consumer(line).map { String(cString: $0) },
            isUsed: system_gpiod_line_info_is_used(line))
    }

    func offset(ofLineNamed name: String) throws(FailedCall) -> Int? {
        let result = retryingInterrupts("gpiod_chip_get_line_offset_from_name", info.path) {
            system_gpiod_chip_get_line_offset_from_name(chip, name, info.path)
        }
        switch result {
        case .success(let offset): return Int(offset)
        case .failure(let failure) where failure.errno == .noSuchFileOrDirectory: return nil
        case .failure(let failure): throw failure
        }
    }

    func request(_ offset: Int, _ settings: GPIOLineSettings) throws(FailedCall) -> any GPIOLineHandle {
        let device = "\(info.path) line \(offset)"
        let lineSettings = try retryingInterrupts("gpiod_line_settings_new", device) {
            system_gpiod_line_settings_new(device)
        }.get()
        defer { system_gpiod_line_settings_free(lineSettings) }
        try configure(lineSettings, settings, device)

        let lineConfig = try retryingInterrupts("gpiod_line_config_new", device) {
            system_gpiod_line_config_new(device)
        }.get()
        defer { system_gpiod_line_config_free(lineConfig) }
        var lineOffset = UInt32(offset)
        _ = try retryingInterrupts("gpiod_line_config_add_line_settings", device) {
            system_gpiod_line_config_add_line_settings(lineConfig, &lineOffset, 1, lineSettings, device)
        }.get()

        let requestConfig = try retryingInterrupts("gpiod_request_config_new", device) {
            system_gpiod_request_config_new(device)
        }.get()
        defer { system_gpiod_request_config_free(requestConfig) }
        system_gpiod_request_config_set_consumer(requestConfig, settings.consumer)

        let request = try retryingInterrupts("gpiod_chip_request_lines", device) {
            system_gpiod_chip_request_lines(chip, requestConfig, lineConfig, device)
        }.get()
        return LibgpiodV2Line(request: request, offset: UInt32(offset), device: device, clock: settings.clock)
    }

    private func configure(
        _ lineSettings: OpaquePointer, _ settings: GPIOLineSettings, _ device: String
    ) throws(FailedCall) {
        switch settings.direction {
        case .input:
            _ = try retryingInterrupts("gpiod_line_settings_set_direction", device) {
                system_gpiod_line_settings_set_direction(lineSettings, GPIOD_LINE_DIRECTION_INPUT, device)
            }.get()
        case .output(let active):
            _ = try retryingInterrupts("gpiod_line_settings_set_direction", device) {
                system_gpiod_line_settings_set_direction(lineSettings, GPIOD_LINE_DIRECTION_OUTPUT, device)
            }.get()
            _ = try retryingInterrupts("gpiod_line_settings_set_output_value", device) {
                system_gpiod_line_settings_set_output_value(
                    lineSettings, active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE, device)
            }.get()
        }
        if let edges = settings.edges {
            let edge = switch edges {
            case .rising: GPIOD_LINE_EDGE_RISING
            case .falling: GPIOD_LINE_EDGE_FALLING
            case .both: GPIOD_LINE_EDGE_BOTH
            }
            _ = try retryingInterrupts("gpiod_line_settings_set_edge_detection", device) {
                system_gpiod_line_settings_set_edge_detection(lineSettings, edge, device)
            }.get()
            let clock = settings.clock == .realtime ? GPIOD_LINE_CLOCK_REALTIME : GPIOD_LINE_CLOCK_MONOTONIC
            _ = try retryingInterrupts("gpiod_line_settings_set_event_clock", device) {
                system_gpiod_line_settings_set_event_clock(lineSettings, clock, device)
            }.get()
        }
        let bias: gpiod_line_bias? = switch settings.bias {
        case .asIs: nil
        case .disabled: GPIOD_LINE_BIAS_DISABLED
        case .pullUp: GPIOD_LINE_BIAS_PULL_UP
        case .pullDown: GPIOD_LINE_BIAS_PULL_DOWN
        }
        if let bias {
            _ = try retryingInterrupts("gpiod_line_settings_set_bias", device) {
                system_gpiod_line_settings_set_bias(lineSettings, bias, device)
            }.get()
        }
        system_gpiod_line_settings_set_active_low(lineSettings, settings.activeLow)
    }
}

final class LibgpiodV2Line: GPIOLineHandle, @unchecked Sendable {
    private let request: OpaquePointer
    private let offset: UInt32
    private let device: String
    private let clock: EdgeClock
    private var buffer: OpaquePointer?
    private var isReleased = false

    init(request: OpaquePointer, offset: UInt32, device: String, clock: EdgeClock) {
        self.request = request
        self.offset = offset
        self.device = device
        self.clock = clock
    }

    deinit { release() }

    func setValue(_ active: Bool) throws(FailedCall) {
        _ = try retryingInterrupts("gpiod_line_request_set_value", device) {
            system_gpiod_line_request_set_value(
                request, offset, active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE, device)
        }.get()
    }

    func value() throws(FailedCall) -> Bool {
        try retryingInterrupts("gpiod_line_request_get_value", device) {
            system_gpiod_line_request_get_value(request, offset, device)
        }.get() == 1
    }

    func waitForEvents(timeout: Duration) throws(FailedCall) -> Bool {
        try retryingInterrupts("gpiod_line_request_wait_edge_events", device) {
            system_gpiod_line_request_wait_edge_events(request, timeout.clampedNanoseconds, device)
        }.get() == 1
    }

    func eventDescriptor() throws(FailedCall) -> CInt {
        try retryingInterrupts("gpiod_line_request_get_fd", device) {
            system_gpiod_line_request_get_fd(request, device)
        }.get()
    }

    func readEvents() throws(FailedCall) -> [EdgeEvent] {
        let buffer: OpaquePointer
        if let existing = self.buffer {
            buffer = existing
        } else {
            buffer = try retryingInterrupts("gpiod_edge_event_buffer_new", device) {
                system_gpiod_edge_event_buffer_new(16, device)
            }.get()
            self.buffer = buffer
        }
        let count = try retryingInterrupts("gpiod_line_request_read_edge_events", device) {
            system_gpiod_line_request_read_edge_events(request, buffer, 16, device)
        }.get()
        var events: [EdgeEvent] = []
        for index in 0..<Int(count) {
            guard let event = system_gpiod_edge_event_buffer_get_event(buffer, UInt(index)) else { continue }
            let nanos = system_gpiod_edge_event_get_timestamp_ns(event)
            let rising = system_gpiod_edge_event_get_event_type(event) == GPIOD_EDGE_EVENT_RISING_EDGE
            events.append(EdgeEvent(
                kind: rising ? .rising : .falling,
                timestamp: .seconds(Int64(nanos / 1_000_000_000)) + .nanoseconds(Int64(nanos % 1_000_000_000)),
                clock: clock,
                sequence: UInt64(system_gpiod_edge_event_get_line_seqno(event))))
        }
        return events
    }

    func release() {
        if !isReleased {
            system_gpiod_line_request_release(request, device)
            if let buffer { system_gpiod_edge_event_buffer_free(buffer) }
        }
        isReleased = true
        buffer = nil
    }
}

// MARK: - The seam for libgpiod v2: one function per C call.

func system_gpiod_api_version() -> UnsafePointer<CChar> { gpiod_api_version() }

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

func system_gpiod_chip_get_info(_ chip: OpaquePointer, _ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_get_info", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_get_info(chip)
}

func system_gpiod_chip_info_get_name(_ info: OpaquePointer) -> UnsafePointer<CChar> { gpiod_chip_info_get_name(info) }
func system_gpiod_chip_info_get_label(_ info: OpaquePointer) -> UnsafePointer<CChar> { gpiod_chip_info_get_label(info) }
func system_gpiod_chip_info_get_num_lines(_ info: OpaquePointer) -> Int { gpiod_chip_info_get_num_lines(info) }
func system_gpiod_chip_info_free(_ info: OpaquePointer) { gpiod_chip_info_free(info) }

func system_gpiod_chip_get_line_info(_ chip: OpaquePointer, _ offset: UInt32, _ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_get_line_info", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_get_line_info(chip, offset)
}

func system_gpiod_line_info_get_name(_ info: OpaquePointer) -> UnsafePointer<CChar>? { gpiod_line_info_get_name(info) }
func system_gpiod_line_info_get_consumer(_ info: OpaquePointer) -> UnsafePointer<CChar>? {
    gpiod_line_info_get_consumer(info)
}
func system_gpiod_line_info_is_used(_ info: OpaquePointer) -> Bool { gpiod_line_info_is_used(info) }
func system_gpiod_line_info_free(_ info: OpaquePointer) { gpiod_line_info_free(info) }

func system_gpiod_chip_get_line_offset_from_name(_ chip: OpaquePointer, _ name: String, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_chip_get_line_offset_from_name", device) { return failC(errno) }
    return gpiod_chip_get_line_offset_from_name(chip, name)
}

func system_gpiod_line_settings_new(_ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_line_settings_new", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_line_settings_new()
}

func system_gpiod_line_settings_free(_ settings: OpaquePointer) { gpiod_line_settings_free(settings) }

func system_gpiod_line_settings_set_direction(
    _ settings: OpaquePointer, _ direction: gpiod_line_direction, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_settings_set_direction", device) { return failC(errno) }
    return gpiod_line_settings_set_direction(settings, direction)
}

func system_gpiod_line_settings_set_edge_detection(
    _ settings: OpaquePointer, _ edge: gpiod_line_edge, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_settings_set_edge_detection", device) { return failC(errno) }
    return gpiod_line_settings_set_edge_detection(settings, edge)
}

func system_gpiod_line_settings_set_bias(_ settings: OpaquePointer, _ bias: gpiod_line_bias, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_settings_set_bias", device) { return failC(errno) }
    return gpiod_line_settings_set_bias(settings, bias)
}

func system_gpiod_line_settings_set_active_low(_ settings: OpaquePointer, _ activeLow: Bool) {
    gpiod_line_settings_set_active_low(settings, activeLow)
}

func system_gpiod_line_settings_set_event_clock(
    _ settings: OpaquePointer, _ clock: gpiod_line_clock, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_settings_set_event_clock", device) { return failC(errno) }
    return gpiod_line_settings_set_event_clock(settings, clock)
}

func system_gpiod_line_settings_set_output_value(
    _ settings: OpaquePointer, _ value: gpiod_line_value, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_settings_set_output_value", device) { return failC(errno) }
    return gpiod_line_settings_set_output_value(settings, value)
}

func system_gpiod_line_config_new(_ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_line_config_new", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_line_config_new()
}

func system_gpiod_line_config_free(_ config: OpaquePointer) { gpiod_line_config_free(config) }

func system_gpiod_line_config_add_line_settings(
    _ config: OpaquePointer, _ offsets: UnsafePointer<UInt32>, _ count: Int, _ settings: OpaquePointer,
    _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_config_add_line_settings", device) { return failC(errno) }
    return gpiod_line_config_add_line_settings(config, offsets, count, settings)
}

func system_gpiod_request_config_new(_ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_request_config_new", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_request_config_new()
}

func system_gpiod_request_config_free(_ config: OpaquePointer) { gpiod_request_config_free(config) }

func system_gpiod_request_config_set_consumer(_ config: OpaquePointer, _ consumer: String) {
    gpiod_request_config_set_consumer(config, consumer)
}

func system_gpiod_chip_request_lines(
    _ chip: OpaquePointer, _ requestConfig: OpaquePointer, _ lineConfig: OpaquePointer, _ device: String
) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_chip_request_lines", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_chip_request_lines(chip, requestConfig, lineConfig)
}

func system_gpiod_line_request_release(_ request: OpaquePointer, _ device: String) {
    _ = seamEnter("gpiod_line_request_release", device)
    gpiod_line_request_release(request)
}

func system_gpiod_line_request_set_value(
    _ request: OpaquePointer, _ offset: UInt32, _ value: gpiod_line_value, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_request_set_value", device) { return failC(errno) }
    return gpiod_line_request_set_value(request, offset, value)
}

/// Returns the line value's raw number: 1 active, 0 inactive, -1 (`GPIOD_LINE_VALUE_ERROR`)
/// with `errno` set.
func system_gpiod_line_request_get_value(_ request: OpaquePointer, _ offset: UInt32, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_request_get_value", device) { return failC(errno) }
    return CInt(gpiod_line_request_get_value(request, offset).rawValue)
}

func system_gpiod_line_request_get_fd(_ request: OpaquePointer, _ device: String) -> CInt {
    if let errno = seamEnter("gpiod_line_request_get_fd", device) { return failC(errno) }
    return gpiod_line_request_get_fd(request)
}

func system_gpiod_line_request_wait_edge_events(
    _ request: OpaquePointer, _ timeoutNanoseconds: Int64, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_request_wait_edge_events", device) { return failC(errno) }
    return gpiod_line_request_wait_edge_events(request, timeoutNanoseconds)
}

func system_gpiod_edge_event_buffer_new(_ capacity: Int, _ device: String) -> OpaquePointer? {
    if let errno = seamEnter("gpiod_edge_event_buffer_new", device) {
        Errno.current = errno
        return nil
    }
    return gpiod_edge_event_buffer_new(capacity)
}

func system_gpiod_edge_event_buffer_free(_ buffer: OpaquePointer) { gpiod_edge_event_buffer_free(buffer) }

func system_gpiod_line_request_read_edge_events(
    _ request: OpaquePointer, _ buffer: OpaquePointer, _ max: Int, _ device: String
) -> CInt {
    if let errno = seamEnter("gpiod_line_request_read_edge_events", device) { return failC(errno) }
    return gpiod_line_request_read_edge_events(request, buffer, max)
}

func system_gpiod_edge_event_buffer_get_event(_ buffer: OpaquePointer, _ index: UInt) -> OpaquePointer? {
    gpiod_edge_event_buffer_get_event(buffer, index)
}

func system_gpiod_edge_event_get_event_type(_ event: OpaquePointer) -> gpiod_edge_event_type {
    gpiod_edge_event_get_event_type(event)
}

func system_gpiod_edge_event_get_timestamp_ns(_ event: OpaquePointer) -> UInt64 {
    gpiod_edge_event_get_timestamp_ns(event)
}

func system_gpiod_edge_event_get_line_seqno(_ event: OpaquePointer) -> UInt {
    gpiod_edge_event_get_line_seqno(event)
}
#endif
