// The DDC adapter goes away mid-stream, as a USB-I2C adapter pulled out: ubx_ddc_sim's platform
// driver is unbound while a Receiver streams fixes over /dev/i2c-1. The module marks the adapter
// unplugged (every transfer then fails with ENODEV), and i2c_del_adapter removes /dev/i2c-1 and waits
// until every descriptor still open on it is closed. The product must end every subscription with a
// typed error naming the bus, switch the supply off, stop polling at the first ENODEV and close the
// bus (or the unbind never returns); a subscriber while the adapter is out gets a typed error with
// nothing powered; once the driver is bound again, the next subscriber starts cleanly.
import GNSSHat
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// ubx_ddc_sim's adapter unbound mid-stream, then bound again.
func checkAdapterUnplugged() async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    let adapter = DriverBinding.ddcAdapter
    try expect(adapter.isBound, "\(adapter.driver) is not bound before the scenario")
    let bus = try DDCSimModule.busPath()
    do {
        try await withReceiver(board: "hil-ddc", port: .ddc, lines: lines) { receiver, simulator in
            let fixes = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
            let messages = Collector(receiver.messages.subscribe(buffering: .bounded(1000)))
            try await eventually("a fix over DDC", within: .seconds(30), watching: [fixes], simulator: simulator) {
                fixes.values.contains(where: \.hasPosition)
            }
            let unplug = try adapter.startUnbind()
            try await eventually("both subscriptions ending after the unplug", within: .seconds(20)) {
                fixes.ended && messages.ended
            }
            for (name, error) in [("fixes", fixes.error), ("messages", messages.error)] {
                try expectAdapterGone(error, subscription: name, bus: bus)
            }
            try await eventually("GNSS_PWR_EN low after the unplug", within: .seconds(10), simulator: simulator) {
                !simulator.isPowered
            }
            try expect(try !lines.level(of: "GNSS_PWR_EN"), "sysfs reads GNSS_PWR_EN high after the unplug")
            try await unplug.wait(within: .seconds(20), "unbinding \(adapter.driver) (the product must close \(bus))")
            try expect(!FileSystem.exists(bus), "\(bus) is still there after the unbind")
            let refused = try ddc.stats()["unplugged"] ?? 0
            try expect(refused == 1,
                       "\(refused) transfers reached the unplugged adapter; polling must stop at the first")
            try await eventually("the receiver failed or off after the unplug", within: .seconds(10)) {
                receiver.powerState == .failed || receiver.powerState == .off
            }
            try expect(receiver.statistics.sessionFailures == 1,
                       "session failures \(receiver.statistics.sessionFailures), expected 1")

            try await checkSubscriberWithoutAdapter(receiver, simulator, bus: bus)

            try await adapter.bind(within: .seconds(10))
            try await eventually("\(bus) back after the bind", within: .seconds(10)) { FileSystem.exists(bus) }
            // The receiver lost whatever it had not sent yet with its supply.
            try ddc.reset()
            try await checkNextSubscriberStartsCleanly(receiver, simulator, lines: lines,
                                                       after: fixes.values.last?.time)
            try expect(simulator.powerChanges == [true, false, true, false],
                       "the supply switched \(simulator.powerChanges)")
        }
    } catch {
        await adapter.rebindIfNeeded()
        throw error
    }
}

/// A subscription ended with `ReceiverError.deviceGone` naming `bus`, carrying the adapter's ENODEV.
func expectAdapterGone(_ error: (any Error)?, subscription name: String, bus: String) throws {
    guard let failure = error as? ReceiverError, case .deviceGone(let device, let fault) = failure,
          let i2c = fault as? I2CError, case .vanished(let call) = i2c else {
        throw ScenarioFailure("the \(name) subscription ended with \(error.map { "\($0)" } ?? "no error"), "
                              + "expected the adapter gone (ENODEV)")
    }
    try expect(device.hasPrefix(bus), "the \(name) subscription's error names \(device), not \(bus)")
    try expect(call.errno == .noSuchDevice, "the \(name) subscription's error carries \(call), expected ENODEV")
}

/// While the adapter is out, a subscriber gets the typed error (no such bus) and nothing is powered.
func checkSubscriberWithoutAdapter(_ receiver: Receiver, _ simulator: HatSimulator, bus: String) async throws {
    let early = Collector(receiver.fixes.subscribe())
    try await eventually("a subscription failing while the adapter is out", within: .seconds(10)) { early.ended }
    guard let failure = early.error as? ReceiverError, case .link(let device, let fault) = failure,
          let i2c = fault as? I2CError, case .noBus = i2c else {
        throw ScenarioFailure("a subscriber without the adapter got \(early.error.map { "\($0)" } ?? "no error"), "
                              + "expected no such bus")
    }
    try expect(device == bus, "the error names \(device), not \(bus)")
    try await eventually("the receiver failed or off without the adapter", within: .seconds(10)) {
        receiver.powerState == .failed || receiver.powerState == .off
    }
    try expect(simulator.powerChanges == [true, false], "the supply switched \(simulator.powerChanges) with no adapter")
}
