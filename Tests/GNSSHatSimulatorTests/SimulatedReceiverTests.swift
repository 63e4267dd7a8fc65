import Foundation
@testable import GNSSHat  // Configurator.valsetItems: what the session configures, the receiver accepts
@testable import GNSSHatSimulator
import GNSSHatTesting
import GNSSProtocol
import Signals
import Testing

/// A simulated receiver on a manual clock, its output decoded by GNSSProtocol.
final class ReceiverBench: Sendable {
    let clock = ManualClock()
    let receiver: SimulatedReceiver
    private let output = SentBytes()

    init(
        _ dialect: SimulatedReceiver.Dialect, simulation: Board.Simulation = Board.Simulation(coldStart: .seconds(26))
    ) {
        let settings = SimulatedReceiver.Settings(dialect: dialect, simulation: simulation)
        receiver = SimulatedReceiver(settings: settings, clock: clock, timing: .driven)
        receiver.connect { [output] bytes in output.add(bytes) }
    }

    /// Moves time forward, handling every event on the way.
    func advance(by duration: Duration) {
        let target = clock.now.advanced(by: duration)
        while let next = receiver.timeToNextEvent.map({ clock.now.advanced(by: $0) }), next <= target {
            clock.advance(to: next)
            receiver.tick()
        }
        clock.advance(to: target)
        receiver.tick()
    }

    /// The messages sent since the last call, and the framer's checksum failures among them.
    func take() -> (messages: [Message], checksumFailures: Int) {
        let bytes = output.take()
        var framer = Framer()
        framer.append(contentsOf: bytes)
        framer.finish()
        var messages: [Message] = []
        while let frame = framer.next() {
            if let message = try? Message(frame: Frame(kind: frame.kind, bytes: ArraySlice(Array(frame.bytes)))) {
                messages.append(message)
            }
        }
        return (messages, framer.statistics.checksumFailures)
    }

    /// Epochs (with and without a fix) assembled from what was sent.
    func fixes() -> [Fix] {
        var assembler = EpochAssembler()
        var fixes: [Fix] = []
        for message in take().messages {
            for epoch in assembler.consume(message) { if let fix = epoch.fix { fixes.append(fix) } }
        }
        if let last = assembler.finish()?.fix { fixes.append(last) }
        return fixes
    }

    func send(_ bytes: [UInt8]) {
        receiver.receive(bytes)
    }
}

@Suite("Simulated receiver")
struct SimulatedReceiverTests {
    static let ublox = SimulatedReceiver.Dialect.ublox(protocolVersion: 27.31)

    @Test("silent while off; boot messages after the boot time; a cold start takes the cold time")
    func bootAndColdStart() {
        let bench = ReceiverBench(Self.ublox)
        bench.advance(by: .seconds(10))
        #expect(bench.take().messages.isEmpty)
        bench.send(UBX.poll(.monVER))
        #expect(bench.take().messages.isEmpty, "an unpowered receiver answers nothing")
        bench.receiver.setMainPower(true)
        #expect(bench.receiver.mode == .booting)
        bench.advance(by: .milliseconds(299))
        #expect(bench.take().messages.isEmpty)
        bench.advance(by: .milliseconds(1))
        let boot = bench.take().messages
        #expect(boot.contains { if case .nmea(.txt(let txt)) = $0 { txt.text.hasPrefix("u-blox AG") } else { false } })
        bench.advance(by: .seconds(25))
        #expect(bench.fixes().allSatisfy { !$0.hasPosition })
        bench.advance(by: .seconds(3))
        #expect(bench.fixes().contains { $0.hasPosition })
        #expect(bench.receiver.starts == [.cold])
        #expect(bench.receiver.mode == .tracking)
    }

    @Test("MON-VER, CFG-VALSET acknowledged and applied; unknown CFG messages refused")
    func configuration() {
        let bench = ReceiverBench(Self.ublox)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        bench.send(UBX.poll(.monVER))
        let version = bench.take().messages.compactMap { message -> UBXMonVER? in
            if case .ubx(.monVER(let version)) = message { version } else { nil }
        }
        #expect(version.first?.protocolVersion == 27.31)
        let valset = UBXCfgValSet(items: Configurator.valsetItems(period: .milliseconds(500), i2c: false))
        bench.send(valset.frame)
        #expect(bench.take().messages.contains {
            if case .ubx(.ack(let ack)) = $0 { ack.acknowledged == .cfgVALSET } else { false }
        })
        #expect(bench.receiver.period == .milliseconds(500))
        #expect(bench.receiver.sendsNavPVT)
        bench.send(UBX.frame(UBX.MessageID(0x06, 0x3E), payload: [0, 0, 0, 0]))
        #expect(bench.take().messages.contains { if case .ubx(.nak) = $0 { true } else { false } })
        bench.advance(by: .seconds(1))
        #expect(bench.take().messages.contains { if case .ubx(.navPVT) = $0 { true } else { false } })
    }

    @Test("a u-blox 8 refuses CFG-VALSET and takes CFG-MSG and CFG-RATE")
    func ubloxGen8() {
        let bench = ReceiverBench(.ublox(protocolVersion: 18))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        bench.send(UBXCfgValSet(items: Configurator.valsetItems(period: .seconds(1), i2c: false)).frame)
        #expect(bench.take().messages.contains { if case .ubx(.nak) = $0 { true } else { false } })
        bench.send(UBXCfgMsg(message: .navPVT, rates: [1]).frame)
        bench.send(UBXCfgRate(measRate: 200).frame)
        let acks = bench.take().messages.filter { if case .ubx(.ack) = $0 { true } else { false } }
        #expect(acks.count == 2)
        #expect(bench.receiver.sendsNavPVT && bench.receiver.period == .milliseconds(200))
    }

    @Test("RXM-PMREQ: backup until a UART byte, then a hot start; configuration is lost")
    func backupAndUARTWake() {
        let bench = ReceiverBench(Self.ublox)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(30))
        bench.send(UBXCfgValSet(items: Configurator.valsetItems(period: .seconds(1), i2c: false)).frame)
        #expect(bench.receiver.sendsNavPVT)
        bench.send(UBXRxmPmReq.backup(wakeupSources: [.uartRX]).frame)
        #expect(bench.receiver.mode == .backup)
        _ = bench.take()
        bench.advance(by: .seconds(600))
        #expect(bench.take().messages.isEmpty, "silent in backup")
        bench.setExtintPulse()
        #expect(bench.receiver.mode == .backup, "EXTINT is not a wake-up source here")
        bench.send([0xFF, 0xFF])
        #expect(bench.receiver.mode == .booting)
        #expect(!bench.receiver.sendsNavPVT)
        // Boot 0.3 s, hot start 1 s, then the next whole-second epoch.
        bench.advance(by: .milliseconds(2500))
        #expect(bench.fixes().contains { $0.hasPosition })
        #expect(bench.receiver.starts == [.cold, .hot])
    }

    @Test("RXM-PMREQ woken by EXTINT, and by the end of its duration")
    func backupWakeSources() {
        let bench = ReceiverBench(Self.ublox)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(30))
        bench.send(UBXRxmPmReq.backup(wakeupSources: [.extint0]).frame)
        bench.send([0xFF, 0xFF])
        #expect(bench.receiver.mode == .backup, "UART traffic is not a wake-up source here")
        bench.setExtintPulse()
        #expect(bench.receiver.mode == .booting)
        bench.advance(by: .seconds(5))
        bench.send(UBXRxmPmReq.backup(wakeupSources: [.extint0], duration: 10_000).frame)
        bench.advance(by: .milliseconds(9999))
        #expect(bench.receiver.mode == .backup)
        bench.advance(by: .milliseconds(1))
        #expect(bench.receiver.mode == .booting)
    }

    @Test("CFG-RST: GNSS stop is silent, GNSS start resumes hot; a cold reset forgets the ephemeris")
    func gnssStopStart() {
        let bench = ReceiverBench(Self.ublox)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(30))
        bench.send(UBXCfgRst.gnssStop.frame)
        #expect(bench.receiver.mode == .gnssStopped)
        _ = bench.take()
        bench.advance(by: .seconds(10))
        #expect(bench.fixes().isEmpty)
        bench.send(UBXCfgRst.gnssStart.frame)
        bench.advance(by: .seconds(2))
        #expect(bench.fixes().contains { $0.hasPosition })
        bench.send(UBXCfgRst(navBbrMask: 0xFFFF, resetMode: 0x01).frame)
        bench.advance(by: .seconds(5))
        #expect(bench.fixes().allSatisfy { !$0.hasPosition })
        #expect(bench.receiver.starts == [.cold, .hot, .cold])
    }

    @Test("power cut: hot with a backup supply, cold without")
    func backupSupply() {
        for supply in [true, false] {
            let simulation = Board.Simulation(coldStart: .seconds(26), backupSupply: supply)
            let bench = ReceiverBench(Self.ublox, simulation: simulation)
            bench.receiver.setMainPower(true)
            bench.advance(by: .seconds(30))
            bench.receiver.setMainPower(false)
            bench.advance(by: .seconds(60))
            bench.receiver.setMainPower(true)
            bench.advance(by: .seconds(2))
            #expect(bench.receiver.starts == [.cold, supply ? .hot : .cold])
        }
    }

    @Test("MTK: boot messages, PMTK314 and PMTK220 acknowledged and applied, PMTK161 standby and wake-up")
    func mtk() {
        let bench = ReceiverBench(.mtk)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        let boot = bench.take().messages
        #expect(boot.contains { if case .nmea(.pmtk(.system(message: 1))) = $0 { true } else { false } })
        bench.send(PMTK.setOutput(PMTK.SentenceRates(gll: 0, rmc: 1, vtg: 0, gga: 1, gsa: 0, gsv: 0)))
        bench.send(PMTK.fixInterval(milliseconds: 2000))
        let acks = bench.take().messages.compactMap { message -> Int? in
            if case .nmea(.pmtk(.ack(let command, 3))) = message { command } else { nil }
        }
        #expect(acks == [314, 220])
        #expect(bench.receiver.period == .seconds(2))
        bench.advance(by: .seconds(4))
        let sentences = bench.take().messages
        #expect(!sentences.contains { if case .nmea(.gsv) = $0 { true } else { false } })
        #expect(sentences.contains { if case .nmea(.gga) = $0 { true } else { false } })
        bench.send(PMTK.standby)
        #expect(bench.receiver.mode == .standby)
        _ = bench.take()
        bench.advance(by: .seconds(10))
        #expect(bench.take().messages.isEmpty)
        bench.send(Array("x".utf8))
        let wake = bench.take().messages
        #expect(wake.contains { if case .nmea(.pmtk(.system(message: 2))) = $0 { true } else { false } })
        #expect(bench.receiver.mode == .acquiring)
    }

    @Test("MTK perpetual backup: only a FORCE_ON pulse brings it back")
    func perpetualBackup() {
        let bench = ReceiverBench(.mtk)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        bench.send(PMTK.perpetualBackup)
        #expect(bench.receiver.mode == .perpetualBackup)
        bench.send(PMTK.command(0))
        bench.advance(by: .seconds(5))
        #expect(bench.receiver.mode == .perpetualBackup)
        bench.receiver.setForceOn(true)
        bench.receiver.setForceOn(false)
        #expect(bench.receiver.mode == .booting)
    }

    @Test("faults: corrupted frames fail their checksum, a stall pauses, silent answers nothing")
    func faults() {
        let bench = ReceiverBench(Self.ublox)
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(1))
        _ = bench.take()
        bench.receiver.inject(.corruptFrames(3))
        bench.advance(by: .seconds(1))
        #expect(bench.take().checksumFailures == 3)
        bench.receiver.inject(.stall(.seconds(3)))
        bench.advance(by: .milliseconds(2500))
        #expect(bench.take().messages.isEmpty)
        bench.advance(by: .seconds(1))
        #expect(!bench.take().messages.isEmpty)
        bench.receiver.inject(.silent)
        bench.send(UBX.poll(.monVER))
        bench.advance(by: .seconds(3))
        #expect(bench.take().messages.isEmpty)
        bench.receiver.clearFaults()
        bench.send(UBX.poll(.monVER))
        #expect(!bench.take().messages.isEmpty)
    }

    @Test("time in each mode adds up")
    func energyAccounting() {
        let bench = ReceiverBench(Self.ublox)
        bench.advance(by: .seconds(10))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(60))
        bench.receiver.setMainPower(false)
        bench.advance(by: .seconds(30))
        let times = bench.receiver.timeInModes
        #expect(times[.off] == .seconds(40))
        #expect(times[.booting] == .milliseconds(300))
        // The first fix comes with the first epoch (whole seconds) after boot + cold start, 36.3 s.
        #expect(times[.acquiring] == .milliseconds(26_700))
        #expect(times[.tracking] == .seconds(33))
    }

    @Test("the trajectory moves at the set speed and course")
    func trajectory() {
        let machine = ReceiverMachine(settings: SimulatedReceiver.Settings(
            dialect: Self.ublox, simulation: Board.Simulation(latitude: 0, longitude: 0, speed: 10, course: 90)))
        let position = machine.position(at: .seconds(100))
        #expect(abs(position.latitude) < 1e-9)
        #expect(abs(position.longitude * 111_320 - 1000) < 0.01)
    }

    @Test("sine and cosine agree with libm", arguments: [-7.0, -1.2, 0, 0.3, 1.5707963, 2.5, 3.14159, 6.2, 100.0])
    func trigonometry(_ x: Double) {
        #expect(abs(SimulationMath.sine(x) - sin(x)) < 1e-12)
        #expect(abs(SimulationMath.cosine(x) - cos(x)) < 1e-12)
    }
}

extension ReceiverBench {
    func setExtintPulse() {
        receiver.setExtint(true)
        receiver.setExtint(false)
    }
}
