// After a fault at the hardware seam, the next subscriber must start as if nothing had happened:
// the supply comes on, a fix of the new power-on arrives, and once the subscriber has left (and the
// linger passed) the supply is off again, with no power-off failure left standing.
import GNSSHat
import GNSSProtocol
import Signals

/// The next subscriber after a fault starts cleanly: GNSS_PWR_EN high, one more power-on, a fix newer
/// than `last` (the fixes signal replays its latest value to a new subscriber), then after it leaves
/// GNSS_PWR_EN low (in sysfs too), the receiver off and no power-off failure.
func checkNextSubscriberStartsCleanly(
    _ receiver: Receiver, _ simulator: HatSimulator, lines: GPIOSimBank, after last: GNSSTime?
) async throws {
    let powerOns = receiver.statistics.powerOns
    let next = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
    try await eventually("GNSS_PWR_EN high for the next subscriber", within: .seconds(10), watching: [next],
                         simulator: simulator) { simulator.isPowered }
    try await eventually("a fix of the new power-on", within: .seconds(30), watching: [next],
                         simulator: simulator) {
        next.values.contains { fix in
            guard fix.hasPosition, let time = fix.time else { return false }
            return last.map { time > $0 } ?? true
        }
    }
    try expect(try lines.level(of: "GNSS_PWR_EN"), "the simulator saw GNSS_PWR_EN high, sysfs reads it low")
    let statistics = receiver.statistics
    try expect(statistics.powerOns == powerOns + 1,
               "\(statistics.powerOns - powerOns) power-ons for the next subscriber, expected 1")
    await next.cancel()
    try await eventually("GNSS_PWR_EN low after the next subscriber left", within: .seconds(10),
                         simulator: simulator) { !simulator.isPowered }
    try expect(try !lines.level(of: "GNSS_PWR_EN"), "the simulator saw GNSS_PWR_EN low, sysfs reads it high")
    try await eventually("the receiver off after the next subscriber", within: .seconds(10)) {
        receiver.powerState == .off
    }
    let failure = receiver.statistics.powerOffFailure
    try expect(failure == nil, "a power-off failure stands after a clean power-off: \(failure ?? "")")
}
