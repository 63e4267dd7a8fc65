import GNSSHat
import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import PiHardware
import Signals
import Testing

/// The simulator board changed into another kind of hat.
func simulatorBoard(_ change: (inout Board) -> Void) throws -> Board {
    var board = try Rig.simulatorBoard()
    change(&board)
    return board
}

/// One power cycle: a fresh fix, the last cancel, the power-off; returns the mode the simulated
/// receiver was left in.
func powerCycle(_ rig: Rig) async throws -> SimulatedReceiver.Mode {
    let (_, fixes) = try await rig.freshPosition()
    fixes.cancel()
    try await rig.runUntil { $0 == .off }
    return rig.hat.receiver.mode
}

@Suite("Power strategies on the simulated receiver", .timeLimit(.minutes(2)))
struct PowerStrategyTests {
    @Test("gpio-enable: the supply is cut while off, and backup power makes the next start hot")
    func enableLine() async throws {
        let rig = try Rig(connection: .inProcess)
        #expect(try await powerCycle(rig) == .off)
        #expect(!rig.powerIsOn)
        #expect(try await powerCycle(rig) == .off)
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        #expect(rig.powerLine?.levels == [false, true, false, true, false])
        #expect(rig.receiver.statistics.powerOns == 2)
        await rig.shutdown()
    }

    @Test("gpio-enable without backup supply: every start is cold")
    func enableLineWithoutBackup() async throws {
        let board = try simulatorBoard { $0.simulation?.backupSupply = false }
        let rig = try Rig(board: board, connection: .inProcess)
        _ = try await powerCycle(rig)
        _ = try await powerCycle(rig)
        #expect(rig.hat.receiver.starts == [.cold, .cold])
        await rig.shutdown()
    }

    @Test("ublox-backup: RXM-PMREQ (16-byte form, UART and EXTINT wake) at power-off, UART traffic wakes it")
    func ubloxBackup() async throws {
        let board = try simulatorBoard { board in
            board.gpio.enable = nil
            board.power.strategies = [.ubloxBackup]
        }
        let rig = try Rig(board: board, connection: .inProcess)
        // Without an enable line the receiver runs from the start: let it boot first.
        await rig.driver.advance(by: .seconds(1))
        #expect(try await powerCycle(rig) == .backup)
        #expect(rig.hat.receiver.commandsReceived.last == "RXM-PMREQ")
        let sent = rig.hat.receiver.epochsSent
        await rig.driver.advance(by: .seconds(30))
        #expect(rig.hat.receiver.epochsSent == sent, "a receiver in backup sends nothing")
        #expect(rig.hat.receiver.mode == .backup)
        #expect(try await powerCycle(rig) == .backup)
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        #expect(rig.hat.receiver.commandsReceived.filter { $0 == "MON-VER poll" }.count == 2)
        await rig.shutdown()
    }

    @Test("ublox-gnss-stop: CFG-RST stop at power-off, start at power-on")
    func ubloxGNSSStop() async throws {
        let board = try simulatorBoard { board in
            board.gpio.enable = nil
            board.power.strategies = [.ubloxGNSSStop]
        }
        let rig = try Rig(board: board, connection: .inProcess)
        // Without an enable line the receiver runs from the start: let it boot first.
        await rig.driver.advance(by: .seconds(1))
        #expect(try await powerCycle(rig) == .gnssStopped)
        #expect(rig.hat.receiver.commandsReceived.last == "CFG-RST 8")
        #expect(try await powerCycle(rig) == .gnssStopped)
        #expect(rig.hat.receiver.commandsReceived.filter { $0 == "CFG-RST 9" }.count == 2)
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        await rig.shutdown()
    }

    @Test("mtk-standby: PMTK314/PMTK220 acknowledged, PMTK161 at power-off, a byte wakes it ($PMTK010,002)")
    func mtkStandby() async throws {
        let board = try simulatorBoard { board in
            board.chip = Board.Chip(family: .mtk, model: "MTK3339")
            board.gpio.enable = nil
            board.gpio.extint = nil
            board.power.strategies = [.mtkStandby]
        }
        let rig = try Rig(board: board, connection: .inProcess)
        // Without an enable line the receiver runs from the start: let it boot first.
        await rig.driver.advance(by: .seconds(1))
        #expect(try await powerCycle(rig) == .standby)
        #expect(rig.hat.receiver.commandsReceived == ["PMTK0", "PMTK314", "PMTK220", "PMTK161"])
        #expect(try await powerCycle(rig) == .standby)
        #expect(rig.hat.receiver.commandsReceived.suffix(3) == ["PMTK314", "PMTK220", "PMTK161"])
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        await rig.shutdown()
    }

    @Test("standby line and force-on pulse (Waveshare L76X wiring)")
    func standbyLineAndForceOn() async throws {
        let board = try simulatorBoard { board in
            board.chip = Board.Chip(family: .mtk, model: "Quectel L76B")
            board.gpio.enable = nil
            board.gpio.extint = nil
            board.gpio.standby = Board.Line(.name("GNSS_STANDBY"), activeLow: true)
            board.gpio.forceOn = Board.Line(.name("GNSS_FORCE_ON"))
            board.power.strategies = [.forceOnPulse, .standbyLine]
        }
        let rig = try Rig(board: board, connection: .inProcess)
        // Without an enable line the receiver runs from the start: let it boot first.
        await rig.driver.advance(by: .seconds(1))
        #expect(try await powerCycle(rig) == .standby)
        #expect(try await powerCycle(rig) == .standby)
        #expect(rig.hat.receiver.starts == [.cold, .hot])
        let standbyLine = try #require(board.gpio.standby)
        let forceOnLine = try #require(board.gpio.forceOn)
        let standby = try #require(rig.gpio.output(at: board.gpio.address(standbyLine)))
        let forceOn = try #require(rig.gpio.output(at: board.gpio.address(forceOnLine)))
        #expect(standby.activeLow)
        #expect(standby.levels == [false, false, true, false, true])
        #expect(forceOn.levels == [false, true, false, true, false])
        await rig.shutdown()
    }

    @Test("a strategy whose command fails at power-off still lets the others run")
    func offContinuesAfterFailure() async throws {
        let board = try simulatorBoard { $0.power.strategies = [.gpioEnable, .ubloxBackup] }
        let rig = try Rig(board: board, connection: .inProcess)
        let (_, fixes) = try await rig.freshPosition()
        rig.hat.disappear()
        let error = try await rig.driver.run { await firstError(fixes) }
        #expect(error is ReceiverError)
        try await rig.runUntil { $0 == .failed }
        #expect(!rig.powerIsOn, "the enable line goes off although RXM-PMREQ could not be sent")
        await rig.shutdown()
    }
}
