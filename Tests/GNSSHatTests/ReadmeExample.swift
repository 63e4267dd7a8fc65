import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import Signals
import Testing

// The README's library example, verbatim: if this stops compiling or working, the README is wrong.

/// Powers the hat on, waits for a position, and lets it power off again.
func firstPosition(board name: String = "simulator", clock: some Clock<Duration> = ContinuousClock())
    async throws -> Fix?
{
    let receiver = try Receiver(board: BoardCatalog.load(name), hardware: .systemOrSimulated, clock: clock)
    let states = Task {  // off, powering on, on, lingering, powering off, off (or failed)
        for await state in receiver.powerStates() { print("power:", state) }
    }
    defer { states.cancel() }
    var position: Fix?
    for try await fix in receiver.fixes where fix.hasPosition {  // the first subscriber powers it on
        position = fix
        break  // the last one leaves: off after the board's linger
    }
    print("time to first fix:", receiver.statistics.lastTimeToFirstFix ?? .zero)
    await receiver.shutdown()  // off at once, GPIO lines released
    return position
}

@Suite("README")
struct ReadmeExampleTests {
    @Test("the library example finds a position on the simulator (in fast motion)")
    func example() async throws {
        let fix = try await firstPosition(clock: AcceleratedClock(rate: 10))
        #expect(fix?.hasPosition == true)
    }
}
