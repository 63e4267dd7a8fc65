import GNSSHatTesting
import LinuxSystem
import Signals
import Testing

@Suite("ManualClock", .timeLimit(.minutes(1)))
struct ManualClockTests {
    @Test func sleepersWakeInDeadlineOrderWhenTheClockPassesThem() async throws {
        let clock = ManualClock()
        let order = Recorder()
        let late = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(5))); order.append("late") }
        let early = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(2))); order.append("early") }
        await clock.waitForSleepers(2)
        #expect(clock.nextDeadline == ManualClock.Instant(offset: .seconds(2)))

        clock.advance(by: .seconds(1))
        #expect(clock.sleeperCount == 2, "nothing is due yet")
        clock.advance(by: .seconds(1))
        try await early.value
        #expect(order.items == ["early"])
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(10))
        try await late.value
        #expect(order.items == ["early", "late"])
        #expect(clock.now == ManualClock.Instant(offset: .seconds(12)))
    }

    @Test func aDeadlineInThePastReturnsAtOnce() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(3))
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(1)))
        try await clock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellingASleeperThrowsAndUnregistersIt() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancelledBeforeSleepingThrowsAtOnce() async throws {
        let clock = ManualClock()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func theClockNeverGoesBackwards() {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        clock.advance(to: ManualClock.Instant(offset: .seconds(1)))
        #expect(clock.now.offset == .seconds(5))
    }
}

@Suite("FakePowerSwitch", .timeLimit(.minutes(1)))
struct FakePowerSwitchTests {
    @Test func recordsTransitionsAndCalls() async throws {
        let power = FakePowerSwitch()
        try await power.powerOn()
        await power.powerOff()
        await power.powerOff()
        #expect(power.transitions == [.on, .off])
        #expect(power.powerOnCalls == 1 && power.powerOffCalls == 2)
        #expect(power.violations.isEmpty)
    }

    @Test func aDoubleOnFailsTheTest() async throws {
        let power = FakePowerSwitch()
        try await power.powerOn()
        await withKnownIssue("a double power-on is a test failure") {
            try await power.powerOn()
        }
        #expect(power.violations == ["power on while already on"])
    }

    @Test func anOverlappingOffFailsTheTest() async throws {
        let power = FakePowerSwitch()
        let gate = power.gateNextPowerOn()
        let on = Task { try await power.powerOn() }
        await gate.waitUntilReached()
        await withKnownIssue("an off during an on is a test failure") {
            await power.powerOff()
        }
        gate.open()
        try await on.value
        #expect(power.violations == ["power off while power on is still in progress"])
    }

    @Test("with a hook, a misuse goes to the hook (and the record), not to the running test")
    func misuseHook() async throws {
        let reported = Lock<[String]>([])
        let power = FakePowerSwitch(onMisuse: { misuse in reported.withLock { $0.append(misuse) } })
        try await power.powerOn()
        try await power.powerOn()
        let gate = power.gateNextPowerOff()
        let off = Task { await power.powerOff() }
        await gate.waitUntilReached()
        try await power.powerOn()
        gate.open()
        await off.value
        let expected = ["power on while already on", "power on while power off is still in progress"]
        #expect(reported.withLock { $0 } == expected)
        #expect(power.violations == expected)
    }

    @Test func injectedFailuresAreThrownInOrderAndLeaveItOff() async throws {
        let power = FakePowerSwitch()
        power.failNextPowerOn(with: FakePowerSwitch.InjectedFailure("first"))
        power.failNextPowerOn(with: FakePowerSwitch.InjectedFailure("second"))
        await #expect(throws: FakePowerSwitch.InjectedFailure("first")) { try await power.powerOn() }
        await #expect(throws: FakePowerSwitch.InjectedFailure("second")) { try await power.powerOn() }
        #expect(!power.isOn)
        try await power.powerOn()
        #expect(power.transitions == [.on])
    }
}

final class Recorder: Sendable {
    private let state = Lock<[String]>([])
    var items: [String] { state.withLock { $0 } }
    func append(_ item: String) { state.withLock { $0.append(item) } }
}
