// The scenario list. The rig scenarios here prove the rig end to end (static link, libgpiod
// in the guest, I2C_RDWR on the simulated receiver through PiHardware's I2CAdapter, the verdict
// path) with plain libgpiod calls;
// PiHardwareScenarios.swift runs the real PiHardware drivers against the simulated hat;
// ReceiverScenarios.swift runs the real Receiver (power follows subscriptions over DDC and
// UART, NAK storm, busy line) against a simulated receiver played from outside by HatSimulator;
// the fault scenarios make the kernel take the hardware away under a streaming Receiver (the DDC
// adapter unbound, I2C time-outs, the GPIO chip unbound).
import CGPIOD
import LinuxSystem
import PiHardware

/// Every scenario, in run order.
let scenarios: [Scenario] = rigScenarios + piHardwareScenarios + receiverScenarios + faultScenarios

/// Faults at the hardware seam made by the guest's kernel while a Receiver streams over DDC (one file each).
let faultScenarios: [Scenario] = [
    Scenario("receiver.ddc-adapter-unplugged") { try await checkAdapterUnplugged() },
    Scenario("receiver.ddc-timeout-bursts") { try await checkI2CTimeoutBursts() },
    Scenario("receiver.gpio-chip-vanishes") { try await checkGPIOChipVanishes() },
]

/// The rig's own scenarios: plain C calls, no project code.
let rigScenarios: [Scenario] = [
    Scenario("link.libgpiod-api") { try checkLinkedLibgpiod() },
    Scenario("gpio.line-names") { try checkLineNames() },
    Scenario("gpio.drive-output") { try checkDriveOutput() },
    Scenario("gpio.level-notify") { try checkLevelNotify() },
    Scenario("ddc.rdwr-stream") { try checkStreamRead() },
    Scenario("ddc.host-write") { try checkHostWrite() },
    Scenario("ddc.nak") { try checkNAK() },
]

/// A UBX-NAV-STATUS poll request (class 0x01, id 0x03, empty payload) with its checksum.
let navStatusPoll: [UInt8] = [0xB5, 0x62, 0x01, 0x03, 0x00, 0x00, 0x04, 0x0D]

/// The statically linked libgpiod is the one this build asked for (1.x for v1, 2.x for v2).
func checkLinkedLibgpiod() throws {
    #if GNSSHAT_GPIOD_V2
    let version = String(cString: gpiod_api_version())
    try expect(version.hasPrefix("2."), "libgpiod \(version) linked into the v2 build")
    #else
    let version = String(cString: gpiod_version_string())
    try expect(version.hasPrefix("1."), "libgpiod \(version) linked into the v1 build")
    #endif
    emit("libgpiod \(version)")
}

/// libgpiod sees the simulated chip by its label and finds every line at its offset by name.
func checkLineNames() throws {
    let lines = try GPIOSimBank()
    let path = try lines.chipPath()
    try expect(!lines.names.isEmpty, "the simulated chip has no lines")
    guard let chip = gpiod_chip_open(path) else {
        throw SystemError.ofLastCall("gpiod_chip_open", on: path)
    }
    defer { gpiod_chip_close(chip) }
    #if GNSSHAT_GPIOD_V2
    guard let info = gpiod_chip_get_info(chip) else {
        throw SystemError.ofLastCall("gpiod_chip_get_info", on: "gnss-hat-sim")
    }
    let label = String(cString: gpiod_chip_info_get_label(info))
    gpiod_chip_info_free(info)
    #else
    let label = String(cString: gpiod_chip_label(chip))
    #endif
    try expect(label == "gnss-hat-sim", "chip label \(label)")
    for (offset, name) in lines.names.enumerated() {
        #if GNSSHAT_GPIOD_V2
        let found = Int(gpiod_chip_get_line_offset_from_name(chip, name))
        #else
        let found = gpiod_chip_find_line(chip, name).map { Int(gpiod_line_offset($0)) } ?? -1
        #endif
        try expect(found == offset, "line \(name) found at \(found), expected \(offset)")
    }
}

/// Driving GNSS_PWR_EN through libgpiod moves the simulated level; releasing it lets the
/// line fall back to its pull-down.
func checkDriveOutput() throws {
    let lines = try GPIOSimBank()
    let name = "GNSS_PWR_EN"
    let offset = try lines.offset(of: name)
    try expect(try !lines.level(of: name), "\(name) is high before anybody drives it")
    guard let chip = gpiod_chip_open(try lines.chipPath()) else {
        throw SystemError.ofLastCall("gpiod_chip_open", on: "gnss-hat-sim")
    }
    defer { gpiod_chip_close(chip) }
    let release = try requestOutputHigh(chip: chip, offset: offset)
    let wentHigh = try lines.waitForLevel(of: name, true, timeoutMilliseconds: 5000)
    release()
    try expect(wentHigh, "\(name) did not go high while requested as an output driven high")
    try expect(try lines.waitForLevel(of: name, false, timeoutMilliseconds: 5000),
               "\(name) stayed high after the release")
}

/// A simulator watching GNSS_PWR_EN is woken by poll(2) when the driver switches it, both ways.
func checkLevelNotify() throws {
    let lines = try GPIOSimBank()
    let name = "GNSS_PWR_EN"
    let watch = try lines.watch(name)
    try expect(try !watch.level(), "\(name) is high before anybody drives it")
    guard let chip = gpiod_chip_open(try lines.chipPath()) else {
        throw SystemError.ofLastCall("gpiod_chip_open", on: "gnss-hat-sim")
    }
    defer { gpiod_chip_close(chip) }
    let release = try requestOutputHigh(chip: chip, offset: try lines.offset(of: name))
    let notifiedOn = try watch.waitForChange(timeoutMilliseconds: 5000)
    let levelOn = try watch.level()
    release()
    try expect(notifiedOn, "no poll(2) notification when \(name) went high")
    try expect(levelOn, "\(name) is low after the notification")
    try expect(try watch.waitForChange(timeoutMilliseconds: 5000), "no notification when \(name) was released")
    try expect(try !watch.level(), "\(name) is high after the release")
}

/// Requests line `offset` as an output driven high; returns the call that releases it.
func requestOutputHigh(chip: OpaquePointer, offset: Int) throws -> () -> Void {
    #if GNSSHAT_GPIOD_V2
    guard let settings = gpiod_line_settings_new() else {
        throw SystemError.ofLastCall("gpiod_line_settings_new", on: "gnss-hat-sim")
    }
    defer { gpiod_line_settings_free(settings) }
    guard let config = gpiod_line_config_new() else {
        throw SystemError.ofLastCall("gpiod_line_config_new", on: "gnss-hat-sim")
    }
    defer { gpiod_line_config_free(config) }
    guard let requestConfig = gpiod_request_config_new() else {
        throw SystemError.ofLastCall("gpiod_request_config_new", on: "gnss-hat-sim")
    }
    defer { gpiod_request_config_free(requestConfig) }
    gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT)
    gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_ACTIVE)
    var lineOffset = UInt32(offset)
    guard gpiod_line_config_add_line_settings(config, &lineOffset, 1, settings) == 0 else {
        throw SystemError.ofLastCall("gpiod_line_config_add_line_settings", on: "gnss-hat-sim")
    }
    gpiod_request_config_set_consumer(requestConfig, "gnss-hat-hil")
    guard let request = gpiod_chip_request_lines(chip, requestConfig, config) else {
        throw SystemError.ofLastCall("gpiod_chip_request_lines", on: "gnss-hat-sim")
    }
    return { gpiod_line_request_release(request) }
    #else
    guard let line = gpiod_chip_get_line(chip, UInt32(offset)) else {
        throw SystemError.ofLastCall("gpiod_chip_get_line", on: "gnss-hat-sim")
    }
    guard gpiod_line_request_output(line, "gnss-hat-hil", 1) == 0 else {
        throw SystemError.ofLastCall("gpiod_line_request_output", on: "gnss-hat-sim")
    }
    return { gpiod_line_release(line) }
    #endif
}

/// I2C_RDWR reads the byte count (0xFD/0xFE, big-endian) and then the stream (0xFF) fed
/// through /dev/ubx-sim; an empty stream reads 0xFF.
func checkStreamRead() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    let output = Array((0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) })
    try ddc.feed(output)
    let bus = try I2CAdapter(path: try DDCSimModule.busPath())
    let count = try bus.writeRead(address: DDCSimModule.address, [0xFD], readCount: 2)
    try expect(count == [0x01, 0x2C], "count bytes \(count), expected [1, 44]")
    let stream = try bus.writeRead(address: DDCSimModule.address, [0xFF], readCount: 300)
    try expect(stream == output, "the stream differs from what was fed")
    let empty = try bus.read(address: DDCSimModule.address, count: 4)
    try expect(empty == [0xFF, 0xFF, 0xFF, 0xFF], "an empty stream read \(empty)")
}

/// A host write of two or more bytes reaches the simulator; a one-byte write only sets the register.
func checkHostWrite() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    let bus = try I2CAdapter(path: try DDCSimModule.busPath())
    try expect(try !ddc.hostBytesWaiting(timeoutMilliseconds: 0), "host bytes wait before any write")
    try bus.write(address: DDCSimModule.address, navStatusPoll)
    try expect(try ddc.hostBytesWaiting(timeoutMilliseconds: 5000), "poll(2) shows no host bytes after a write")
    try bus.write(address: DDCSimModule.address, [0xFD])
    let received = try ddc.hostBytes()
    try expect(received == navStatusPoll, "the simulator received \(received)")
    let stats = try ddc.stats()
    try expect(stats["register_sets"] == 1, "register_sets \(stats["register_sets"] ?? 0), expected 1")
}

/// A not-acknowledged transfer fails with EREMOTEIO (as on a Pi) and the next one succeeds.
func checkNAK() throws {
    let ddc = DDCSimModule()
    try ddc.reset()
    try ddc.nakNext(1)
    let bus = try I2CAdapter(path: try DDCSimModule.busPath())
    do {
        _ = try bus.writeRead(address: DDCSimModule.address, [0xFD], readCount: 2)
        throw ScenarioFailure("a NAKed transfer succeeded")
    } catch let error as I2CError {
        try expect(error.failedCall?.errno == .remoteIO, "a NAK failed with \(error), expected EREMOTEIO")
    }
    let count = try bus.writeRead(address: DDCSimModule.address, [0xFD], readCount: 2)
    try expect(count == [0, 0], "count after the NAK \(count)")
    try expect(try ddc.stats()["naks"] == 1, "the module counted no NAK")
}

