import GNSSHat
@testable import GNSSHatSimulator
import GNSSProtocol
import Testing

@Suite("Simulated receiver: its own power save")
struct PowerSaveSimulationTests {
    static func tracking(_ dialect: SimulatedReceiver.Dialect) -> ReceiverBench {
        let bench = ReceiverBench(dialect)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(40))
        _ = bench.take()
        return bench
    }

    /// Power save at a 600 s interval for an hour: one fix (and nothing else) per interval.
    static func expectOneFixPerInterval(_ bench: ReceiverBench, sourceLocation: SourceLocation = #_sourceLocation) {
        // The stretch before each fix is silent, and each fix is one epoch with a position.
        #expect(bench.receiver.mode == .powerSave, sourceLocation: sourceLocation)
        #expect(bench.receiver.powerSaveInterval == .seconds(600), sourceLocation: sourceLocation)
        // To the first power-save fix, on the interval's grid.
        if let next = bench.receiver.timeToNextEvent { bench.advance(by: next) }
        _ = bench.take()
        let fixesBefore = bench.receiver.fixesSent
        let before = bench.receiver.timeInModes[.powerSave] ?? .zero
        var silentStretches = 0
        var fixes = 0
        for _ in 0..<6 {
            bench.advance(by: .seconds(599))
            if bench.take().messages.isEmpty { silentStretches += 1 }
            bench.advance(by: .seconds(1))
            fixes += bench.fixes().filter(\.hasPosition).count
        }
        #expect(silentStretches == 6, "nothing between fixes", sourceLocation: sourceLocation)
        #expect(fixes == 6, sourceLocation: sourceLocation)
        #expect(bench.receiver.fixesSent - fixesBefore == 6, sourceLocation: sourceLocation)
        let spent = (bench.receiver.timeInModes[.powerSave] ?? .zero) - before
        #expect(spent == .seconds(3600), sourceLocation: sourceLocation)
    }

    @Test("u-blox 8: CFG-PM2 and CFG-RXM lpMode 1 acknowledged, one fix per update period; lpMode 0 leaves it")
    func ubloxGen8() throws {
        let bench = Self.tracking(.ublox(protocolVersion: 18))
        let commands = try #require(
            PowerSaveCommands.plan(family: .ubloxGen8, interval: .seconds(600), protocolVersion: 18))
        #expect(bench.negotiate(commands.enter) == .active)
        #expect(bench.receiver.commandsReceived.suffix(2) == ["CFG-PM2", "CFG-RXM 1"])
        Self.expectOneFixPerInterval(bench)
        #expect(bench.negotiate(commands.leave) == .active)
        #expect(bench.receiver.mode == .tracking && bench.receiver.powerSaveInterval == nil)
        bench.advance(by: .seconds(5))
        #expect(bench.receiver.fixesSent >= 5 + 6)
    }

    @Test("u-blox 9 and M10: the CFG-PM-* keys by CFG-VALSET; OPERATEMODE 0 leaves it", arguments: [27.31, 34.10])
    func valsetKeys(_ version: Double) throws {
        let bench = Self.tracking(.ublox(protocolVersion: version))
        let commands = try #require(PowerSaveCommands.plan(family: .ubloxM10, interval: .seconds(600)))
        #expect(bench.negotiate(commands.enter) == .active)
        Self.expectOneFixPerInterval(bench)
        #expect(bench.negotiate(commands.leave) == .active)
        #expect(bench.receiver.mode == .tracking)
    }

    @Test("cyclic tracking below 10 s: one fix per period; energy in power save accumulates")
    func cyclicTracking() throws {
        let bench = Self.tracking(.ublox(protocolVersion: 27.31))
        let commands = try #require(PowerSaveCommands.plan(family: .ubloxGen9, interval: .seconds(1)))
        #expect(bench.negotiate(commands.enter) == .active)
        #expect(bench.receiver.mode == .powerSave && bench.receiver.powerSaveInterval == .seconds(1))
        let before = bench.receiver.fixesSent
        bench.advance(by: .seconds(10))
        #expect(bench.receiver.fixesSent - before == 10)
    }

    @Test("the refusePowerSave fault: each family's command is refused, and the receiver stays continuous")
    func refused() throws {
        for (dialect, family) in [
            (SimulatedReceiver.Dialect.ublox(protocolVersion: 18), Board.ChipFamily.ubloxGen8),
            (.ublox(protocolVersion: 34.10), .ubloxM10), (.mtk, .mtk),
        ] {
            let bench = Self.tracking(dialect)
            bench.receiver.inject(.refusePowerSave)
            let commands = try #require(PowerSaveCommands.plan(family: family, interval: .seconds(600)))
            let outcome = bench.negotiate(commands.enter)
            guard case .refused(let reason) = outcome else {
                Issue.record("\(family): \(String(describing: outcome))")
                continue
            }
            #expect(reason.contains(family == .mtk ? "PMTK225" : "ACK-NAK"), "\(family): \(reason)")
            #expect(bench.receiver.mode == .tracking && bench.receiver.powerSaveInterval == nil)
            // Other configuration is still taken.
            bench.receiver.clearFaults()
            #expect(bench.negotiate(commands.enter) == .active, "\(family)")
        }
    }

    @Test("CFG-PMS presets: interval, aggressive, full power")
    func cfgPMS() {
        let bench = Self.tracking(.ublox(protocolVersion: 18))
        bench.send(UBXCfgPMS(preset: .interval, period: 120, onTime: 0).frame)
        #expect(bench.take().messages.contains {
            if case .ubx(.ack(let ack)) = $0 { ack.acknowledged == .cfgPMS } else { false }
        })
        #expect(bench.receiver.mode == .powerSave && bench.receiver.powerSaveInterval == .seconds(120))
        bench.send(UBXCfgPMS(preset: .aggressive2Hz).frame)
        #expect(bench.receiver.powerSaveInterval == .milliseconds(500))
        bench.send(UBXCfgPMS(preset: .fullPower).frame)
        #expect(bench.receiver.mode == .tracking && bench.receiver.powerSaveInterval == nil)
        bench.send(UBXCfgPMS(preset: .interval, period: 0).frame)
        #expect(bench.take().messages.contains { if case .ubx(.nak) = $0 { true } else { false } })
    }

    @Test("switched on while acquiring: power save from the first fix; a reboot forgets it")
    func fromFirstFix() throws {
        let bench = ReceiverBench(.ublox(protocolVersion: 27.31))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        let commands = try #require(PowerSaveCommands.plan(family: .ubloxGen9, interval: .seconds(60)))
        #expect(bench.negotiate(commands.enter) == .active)
        #expect(bench.receiver.mode == .acquiring)
        bench.advance(by: .seconds(30))
        #expect(bench.receiver.mode == .powerSave)
        bench.receiver.setMainPower(false)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(3))
        #expect(bench.receiver.mode == .tracking && bench.receiver.powerSaveInterval == nil)
    }

    @Test("MTK: PMTK225 periodic standby acknowledged, one fix per run + sleep; PMTK225,0 leaves it")
    func mtkPeriodic() throws {
        let bench = Self.tracking(.mtk)
        let commands = try #require(PowerSaveCommands.plan(family: .mtk, interval: .seconds(600)))
        #expect(bench.negotiate(commands.enter) == .active)
        Self.expectOneFixPerInterval(bench)
        #expect(bench.negotiate(commands.leave) == .active)
        #expect(bench.receiver.mode == .tracking)
        // Perpetual backup is still PMTK225,4.
        bench.send(PMTK.perpetualBackup)
        #expect(bench.receiver.mode == .perpetualBackup)
    }
}
