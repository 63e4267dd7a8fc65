// The simulated F9's RTK: RTCM 3 in (CRC-24Q checked, only with its RTCM 3 input on), a station message and MSM
// observations moving it to DGNSS, RTK float after 5 s and RTK fixed after 30 s; stale corrections drop it to 3D.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import Testing

@Suite("Simulated receiver: RTK")
struct RTKSimulationTests {
    static let station = 2003

    /// A u-blox F9 tracking (first fix had), its output so far taken.
    static func tracking() -> ReceiverBench {
        let bench = ReceiverBench(.ublox(protocolVersion: 27.31))
        bench.receiver.setMainPower(true)
        bench.advance(by: .seconds(40))
        _ = bench.take()
        return bench
    }

    /// One epoch's corrections: 1005 and a GPS MSM4 of six satellites.
    static func corrections(epoch: UInt32) -> [UInt8] {
        let arp = RTCM3StationARP(stationID: station, x: 3_980_581, y: -100, z: 4_966_825)
        let cells = [2, 5, 12, 15, 24, 29].map { RTCM3MSM.Cell(satellite: $0, signal: 2) }
        return arp.frame + RTCM3MSM(messageNumber: 1074, stationID: station, epochTime: epoch, cells: cells).frame
    }

    @Test("3D, then DGNSS at once, RTK float after 5 s, RTK fixed after 30 s; 60 s without corrections: 3D again")
    func progression() {
        let bench = Self.tracking()
        var statuses: [FixStatus] = []
        for second in 0..<32 {
            bench.send(Self.corrections(epoch: UInt32(second * 1000)))
            bench.advance(by: .seconds(1))
            statuses.append(bench.fixes().last?.status ?? .unknown)
        }
        #expect(statuses[0] == .dgps && statuses[3] == .dgps, "\(statuses)")
        #expect(statuses[6] == .rtkFloat && statuses[28] == .rtkFloat, "\(statuses)")
        #expect(statuses[30] == .rtkFixed && statuses[31] == .rtkFixed, "\(statuses)")
        #expect(bench.receiver.rtcmIntake.used == 64 && bench.receiver.rtcmIntake.station == Self.station)
        bench.advance(by: .seconds(59))
        #expect(bench.fixes().last?.status == .rtkFixed)
        bench.advance(by: .seconds(2))
        #expect(bench.fixes().last?.status == .gps)
    }

    @Test("RTCM 3 input switched off: frames ignored; on: a frame with a bad CRC-24Q is reported, later ones used")
    func inputAndCRC() {
        let bench = Self.tracking()
        let off = UBXCfgValSet(layers: .ram, items: [UBXConfigItem(key: UBXConfigItem.uart1InputRTCM3, value: 0)])
        bench.send(off.frame)
        bench.advance(by: .seconds(1))
        #expect(!bench.receiver.rtcmIntake.inputEnabled)
        bench.send(Self.corrections(epoch: 0))
        bench.advance(by: .seconds(1))
        #expect(bench.receiver.rtcmIntake.used == 0 && bench.fixes().last?.status == .gps)

        let on = UBXCfgValSet(layers: .ram, items: [
            UBXConfigItem(key: UBXConfigItem.uart1InputRTCM3, value: 1),
            UBXConfigItem(key: UBXConfigItem.rxmRTCMOutputUART1, value: 1),
        ])
        bench.send(on.frame)
        bench.send(Self.corrections(epoch: 1000))
        bench.advance(by: .seconds(1))
        #expect(bench.receiver.rtcmIntake.used == 2)
        _ = bench.take()
        var corrupt = RTCM3StationARP(stationID: Self.station, x: 3_980_581, y: -100, z: 4_966_825).frame
        corrupt[10] ^= 0xFF  // in the payload: the CRC-24Q fails
        bench.send(corrupt)
        bench.advance(by: .seconds(1))
        #expect(bench.receiver.rtcmIntake.crcFailed == 1 && bench.receiver.rtcmIntake.used == 2)
        let reports = bench.take().messages.compactMap { message -> UBXRxmRTCM? in
            if case .ubx(.rxmRTCM(let report)) = message { report } else { nil }
        }
        #expect(reports.map(\.crcFailed) == [true], "\(reports)")
        // The framer resynchronises within its longest frame (1029 bytes): later corrections are used again.
        for epoch in 2..<30 {
            bench.send(Self.corrections(epoch: UInt32(epoch * 1000)))
            bench.advance(by: .seconds(1))
        }
        let after = bench.receiver.rtcmIntake
        #expect(after.used > 2 && after.crcFailed >= 1, "\(after)")
        #expect(bench.fixes().last?.isDifferential == true)
    }
}
