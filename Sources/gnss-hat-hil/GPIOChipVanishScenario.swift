// The GPIO chip vanishes while the receiver is powered: gnss_gpio_sim's platform driver is unbound
// while a Receiver streams fixes over DDC, so the chip, its character device and every line the
// product holds go away (the kernel's gpiochip_remove; its handles then fail with ENODEV). The
// simulated pins stay where they were, as a real pin does when its controller's driver goes, so the
// receiver stays powered and fixes go on: the product meets the fault only at its power-off, which
// cannot drive GNSS_PWR_EN and must say so (not hang, not crash, not claim the supply is off). A
// subscriber while the chip is gone gets a typed error for the enable line; once the driver is bound
// again (every pin back at its pull), the next subscriber starts cleanly.
import GNSSHat
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// gnss_gpio_sim's chip unbound while powered, then bound again.
func checkGPIOChipVanishes() async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    let chip = DriverBinding.gpioChip
    try expect(chip.isBound, "\(chip.driver) is not bound before the scenario")
    do {
        try await withReceiver(board: "hil-ddc", port: .ddc, lines: lines) { receiver, simulator in
            let fixes = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
            try await eventually("a fix over DDC", within: .seconds(30), watching: [fixes], simulator: simulator) {
                fixes.values.contains(where: \.hasPosition)
            }
            let last = fixes.values.last(where: \.hasPosition)?.time
            try await chip.startUnbind().wait(within: .seconds(10), "unbinding \(chip.driver)")
            let left = try FileSystem.entries(of: GPIOSimBank.device).filter { $0.hasPrefix("gpiochip") }
            try expect(left.isEmpty, "\(left) still under \(GPIOSimBank.device) after the unbind")
            try await eventually("the simulator to see the lines gone", within: .seconds(10)) {
                simulator.lineOutages == 1
            }
            try await eventually("a fix after the chip went away", within: .seconds(10), watching: [fixes],
                                 simulator: simulator) {
                fixes.values.contains { fix in
                    guard fix.hasPosition, let time = fix.time, let last else { return false }
                    return time > last
                }
            }
            try await checkPowerOffWithoutChip(receiver, simulator, fixes: fixes)
            try await checkSubscriberWithoutChip(receiver)

            try await chip.bind(within: .seconds(10))
            try await eventually("the supply off once the chip is back (GNSS_PWR_EN at its pull-down)",
                                 within: .seconds(10), simulator: simulator) { !simulator.isPowered }
            try expect(simulator.powerChanges == [true, false], "the supply switched \(simulator.powerChanges)")
            try await checkNextSubscriberStartsCleanly(receiver, simulator, lines: lines,
                                                       after: fixes.values.last?.time)
        }
    } catch {
        await chip.rebindIfNeeded()
        throw error
    }
}

/// The last subscriber leaves: the power-off cannot drive the vanished enable line. It must end (no
/// hang), and the statistics and the hardware power must say it failed, naming ENODEV.
func checkPowerOffWithoutChip(_ receiver: Receiver, _ simulator: HatSimulator, fixes: Collector<Fix>) async throws {
    await fixes.cancel()
    try await eventually("the power-off to end without the chip", within: .seconds(15)) {
        receiver.powerState == .off || receiver.powerState == .failed
    }
    let statistics = receiver.statistics
    let failure = statistics.powerOffFailure ?? ""
    try expect(statistics.failedPowerOffs == 1 && failure.contains("enable") && failure.contains("ENODEV"),
               "\(statistics.failedPowerOffs) failed power-offs, failure \"\(failure)\": expected the enable "
               + "line's ENODEV")
    let power = receiver.hardwarePower
    try expect(power.reason.failure?.contains("ENODEV") == true,
               "the hardware power is \(power), expected a failure naming ENODEV")
    try expect(simulator.isPowered, "the supply went off with no chip to switch it")
}

/// While the chip is gone, a subscriber gets a typed error for the enable line, and the power-off
/// failure still stands (the supply may still be on: nothing could switch it off).
func checkSubscriberWithoutChip(_ receiver: Receiver) async throws {
    let early = Collector(receiver.fixes.subscribe())
    try await eventually("a subscription failing while the chip is gone", within: .seconds(10)) { early.ended }
    guard let failure = early.error as? ReceiverError, case .gpio(let role, let gpio) = failure else {
        throw ScenarioFailure("a subscriber without the chip got \(early.error.map { "\($0)" } ?? "no error"), "
                              + "expected a GPIO error")
    }
    switch gpio {
    case .chipNotFound, .vanished: break
    default: throw ScenarioFailure("a subscriber without the chip got \(failure), expected the chip missing")
    }
    try expect(role == "enable", "a subscriber without the chip got an error for the \(role) line: \(failure)")
    try await eventually("the receiver failed or off without the chip", within: .seconds(10)) {
        receiver.powerState == .failed || receiver.powerState == .off
    }
    let standing = receiver.statistics.powerOffFailure
    try expect(standing != nil, "the power-off failure was cleared while the chip is still gone")
}
