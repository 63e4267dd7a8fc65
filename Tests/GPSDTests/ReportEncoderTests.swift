import Foundation
@testable import GNSSHat  // ReceiverEvent.forEach(of:): decoder outputs as the session delivers them
import GNSSHatSimulator
import GNSSProtocol
@testable import GPSD
import GPSDProtocol
import PiHardware
import Testing

/// `$BODY*hh\r\n` with the NMEA checksum.
private func nmea(_ body: String) -> [UInt8] {
    let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
    let hex = String(checksum, radix: 16, uppercase: true)
    return Array("$\(body)*\(hex.count == 1 ? "0" + hex : hex)\r\n".utf8)
}

/// Messages of `bytes`, through the framer and the decoder.
private func messages(_ bytes: [UInt8]) throws -> [Message] {
    var framer = Framer()
    framer.append(contentsOf: bytes)
    var result: [Message] = []
    while let frame = framer.next() { result.append(try Message(frame: frame)) }
    return result
}

/// The receiver's events for the next `bytes`, as its session delivers them.
private func events(_ bytes: [UInt8], _ decoder: inout GNSSDecoder) -> [ReceiverEvent] {
    decoder.append(contentsOf: bytes)
    var events: [ReceiverEvent] = []
    while let output = decoder.next() { ReceiverEvent.forEach(of: output) { events.append($0) } }
    return events
}

/// Two NMEA epochs (12:00:00 and 12:00:01) and the start of a third.
private let epochs: [[UInt8]] = [
    nmea("GPRMC,120000.00,A,5128.67400,N,00000.09000,W,0.5,90.0,290626,,,A"),
    nmea("GPGGA,120000.00,5128.67400,N,00000.09000,W,1,08,1.0,45.0,M,47.0,M,,"),
    nmea("GPGSA,A,3,01,02,03,04,05,06,07,08,,,,,2.0,1.0,1.7"),
    nmea("GPRMC,120001.00,A,5128.67500,N,00000.09000,W,0.5,90.0,290626,,,A"),
    nmea("GPGGA,120001.00,5128.67500,N,00000.09000,W,1,08,1.0,45.0,M,47.0,M,,"),
    nmea("GPGSA,A,3,01,02,03,04,05,06,07,08,,,,,2.0,1.0,1.7"),
    nmea("GPRMC,120002.00,A,5128.67600,N,00000.09000,W,0.5,90.0,290626,,,A"),
]

private func describe(_ event: GPSDEvent) -> String {
    switch event {
    case .tpv(let line): "TPV " + String(decoding: line, as: UTF8.self)
    case .sky(let line): "SKY " + String(decoding: line, as: UTF8.self)
    case .timeOffset(let offset): "TOFF real \(offset.real) clock \(offset.clock)"
    case .pulse(let offset): "PPS real \(offset.real) clock \(offset.clock)"
    case .sentence(let bytes): "NMEA " + String(decoding: bytes, as: UTF8.self)
    case .frame(let bytes): "FRAME \(bytes.count)"
    case .batch(let events): events.map(describe).joined(separator: "\n")
    }
}

@Suite("Receiver reports")
struct ReportEncoderTests {
    /// Feeds the receiver's events for the epochs one sentence at a time, the n-th at wall time n ms; with
    /// `earlyPosition`, the receiver gives provisional fixes (`ReceiverOptions.provisionalFixes`).
    private func run(earlyPosition: Bool) throws -> [(index: Int, event: String)] {
        var decoder = GNSSDecoder(options: GNSSDecoder.Options(provisionalFixes: earlyPosition))
        var encoder = ReportEncoder(device: "/dev/ttyS0")
        var output: [(Int, String)] = []
        for (index, sentence) in epochs.enumerated() {
            for event in events(sentence, &decoder) {
                for report in encoder.consume(event, at: Int64(index) * 1_000_000, monotonicNow: 0) {
                    // An epoch end's batch, as its reports one after another.
                    if case .batch(let reports) = report {
                        for report in reports { output.append((index, describe(report))) }
                    } else {
                        output.append((index, describe(report)))
                    }
                }
            }
        }
        return output
    }

    @Test("every sentence passes through (encoded again from its fields); each epoch's TPV comes when the epoch ends, with its TOFF")
    func normal() throws {
        let output = try run(earlyPosition: false)
        let passed = output.filter { $0.event.hasPrefix("NMEA ") }.map { Array($0.event.dropFirst(5).utf8) }
        #expect(try passed.map(messages) == epochs.map(messages))
        let tpvs = output.filter { $0.event.hasPrefix("TPV ") }
        #expect(tpvs.count == 2)
        #expect(tpvs.allSatisfy { $0.event.contains("\"device\":\"/dev/ttyS0\"") && $0.event.hasSuffix("\r\n") })
        #expect(tpvs.first?.event.contains("\"time\":\"2026-06-29T12:00:00.000Z\"") == true)
        #expect(tpvs.first?.event.contains("\"lat\":51.477900000") == true)
        // The first epoch began with sentence 0 (at 0 ms); the second with sentence 3 (3 ms) or later.
        let offsets = output.filter { $0.event.hasPrefix("TOFF ") }.map(\.event)
        #expect(offsets.first == "TOFF real \(1_782_734_400_000_000_000) clock 0")
        #expect(offsets.count == 2)
    }

    @Test("an epoch's TPV, TOFF and SKY go out together when it ends; other events are not held")
    func epochEndBatch() throws {
        var decoder = GNSSDecoder()
        var encoder = ReportEncoder(device: "/dev/ttyS0")
        var reports: [GPSDEvent] = []
        let gsv = nmea("GPGSV,1,1,02,01,40,083,46,02,17,308,41")
        for sentence in epochs.prefix(3) + [gsv] + epochs.suffix(4) {
            for event in events(sentence, &decoder) {
                reports += encoder.consume(event, at: 0, monotonicNow: 0)
            }
        }
        let batches = reports.compactMap { report -> [String]? in
            guard case .batch(let events) = report else { return nil }
            return events.map { String(describe($0).prefix(4)) }
        }
        #expect(batches == [["TPV ", "TOFF", "SKY "], ["TPV ", "TOFF", "SKY "]])
        // Held only until the epoch's end: a fix delivered alone goes out with the next event.
        var lone = ReportEncoder(device: "/dev/ttyS0", demand: PassThroughDemand(wanted: false))
        let fix = Fix()
        #expect(Array(lone.consume(.fix(fix), at: 0, monotonicNow: 0)).isEmpty)
        let next = Array(lone.consume(.notice("x"), at: 0, monotonicNow: 0)).map(describe)
        #expect(next.count == 1 && next.first?.hasPrefix("TPV ") == true)
    }

    @Test("early position: a TPV with the epoch's position as soon as it is known, then the complete one")
    func early() throws {
        let normal = try run(earlyPosition: false).filter { $0.event.hasPrefix("TPV ") }
        let early = try run(earlyPosition: true).filter { $0.event.hasPrefix("TPV ") }
        // Two epochs early and complete, and the third one's early TPV.
        #expect(early.count == 5)
        let firstComplete = try #require(normal.first)
        let firstEarly = try #require(early.first)
        #expect(firstEarly.index < firstComplete.index)
        #expect(firstEarly.event.contains("\"lat\":51.477900000") && firstEarly.event.contains("\"lon\":-0.001500000"))
        #expect(early.dropFirst().first?.event == firstComplete.event)
    }

    @Test("with no watcher wanting them, sentences are not encoded again; the reports still come")
    func noDemand() throws {
        var decoder = GNSSDecoder()
        var encoder = ReportEncoder(device: "/dev/ttyS0", demand: PassThroughDemand())
        var kinds: [String] = []
        for sentence in epochs {
            for event in events(sentence, &decoder) {
                for report in encoder.consume(event, at: 0, monotonicNow: 0) {
                    kinds.append(String(describe(report).prefix(4)))
                }
            }
        }
        #expect(!kinds.contains("NMEA"))
        #expect(kinds.filter { $0 == "TPV " }.count == 2)
    }

    @Test("a PPS edge on the monotonic clock is moved to the wall clock; its second is the nearest one")
    func pulse() {
        var encoder = ReportEncoder(device: "/dev/ttyS0")
        let edge = EdgeEvent(kind: .rising, timestamp: .seconds(100), clock: .monotonic, sequence: 1)
        let reports = encoder.consume(
            .pps(PPSPulse(edge: edge)), at: 1_700_000_000_000_300_000, monotonicNow: 100_000_500_000)
        #expect(reports.map(describe) == ["PPS real 1700000000000000000 clock 1699999999999800000"])
    }

    @Test("UBX messages pass through as frames that decode to the same message")
    func frames() throws {
        let poll: [UInt8] = [0xB5, 0x62, 0x0A, 0x04, 0x00, 0x00, 0x0E, 0x34]
        var encoder = ReportEncoder(device: "/dev/ttyS0")
        var frames: [[UInt8]] = []
        for message in try messages(poll) {
            for report in encoder.consume(.message(message), at: 0, monotonicNow: 0) {
                if case .frame(let bytes) = report { frames.append(bytes) }
            }
        }
        #expect(frames == [poll])
    }

    @Test("a simulator board's device: its pseudo-terminal, speed, driver, cycle and PPS")
    func device() async throws {
        let board = try BoardCatalog.load("simulator")
        let receiver = try Receiver(board: board, hardware: .simulated)
        let device = GPSDDevice(receiver: receiver)
        #expect(device.path.hasPrefix("/dev/pts/"))
        #expect(device.bps == 115200 && device.driver == "u-blox" && device.cycle == 1 && device.hasPPS)
        await receiver.shutdown()
    }
}
