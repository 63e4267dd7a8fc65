import GNSSHat
@testable import GNSSHatSimulator  // SimulatedHat.whenHostOpenAccepted: a fault in the middle of an open
import GNSSHatTesting
import GNSSProtocol
import LinuxSystem
import PiHardware
import Signals
import Testing

/// The simulated hat's in-process link when the hat disappears while the host opens it: the
/// host's link must see the hat gone, never stay connected to an absent hat (after `reappear()`
/// it was connected to nothing, and a HatDriver waited for ever for the receiver's output to be
/// read: the hang RandomScheduleTests showed now and then).
@Suite("Simulated hat: faults during an open", .timeLimit(.minutes(1)))
struct SimulatedHatLinkTests {
    @Test("disappearing during the host's open: the new link hangs up; once back, the next one gets the output")
    func disappearDuringOpen() throws {
        let clock = ManualClock()
        let hat = try SimulatedHat(board: try Rig.simulatorBoard(), clock: clock, connection: .inProcess,
                                   timing: .driven)
        hat.whenHostOpenAccepted { [weak hat] in hat?.disappear() }
        let first = try hat.access.openSerial("simulator", hat.baud, false)
        hat.whenHostOpenAccepted(nil)
        #expect(!hat.isPresent)
        do {
            let bytes = try first.read(maxCount: 64, timeout: .zero)
            Issue.record("a link opened as the hat disappeared reads (\(bytes.count) bytes) instead of hanging up")
        } catch let error as SerialError {
            guard case .hangUp = error else {
                Issue.record("expected a hang-up, got \(error)")
                return
            }
        }
        first.close()

        try hat.reappear()
        let second = try hat.access.openSerial("simulator", hat.baud, false)
        hat.receiver.setMainPower(true)
        var received: [UInt8] = []
        while received.isEmpty, let next = hat.receiver.timeToNextEvent {
            clock.advance(by: next)
            hat.receiver.tick()
            received = try second.read(maxCount: 4096, timeout: .zero)
        }
        #expect(!received.isEmpty, "the receiver's boot output reaches the link opened after the hat came back")
        second.close()
        #expect(hat.traffic.isSettled)
        hat.receiver.shutdown()
    }

    @Test("a pseudo-terminal hat disappearing during the host's open: not found, even where its number is reused")
    func disappearDuringTerminalOpen() throws {
        let hat = try SimulatedHat(board: try Rig.simulatorBoard(), clock: ManualClock(), connection: .pseudoTerminal,
                                   timing: .driven)
        let oldPath = hat.devicePath
        // Closing the hat's terminal frees its number: the next terminal opened here (another
        // test's hat, as it were) usually gets it.
        let other = Lock<PseudoTerminal?>(nil)
        hat.whenHostOpenAccepted { [weak hat] in
            hat?.disappear()
            other.withLock { $0 = try? PseudoTerminal(holdDeviceOpen: true) }
        }
        #expect {
            try hat.access.openSerial(oldPath, hat.baud, false)
        } throws: { error in
            guard case SerialError.notFound = error else { return false }
            return true
        }
        hat.whenHostOpenAccepted(nil)
        #expect(!hat.isPresent)

        try hat.reappear()
        let port = try hat.access.openSerial(hat.devicePath, hat.baud, false)
        port.close()
        other.withLock { $0?.close() }
        hat.receiver.shutdown()
        hat.disappear()
    }

    @Test("a receiver whose hat disappears while it opens the link fails with the device gone, and starts again")
    func receiverOpenRace() async throws {
        let rig = try Rig(connection: .inProcess)
        let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
        rig.hat.whenHostOpenAccepted { [weak hat = rig.hat] in
            hat?.disappear()
            openedContinuation.yield()
        }
        let fixes = rig.receiver.fixes.subscribe()
        for await _ in opened { break }
        rig.hat.whenHostOpenAccepted(nil)
        // Back before the receiver has said anything: the session must not be left reading a
        // link that nothing feeds.
        try rig.hat.reappear()
        let error = try await rig.driver.run { await firstError(fixes) }
        guard case .deviceGone? = error as? ReceiverError else {
            Issue.record("expected ReceiverError.deviceGone, got \(String(describing: error))")
            return
        }
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn)

        let again = rig.receiver.fixes.subscribe()
        let fix = try await rig.firstPosition(again)
        #expect(fix.hasPosition)
        #expect(rig.receiver.statistics.powerOns == 2)
        again.cancel()
        await rig.shutdown()
    }
}
