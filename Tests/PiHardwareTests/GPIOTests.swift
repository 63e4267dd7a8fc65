import LinuxSystem
@testable import PiHardware
import Testing

/// A Raspberry Pi 4 as libgpiod sees it: the header chip and the firmware's expander.
func pi4() -> FakeGPIODriver {
    let driver = FakeGPIODriver()
    driver.addChip("gpiochip0", label: "pinctrl-bcm2711", names: [17: "GPIO17", 18: "GPIO18", 4: "GPIO4"])
    driver.addChip("gpiochip1", label: "raspberrypi-exp-gpio", lines: 8, names: [2: "GLOBAL_RESET"])
    return driver
}

@Suite("GPIO logic against a fake libgpiod")
struct GPIOChipTests {
    @Test("a chip is found by path, by name and by label")
    func findChip() throws {
        let driver = pi4()
        #expect(try GPIOChip.open(.path("/dev/gpiochip1"), driver: driver).info.label == "raspberrypi-exp-gpio")
        #expect(try GPIOChip.open(.name("gpiochip0"), driver: driver).info.path == "/dev/gpiochip0")
        #expect(try GPIOChip.open(.label("raspberrypi-exp-gpio"), driver: driver).info.name == "gpiochip1")
        // Chips opened only to read their label are closed again.
        #expect(driver.openHandles == 0)
    }

    @Test("auto picks the Pi's header chip wherever it is numbered", arguments: [
        (["gpio-sim.0": "gpio-sim", "gpiochip0": "pinctrl-bcm2711"], "pinctrl-bcm2711"),
        (["gpiochip0": "raspberrypi-exp-gpio", "gpiochip1": "pinctrl-bcm2835"], "pinctrl-bcm2835"),
        (["gpiochip0": "gpio-brcmstb@107d508500", "gpiochip4": "pinctrl-rp1"], "pinctrl-rp1"),
        (["gpiochip0": "pinctrl-rp1", "gpiochip10": "gpio-brcmstb@107d517c00"], "pinctrl-rp1"),
        (["gpiochip0": "pinctrl-bcm2835", "gpiochip1": "pinctrl-bcm2711"], "pinctrl-bcm2711"),
    ])
    func automatic(chips: [String: String], expected: String) throws {
        let driver = FakeGPIODriver()
        for (name, label) in chips.sorted(by: { $0.key < $1.key }) { driver.addChip(name, label: label) }
        let chip = try GPIOChip.open(.automatic, driver: driver)
        #expect(chip.info.label == expected)
        #expect(driver.openHandles == 1)
    }

    @Test("no matching chip says which chips were looked at")
    func notFound() throws {
        let driver = FakeGPIODriver()
        driver.addChip("gpiochip0", label: "gpio-sim.0-node0")
        driver.addChip("gpiochip1", label: "INT34C5:00", openError: .ioError)
        #expect(throws: GPIOError.chipNotFound(.automatic, searched: [
            "/dev/gpiochip0 (label gpio-sim.0-node0)", "/dev/gpiochip1 (Input/output error (EIO))",
        ])) {
            try GPIOChip.open(.automatic, driver: driver)
        }
        #expect(throws: GPIOError.chipNotFound(.path("/dev/gpiochip9"), searched: [
            "/dev/gpiochip9 (No such file or directory (ENOENT))",
        ])) {
            try GPIOChip.open(.path("/dev/gpiochip9"), driver: driver)
        }
        let error = GPIOError.chipNotFound(.automatic, searched: [])
        #expect(error.description.contains("pinctrl-bcm2711, pinctrl-bcm2835, pinctrl-rp1"))
        #expect(error.description.contains("no /dev/gpiochip*"))
    }

    @Test("a chip that may not be opened is reported as such, not as missing")
    func permission() throws {
        let driver = FakeGPIODriver()
        driver.addChip("gpiochip0", label: "pinctrl-bcm2711", openError: .permissionDenied)
        #expect {
            try GPIOChip.open(.automatic, driver: driver)
        } throws: { error in
            guard case .permissionDenied(let failure) = error as? GPIOError else { return false }
            return failure == FailedCall(call: "gpiod_chip_open", device: "/dev/gpiochip0", errno: .permissionDenied)
        }
        #expect(throws: GPIOError.self) { try GPIOChip.open(.path("/dev/gpiochip0"), driver: driver) }
    }

    @Test("a line is found by offset or by name")
    func findLine() throws {
        let chip = try GPIOChip.open(.automatic, driver: pi4())
        #expect(try chip.lineInfo(.name("GPIO17")).offset == 17)
        #expect(try chip.lineInfo(.offset(4)).name == "GPIO4")
        #expect(throws: GPIOError.lineNotFound(.name("GPIO99"), chip: "gpiochip0 (pinctrl-bcm2711)")) {
            try chip.lineInfo(.name("GPIO99"))
        }
        #expect(throws: GPIOError.lineNotFound(.offset(54), chip: "gpiochip0 (pinctrl-bcm2711)")) {
            try chip.requestOutput(.offset(54))
        }
        #expect(throws: GPIOError.lineNotFound(.offset(-1), chip: "gpiochip0 (pinctrl-bcm2711)")) {
            try chip.requestOutput(.offset(-1))
        }
    }

    @Test("selectors parse from board files")
    func parsing() {
        #expect(GPIOChipSelector("auto") == .automatic)
        #expect(GPIOChipSelector("/dev/gpiochip4") == .path("/dev/gpiochip4"))
        #expect(GPIOChipSelector("gpiochip4") == .name("gpiochip4"))
        #expect(GPIOChipSelector("pinctrl-rp1") == .label("pinctrl-rp1"))
        #expect(GPIOChipSelector("gpiochip") == .label("gpiochip"))
        #expect(GPIOLineSelector("17") == .offset(17))
        #expect(GPIOLineSelector("GPIO17") == .name("GPIO17"))
    }

    @Test("an output is requested with its initial value, polarity and consumer, and drives the line")
    func output() throws {
        let driver = pi4()
        let chip = try GPIOChip.open(.automatic, driver: driver)
        let line = try chip.requestOutput(.name("GPIO17"), initiallyActive: true, activeLow: true)
        let settings = try #require(driver.line("/dev/gpiochip0", 17)?.settings)
        #expect(settings == GPIOLineSettings(
            direction: .output(initiallyActive: true), activeLow: true, consumer: "gnss-hat"))
        #expect(try line.isActive())
        try line.setActive(false)
        #expect(driver.line("/dev/gpiochip0", 17)?.value == false)
        #expect(try line.isActive() == false)
        #expect(line.name == "gpiochip0 (pinctrl-bcm2711) line 17 \"GPIO17\"")
    }

    @Test("a busy line names who holds it", arguments: ["gpsd", "pps-gpio"])
    func busy(holder: String) throws {
        let driver = pi4()
        driver.hold("/dev/gpiochip0", 18, consumer: holder)
        let chip = try GPIOChip.open(.automatic, driver: driver)
        do {
            _ = try chip.requestInput(.offset(18), edges: .rising)
            Issue.record("a held line was granted")
        } catch {
            guard case .busy(let failure, let line, let consumer) = error else {
                Issue.record("expected .busy, got \(error)")
                return
            }
            #expect(consumer == holder)
            #expect(line == "gpiochip0 (pinctrl-bcm2711) line 18")
            #expect(failure.errno == .resourceBusy)
            #expect(failure.call == "gpiod_chip_request_lines")
            #expect(error.description.contains("\"\(holder)\""))
        }
    }

    @Test("an unnamed holder is still reported busy")
    func busyUnnamed() throws {
        let driver = pi4()
        driver.hold("/dev/gpiochip0", 18, consumer: nil)
        let chip = try GPIOChip.open(.automatic, driver: driver)
        #expect(throws: GPIOError.busy(
            FailedCall(call: "gpiod_chip_request_lines", device: "/dev/gpiochip0 line 18", errno: .resourceBusy),
            line: "gpiochip0 (pinctrl-bcm2711) line 18", consumer: nil)
        ) {
            try chip.requestOutput(.offset(18))
        }
    }

    @Test("errors injected into libgpiod calls are typed and name the call", arguments: [
        ("gpiod_chip_request_lines", Errno.permissionDenied, "permissionDenied"),
        ("gpiod_chip_request_lines", .invalidArgument, "failed"),
        ("gpiod_line_request_set_value", .ioError, "failed"),
        ("gpiod_line_request_set_value", .noSuchDevice, "vanished"),
        ("gpiod_line_request_get_value", .ioError, "failed"),
        ("gpiod_line_request_wait_edge_events", .ioError, "failed"),
        ("gpiod_line_request_read_edge_events", .noSuchDevice, "vanished"),
        ("gpiod_chip_get_line_offset_from_name", .ioError, "failed"),
        ("gpiod_chip_open", .permissionDenied, "permissionDenied"),
        ("opendir", .permissionDenied, "permissionDenied"),
    ] as [(SystemCall, Errno, String)])
    func injected(call: SystemCall, errno: Errno, expected: String) throws {
        let driver = pi4()
        driver.queue(
            "/dev/gpiochip0", 4, [EdgeEvent(kind: .rising, timestamp: .seconds(1), clock: .monotonic, sequence: 1)])
        let mock = SeamMock()
        mock.fail(call, with: errno)
        do {
            try SeamMock.$current.withValue(mock) {
                let chip = try GPIOChip.open(.automatic, driver: driver)
                let output = try chip.requestOutput(.name("GPIO17"))
                try output.setActive(true)
                _ = try output.isActive()
                let input = try chip.requestInput(.offset(4), edges: .both)
                _ = try input.nextEdge(timeout: .zero)
            }
            Issue.record("\(call) failing with \(errno) did not throw")
        } catch {
            let error = try #require(error as? GPIOError)
            let name = switch error {
            case .permissionDenied: "permissionDenied"
            case .vanished: "vanished"
            case .failed: "failed"
            default: "\(error)"
            }
            #expect(name == expected)
            #expect(error.failedCall?.call == call.rawValue)
            #expect(error.failedCall?.errno == errno)
        }
    }

    @Test("edges come in order with their kernel timestamps; a wait without edges times out")
    func edges() throws {
        let driver = pi4()
        let chip = try GPIOChip.open(.automatic, driver: driver)
        let line = try chip.requestInput(.name("GPIO18"), edges: .both, bias: .pullDown)
        #expect(driver.line("/dev/gpiochip0", 18)?.settings?.edges == .both)
        #expect(driver.line("/dev/gpiochip0", 18)?.settings?.bias == .pullDown)
        #expect(try line.nextEdge(timeout: .zero) == nil)
        let events = (1...5).map {
            EdgeEvent(
                kind: $0 % 2 == 1 ? .rising : .falling, timestamp: .seconds($0), clock: .monotonic,
                sequence: UInt64($0))
        }
        driver.queue("/dev/gpiochip0", 18, events)
        var seen: [EdgeEvent] = []
        while let event = try line.nextEdge(timeout: .zero) { seen.append(event) }
        #expect(seen == events)
    }

    @Test("realtime timestamps need the v2 API")
    func realtime() throws {
        let v1 = try GPIOChip.open(.automatic, driver: pi4())
        #expect(throws: GPIOError.self) { try v1.requestInput(.offset(18), edges: .rising, clock: .realtime) }
        let v2Driver = FakeGPIODriver(realtime: true)
        v2Driver.addChip("gpiochip0", label: "pinctrl-rp1")
        let v2 = try GPIOChip.open(.automatic, driver: v2Driver)
        let line = try v2.requestInput(.offset(18), edges: .rising, clock: .realtime)
        #expect(line.clock == .realtime)
        #expect(v2Driver.line("/dev/gpiochip0", 18)?.settings?.clock == .realtime)
    }

    @Test("lines are released on release() and when freed; the chip closes after its last line")
    func release() throws {
        let driver = pi4()
        var chip: GPIOChip? = try GPIOChip.open(.automatic, driver: driver)
        var output: GPIOOutputLine? = try chip?.requestOutput(.offset(17))
        var input: GPIOInputLine? = try chip?.requestInput(.offset(18), edges: .rising)
        let edges = try #require(input)
        #expect(driver.line("/dev/gpiochip0", 17)?.consumer == "gnss-hat")
        edges.release()
        #expect(driver.line("/dev/gpiochip0", 18)?.consumer == nil)
        #expect(throws: GPIOError.released(device: edges.name)) { try edges.nextEdge(timeout: .zero) }
        chip = nil
        // The lines keep their chip open.
        #expect(driver.openHandles == 1)
        _ = output
        output = nil
        #expect(driver.line("/dev/gpiochip0", 17)?.consumer == nil)
        #expect(driver.openHandles == 1)
        _ = input
        input = nil
        #expect(driver.openHandles == 1, "`edges` still holds the chip")
    }
}
