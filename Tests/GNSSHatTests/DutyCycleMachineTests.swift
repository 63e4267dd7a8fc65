import GNSSHat
import Testing

@Suite("The duty cycle's decisions")
struct DutyCycleMachineTests {
    static func machine(accuracy: Double? = 10) -> DutyCycleMachine {
        DutyCycleMachine(interval: .seconds(600), leadTime: .seconds(3), budget: .seconds(30), accuracy: accuracy)
    }

    @Test("a fix that meets the accuracy is delivered and powers off at once; the next power-on is lead-time early")
    func accurateFix() {
        var machine = Self.machine()
        #expect(machine.handle(.begin(now: .zero)) == [.powerOn, .wake(at: .seconds(30))])
        #expect(machine.handle(.fix(sequence: 1, accuracy: 25, now: .seconds(2))) == [])
        #expect(machine.handle(.fix(sequence: 2, accuracy: 8, now: .seconds(3))) == [
            .deliver(sequence: 2, metAccuracy: true), .measuredStart(.seconds(3)), .powerOff,
        ])
        // A fix that was already on its way while the power goes off: nothing.
        #expect(machine.handle(.fix(sequence: 3, accuracy: 5, now: .seconds(3))) == [])
        #expect(machine.handle(.poweredOff(now: .seconds(4))) == [.wake(at: .seconds(597))])
        // The budget's timer, asked for before the cycle ended, fires: nothing.
        #expect(machine.handle(.timer(now: .seconds(30))) == [])
        #expect(machine.phase == .sleeping(wakeAt: .seconds(597), due: .seconds(600)))
        #expect(machine.handle(.timer(now: .seconds(597))) == [.powerOn, .wake(at: .seconds(627))])
    }

    @Test("the budget runs out: the best fix is delivered, not the last; no fix at all: noFix")
    func budgetRunsOut() {
        var machine = Self.machine()
        _ = machine.handle(.begin(now: .zero))
        _ = machine.handle(.fix(sequence: 1, accuracy: 40, now: .seconds(5)))
        _ = machine.handle(.fix(sequence: 2, accuracy: 15, now: .seconds(6)))
        _ = machine.handle(.fix(sequence: 3, accuracy: nil, now: .seconds(7)))
        _ = machine.handle(.fix(sequence: 4, accuracy: 30, now: .seconds(8)))
        // A timer before the budget's end (an early wake) changes nothing.
        #expect(machine.handle(.timer(now: .seconds(29))) == [])
        #expect(machine.handle(.timer(now: .seconds(30))) == [.deliver(sequence: 2, metAccuracy: false), .powerOff])
        _ = machine.handle(.poweredOff(now: .seconds(31)))
        #expect(machine.handle(.timer(now: .seconds(597))) == [.powerOn, .wake(at: .seconds(627))])
        #expect(machine.handle(.timer(now: .seconds(627))) == [.noFix(after: .seconds(30)), .powerOff])
    }

    @Test("without an accuracy the first fix ends the acquisition")
    func anyFix() {
        var machine = Self.machine(accuracy: nil)
        _ = machine.handle(.begin(now: .seconds(100)))
        #expect(machine.handle(.fix(sequence: 7, accuracy: nil, now: .seconds(101))) == [
            .deliver(sequence: 7, metAccuracy: true), .measuredStart(.seconds(1)), .powerOff,
        ])
    }

    @Test("a power-off that ends after the next power-on was due skips to the next due time")
    func overrun() {
        var machine = Self.machine()
        _ = machine.handle(.begin(now: .zero))
        _ = machine.handle(.timer(now: .seconds(30)))
        // The power-off took until 1,000 s (a stuck line's retries, say): the fix due at 600 s is missed.
        #expect(machine.handle(.poweredOff(now: .seconds(1000))) == [.wake(at: .seconds(1197))])
    }
}
