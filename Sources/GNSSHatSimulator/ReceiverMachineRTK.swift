// The simulated u-blox F9's RTK: RTCM 3 on its input (CRC-24Q checked by the framer, taken only while
// the port's RTCM 3 input is enabled), a reference station (1005/1006) and MSM observations move its
// solution from 3D to DGNSS at once, to RTK float after `rtkFloat` and to RTK fixed after `rtkFixed`
// of corrections flowing; corrections older than the DGNSS timeout drop it back to 3D. RXM-RTCM says
// which messages it used. The timings are assumptions (docs/ntrip.md): no vendor publishes a time to fixed.
import GNSSHat
import GNSSProtocol

/// What the simulated receiver knows of the corrections it was sent.
struct RTKIntake: Sendable {
    /// CFG-UART1INPROT-RTCM3X: on by default on a ZED-F9P; configuration in RAM, lost at boot.
    var inputEnabled = true
    /// CFG-MSGOUT-UBX_RXM_RTCM_UART1: off by default.
    var reportsMessages = false
    /// CFG-NAVSPG-CONSTR_DGNSSTO: corrections older than this are not used (60 s by default).
    var timeout: Duration = .seconds(60)
    /// The reference station (1005/1006): its id.
    var station: Int?
    /// When observations (MSM with at least four satellites, of the station) last came.
    var lastObservationAt: Duration?
    /// When the current run of usable corrections began (nil: none flowing).
    var flowingSince: Duration?
    /// Messages used, not used, and frames whose CRC failed.
    var used = 0
    var notUsed = 0
    var crcFailed = 0
}

/// The corrections' effect on one epoch's solution.
struct RTKSolution: Sendable, Equatable {
    var carrier: CarrierSolution
    /// The correction age, seconds, and the station.
    var age: Double
    var station: Int
    /// The horizontal accuracy, metres.
    var accuracy: Double

    /// GGA's quality: 2 DGNSS, 5 RTK float, 4 RTK fixed.
    var ggaQuality: Int {
        switch carrier {
        case .none: 2
        case .float: 5
        case .fixed: 4
        }
    }

    /// RMC's mode indicator: D differential, F float RTK, R real-time kinematic (fixed).
    var modeIndicator: Unicode.Scalar {
        switch carrier {
        case .none: "D"
        case .float: "F"
        case .fixed: "R"
        }
    }
}

extension ReceiverMachine {
    /// The minimum satellites an MSM message must carry to be usable here.
    static let minimumObservedSatellites = 4

    /// An RTCM 3 frame from the host (its CRC already checked by the intake's framer).
    mutating func receiveRTCM(_ frame: RTCM3Frame, now: Duration, output: inout ReceiverOutput) {
        guard rtk.inputEnabled else { return }
        let station = frame.stationID
        var use = UBXRxmRTCM.Use.notUsed
        if let arp = RTCM3StationARP(frame) {
            if rtk.station != arp.stationID { rtk.flowingSince = nil }
            rtk.station = arp.stationID
            use = .used
        } else if let msm = RTCM3MSM(frame) {
            if let known = rtk.station, known == msm.stationID,
                msm.satellites.count >= Self.minimumObservedSatellites
            {
                if !correctionsFresh(at: now) { rtk.flowingSince = now }
                rtk.lastObservationAt = now
                use = .used
            }
        } else if frame.messageNumber == 1230, rtk.station != nil {
            use = .used
        }
        if use == .used { rtk.used += 1 } else { rtk.notUsed += 1 }
        if rtk.reportsMessages {
            let report = UBXRxmRTCM(msgType: UInt16(clamping: frame.messageNumber),
                                    refStation: UInt16(clamping: station ?? 0), use: use)
            send(report.frame, now: now, output: &output)
        }
    }

    /// RTCM frames whose CRC-24Q failed (the intake's framer dropped them): reported as such.
    mutating func rtcmFailedCRC(_ count: Int, now: Duration, output: inout ReceiverOutput) {
        guard count > 0, rtk.inputEnabled else { return }
        rtk.crcFailed += count
        guard rtk.reportsMessages else { return }
        for _ in 0..<count {
            send(UBXRxmRTCM(msgType: 0, refStation: 0, use: .notUsed, crcFailed: true).frame, now: now,
                 output: &output)
        }
    }

    /// Whether observations came within the timeout before `time`.
    func correctionsFresh(at time: Duration) -> Bool {
        guard rtk.station != nil, let last = rtk.lastObservationAt else { return false }
        return time - last <= rtk.timeout
    }

    /// The solution the corrections give an epoch at `time` with a 3D fix of `accuracy` metres; nil:
    /// none (no corrections, or older than the timeout, which also ends the run of corrections).
    mutating func rtkSolution(at time: Duration, accuracy: Double) -> RTKSolution? {
        guard isUBlox, correctionsFresh(at: time), let since = rtk.flowingSince, let station = rtk.station,
            let last = rtk.lastObservationAt
        else {
            rtk.flowingSince = nil
            return nil
        }
        let simulation = settings.simulation
        let flowing = time - since
        let age = SimulationMath.seconds(time - last)
        if flowing < simulation.rtkFloat {
            return RTKSolution(carrier: .none, age: age, station: station, accuracy: min(accuracy, 0.5))
        }
        if flowing < simulation.rtkFixed {
            // Float: 0.25 m when it begins, converging to 0.10 m by the time it fixes.
            let span = max(SimulationMath.seconds(simulation.rtkFixed - simulation.rtkFloat), 1)
            let into = SimulationMath.seconds(flowing - simulation.rtkFloat)
            return RTKSolution(carrier: .float, age: age, station: station, accuracy: 0.25 - 0.15 * into / span)
        }
        return RTKSolution(carrier: .fixed, age: age, station: station, accuracy: 0.014)
    }

    /// CFG-VALSET items of the RTK configuration; false: not an RTK key.
    mutating func applyRTK(_ item: UBXConfigItem) -> Bool {
        switch item.key {
        case UBXConfigItem.uart1InputRTCM3: rtk.inputEnabled = item.value != 0
        case UBXConfigItem.rxmRTCMOutputUART1: rtk.reportsMessages = item.value != 0
        case UBXConfigItem.navspgDGNSSTimeout: rtk.timeout = .seconds(Int(max(item.value, 1)))
        default: return false
        }
        return true
    }
}
