// Power-save commands per chip family, and the negotiation that reads the replies: all acknowledged is
// active; a NAK, a failed PMTK001 or silence is refused (the plan falls back to the duty cycle).
import GNSSHat
import GNSSProtocol
import Testing

@Suite("Receiver power-save commands")
struct PowerSaveCommandTests {
    static func ubx(_ command: PowerSaveCommand) throws -> UBXMessage {
        try UBXMessage(frame: ArraySlice(command.bytes))
    }
    static func text(_ command: PowerSaveCommand) -> String { String(decoding: command.bytes, as: UTF8.self) }

    @Test("u-blox 8: CFG-PM2 (ON/OFF from 10 s, cyclic tracking below) then CFG-RXM power save; leave: continuous")
    func ubloxGen8() throws {
        let plan = try #require(
            PowerSaveCommands.plan(family: .ubloxGen8, interval: .seconds(600), protocolVersion: 18))
        #expect(plan.enter.map(\.reply) == [.ubx(.cfgPM2), .ubx(.cfgRXM)])
        guard case .cfgPM2(let pm2) = try Self.ubx(plan.enter[0]) else { throw DecodeError.truncated }
        #expect(pm2.version == 1 && pm2.payload.count == 44 && pm2.mode == .onOff)
        #expect(pm2.updatePeriod == 600_000 && pm2.searchPeriod == 600_000)
        #expect(try Self.ubx(plan.enter[1]) == .cfgRXM(UBXCfgRXM(lpMode: 1)))
        #expect(try Self.ubx(plan.leave[0]) == .cfgRXM(UBXCfgRXM(lpMode: 0)))

        let fast = try #require(PowerSaveCommands.plan(family: .ubloxGen8, interval: .seconds(2), protocolVersion: 23))
        guard case .cfgPM2(let cyclic) = try Self.ubx(fast.enter[0]) else { throw DecodeError.truncated }
        #expect(cyclic.version == 2 && cyclic.payload.count == 48 && cyclic.mode == .cyclicTracking)
        #expect(cyclic.updatePeriod == 1000)
    }

    @Test("u-blox 9 / M10: CFG-VALSET of the CFG-PM keys; leave: OPERATEMODE full")
    func ubloxGen9() throws {
        for family in [Board.ChipFamily.ubloxGen9, .ubloxM10] {
            let plan = try #require(PowerSaveCommands.plan(family: family, interval: .seconds(60)))
            guard case .cfgValSet(let enter) = try Self.ubx(plan.enter[0]) else { throw DecodeError.truncated }
            #expect(
                enter.items == [
                    UBXConfigItem(key: UBXConfigItem.pmOperateMode, value: 1),
                    UBXConfigItem(key: UBXConfigItem.pmPosUpdatePeriod, value: 60),
                    UBXConfigItem(key: UBXConfigItem.pmAcqPeriod, value: 60),
                ])
            guard case .cfgValSet(let leave) = try Self.ubx(plan.leave[0]) else { throw DecodeError.truncated }
            #expect(leave.items == [UBXConfigItem(key: UBXConfigItem.pmOperateMode, value: 0)])
            #expect(plan.enter.map(\.reply) == [.ubx(.cfgVALSET)])
        }
        let cyclic = try #require(PowerSaveCommands.plan(family: .ubloxM10, interval: .seconds(5)))
        guard case .cfgValSet(let items) = try Self.ubx(cyclic.enter[0]) else { throw DecodeError.truncated }
        #expect(items.items == [UBXConfigItem(key: UBXConfigItem.pmOperateMode, value: 2)])
    }

    @Test("MTK: PMTK225 periodic standby, run 5 s, the rest asleep; leave: PMTK225,0; too short: none")
    func mtk() throws {
        let plan = try #require(PowerSaveCommands.plan(family: .mtk, interval: .seconds(60)))
        #expect(Self.text(plan.enter[0]).hasPrefix("$PMTK225,2,5000,55000,30000,55000*"))
        #expect(Self.text(plan.leave[0]) == "$PMTK225,0*2B\r\n")
        #expect(plan.enter[0].reply == .pmtk(225))
        #expect(PowerSaveCommands.plan(family: .mtk, interval: .seconds(5)) == nil)
        #expect(PowerSaveCommands.plan(family: .ubloxGen9, interval: .milliseconds(500)) == nil)
    }

    static func finish(_ actions: [PowerSaveNegotiation.Action]) -> PowerSaveNegotiation.Outcome? {
        actions.lazy.compactMap { if case .finish(let outcome) = $0 { outcome } else { nil } }.first
    }

    @Test("negotiation: each command waits for its ACK; all acknowledged is active")
    func active() throws {
        let plan = try #require(PowerSaveCommands.plan(family: .ubloxGen8, interval: .seconds(600)))
        var negotiation = PowerSaveNegotiation(commands: plan.enter)
        #expect(
            negotiation.start(now: .zero) == [
                .send(plan.enter[0].bytes), .armTimer(generation: 1, deadline: .seconds(1)),
            ])
        #expect(negotiation.received(.ubx(.ack(UBXAck(.cfgRXM))), now: .zero).isEmpty, "not this command's ack")
        #expect(
            negotiation.received(.ubx(.ack(UBXAck(.cfgPM2))), now: .milliseconds(100)) == [
                .send(plan.enter[1].bytes), .armTimer(generation: 2, deadline: .milliseconds(1_100)),
            ])
        #expect(negotiation.timerFired(generation: 1, now: .seconds(1)).isEmpty, "a stale timer")
        #expect(Self.finish(negotiation.received(.ubx(.ack(UBXAck(.cfgRXM))), now: .zero)) == .active)
        #expect(negotiation.isFinished)
    }

    @Test("negotiation: a NAK (a MAX-M10S refusing CFG-PM) is refused; so is silence; so is a failed PMTK001")
    func refused() throws {
        let m10 = try #require(PowerSaveCommands.plan(family: .ubloxM10, interval: .seconds(600)))
        var nak = PowerSaveNegotiation(commands: m10.enter)
        _ = nak.start(now: .zero)
        #expect(
            Self.finish(nak.received(.ubx(.nak(UBXAck(.cfgVALSET))), now: .zero))
                == .refused("CFG-VALSET was refused (ACK-NAK)"))

        var silent = PowerSaveNegotiation(commands: m10.enter, timeout: .milliseconds(500))
        _ = silent.start(now: .zero)
        #expect(
            Self.finish(silent.timerFired(generation: 1, now: .milliseconds(500)))
                == .refused("no reply to CFG-VALSET within 0.5 seconds"))

        let mtk = try #require(PowerSaveCommands.plan(family: .mtk, interval: .seconds(600)))
        var pmtk = PowerSaveNegotiation(commands: mtk.enter)
        _ = pmtk.start(now: .zero)
        #expect(pmtk.received(.nmea(.pmtk(.ack(command: 314, flag: 3))), now: .zero).isEmpty)
        #expect(
            Self.finish(pmtk.received(.nmea(.pmtk(.ack(command: 225, flag: 1))), now: .zero))
                == .refused("PMTK225: unsupported packet"))
        var accepted = PowerSaveNegotiation(commands: mtk.enter)
        _ = accepted.start(now: .zero)
        #expect(Self.finish(accepted.received(.nmea(.pmtk(.ack(command: 225, flag: 3))), now: .zero)) == .active)
    }
}
