// I2C transfers timing out while a Receiver streams over DDC (ubx_ddc_sim's NAKs answered with
// ETIMEDOUT, as a controller that gave up on clock stretching reports them). The product's policy
// (DDCTransport.failuresTolerated): a session rides out up to 3 consecutive failed polls, costing no
// byte; the 4th fails it with a typed link error (I2CError.timeout, ETIMEDOUT) to every subscriber,
// polling stops there and the supply goes off. The NAK storm scenario judges EREMOTEIO the same way.
import GNSSHat
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals

/// Consecutive failed polls a DDC session rides out (GNSSHat's `DDCTransport.failuresTolerated`).
let toleratedPollFailures = 3

/// A burst of `toleratedPollFailures` ETIMEDOUT transfers is ridden out; a longer one fails every
/// subscriber with the typed time-out; the next subscriber starts cleanly.
func checkI2CTimeoutBursts() async throws {
    let lines = try GPIOSimBank()
    let ddc = DDCSimModule()
    try ddc.reset()
    defer { try? ddc.reset() }
    try await withReceiver(board: "hil-ddc", port: .ddc, lines: lines) { receiver, simulator in
        let fixes = Collector(receiver.fixes.subscribe(buffering: .bounded(1000)))
        let messages = Collector(receiver.messages.subscribe(buffering: .bounded(1000)))
        try await eventually("a fix over DDC", within: .seconds(30), watching: [fixes], simulator: simulator) {
            fixes.values.contains(where: \.hasPosition)
        }
        try ddc.setNAKErrno(.timedOut)
        try await checkToleratedBurst(receiver, simulator, ddc, fixes: fixes, messages: messages)

        // One more than the session rides out, and one to spare: polling must stop at the 4th.
        let burst = toleratedPollFailures + 2
        let naksBefore = try ddc.stats()["naks"] ?? 0
        try ddc.nakNext(burst)
        try await eventually("both subscriptions ending after \(burst) time-outs", within: .seconds(20)) {
            fixes.ended && messages.ended
        }
        for (name, error) in [("fixes", fixes.error), ("messages", messages.error)] {
            try expectTimeout(error, subscription: name)
        }
        try await eventually("GNSS_PWR_EN low after the time-outs", within: .seconds(10), simulator: simulator) {
            !simulator.isPowered
        }
        try expect(try !lines.level(of: "GNSS_PWR_EN"), "sysfs reads GNSS_PWR_EN high after the time-outs")
        let naks = (try ddc.stats()["naks"] ?? 0) - naksBefore
        let left = try ddc.naksPending()
        try expect(naks == UInt64(toleratedPollFailures + 1) && left == 1,
                   "\(naks) transfers timed out and \(left) time-outs were left: polling must stop at the "
                   + "\(toleratedPollFailures + 1)th")
        try expect(receiver.statistics.sessionFailures == 1,
                   "session failures \(receiver.statistics.sessionFailures), expected 1")
        try expect(simulator.powerChanges == [true, false], "the supply switched \(simulator.powerChanges)")

        try ddc.nakNext(0)
        try ddc.setNAKErrno(.remoteIO)
        try await checkNextSubscriberStartsCleanly(receiver, simulator, lines: lines, after: fixes.values.last?.time)
    }
}

/// `toleratedPollFailures` transfers time out: no subscriber hears of it, no byte is lost (no decode
/// error), fixes go on and the supply stays on.
func checkToleratedBurst(
    _ receiver: Receiver, _ simulator: HatSimulator, _ ddc: DDCSimModule, fixes: Collector<Fix>,
    messages: Collector<Message>
) async throws {
    let before = receiver.statistics
    let naksBefore = try ddc.stats()["naks"] ?? 0
    let last = fixes.values.last(where: \.hasPosition)?.time
    try ddc.nakNext(toleratedPollFailures)
    try await eventually("the \(toleratedPollFailures) time-outs used up", within: .seconds(10),
                         watching: [fixes], simulator: simulator) { try ddc.naksPending() == 0 }
    try await eventually("a fix after \(toleratedPollFailures) time-outs", within: .seconds(10), watching: [fixes],
                         simulator: simulator) {
        fixes.values.contains { fix in
            guard fix.hasPosition, let time = fix.time, let last else { return false }
            return time > last
        }
    }
    let naks = (try ddc.stats()["naks"] ?? 0) - naksBefore
    try expect(naks == UInt64(toleratedPollFailures), "\(naks) transfers timed out, expected \(toleratedPollFailures)")
    try expect(!messages.ended, "the messages subscription ended after a tolerated burst: "
               + "\(messages.error.map { "\($0)" } ?? "no error")")
    let after = receiver.statistics
    try expect(after.sessionFailures == before.sessionFailures && after.decodeErrors == before.decodeErrors,
               "a tolerated burst cost \(after.sessionFailures - before.sessionFailures) session failures and "
               + "\(after.decodeErrors - before.decodeErrors) decode errors")
    try expect(simulator.isPowered && simulator.powerChanges == [true],
               "the supply switched \(simulator.powerChanges) during a tolerated burst")
}

/// A subscription ended with `ReceiverError.link` carrying the typed time-out (ETIMEDOUT), not "gone".
func expectTimeout(_ error: (any Error)?, subscription name: String) throws {
    guard let failure = error as? ReceiverError, case .link(_, let fault) = failure,
          let i2c = fault as? I2CError, case .timeout(let call) = i2c else {
        throw ScenarioFailure("the \(name) subscription ended with \(error.map { "\($0)" } ?? "no error"), "
                              + "expected a link time-out")
    }
    try expect(call.errno == .timedOut, "the \(name) subscription's error carries \(call), expected ETIMEDOUT")
}
