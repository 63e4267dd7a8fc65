// The ECEF solution (NAV-SOL, NAV-POSECEF, NAV-VELECEF) and the leap seconds (NAV-TIMEGPS) of our fixes
// against the TPVs gpsd's regression suite wrote for the same captures (their `.chk` files), epoch by epoch.

import Foundation
import GNSSProtocol
import Testing
import TestSupport

@Suite("ECEF solution and leap seconds against gpsd's .chk output")
struct ECEFCorpusTests {
    /// ublox-glo.log: an M10 sending NAV-POSECEF and NAV-VELECEF; ublox-lea-m8f.log: NAV-SOL and NAV-TIMEGPS.
    @Test("every gpsd TPV with ECEF fields or leap seconds has ours at the same time, equal to the centimetre",
          arguments: ["ublox-glo.log", "ublox-lea-m8f.log"])
    func agreesWithGpsd(file: String) throws {
        let directory = try TestPaths.corpus().appendingPathComponent("gpsd")
        let result = runPipeline(try captureBytes(directory.appendingPathComponent(file)))
        var ours: [String: Fix] = [:]
        for epoch in result.epochs {
            if let fix = epoch.fix, let time = fix.time { ours[time.iso8601] = fix }
        }
        let text = try String(contentsOf: directory.appendingPathComponent(file + ".chk"), encoding: .isoLatin1)
        // gpsd may write several TPVs for one time while it learns the cycle: its last one counts.
        var gpsd: [String: [String: Any]] = [:]
        var order: [String] = []
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("{\"class\":\"TPV\"") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let time = object["time"] as? String else { continue }
            if gpsd[time] == nil { order.append(time) }
            gpsd[time] = object
        }
        var gpsdReports = 0
        var compared = 0
        var disagreements: [String] = []
        for time in order {
            let object = try #require(gpsd[time])
            guard object["ecefx"] != nil || object["ecefvx"] != nil || object["leapseconds"] != nil else { continue }
            gpsdReports += 1
            guard let fix = ours[time] else { continue }
            compared += 1
            let fields: [(String, Double?)] = [
                ("ecefx", fix.ecefPosition?.x), ("ecefy", fix.ecefPosition?.y), ("ecefz", fix.ecefPosition?.z),
                ("ecefpAcc", fix.ecefPosition?.accuracy),
                ("ecefvx", fix.ecefVelocity?.x), ("ecefvy", fix.ecefVelocity?.y), ("ecefvz", fix.ecefVelocity?.z),
                ("ecefvAcc", fix.ecefVelocity?.accuracy), ("leapseconds", fix.leapSeconds.map(Double.init)),
            ]
            for (name, value) in fields {
                let theirs = (object[name] as? NSNumber)?.doubleValue
                // gpsd writes two decimals: centimetres, as the receiver gives them.
                let agree = switch (theirs, value) {
                case (nil, nil): true
                case (let a?, let b?): abs(a - b) < 0.006
                default: false
                }
                if !agree { disagreements.append("\(time) \(name): gpsd \(theirs.map { "\($0)" } ?? "-") ours "
                    + "\(value.map { "\($0)" } ?? "-")") }
            }
        }
        #expect(gpsdReports >= 10, "\(file): only \(gpsdReports) gpsd TPVs with ECEF or leap seconds")
        #expect(Double(compared) >= 0.9 * Double(gpsdReports), "\(file): \(compared) of \(gpsdReports) compared")
        #expect(disagreements.isEmpty, "\(file): \(disagreements.prefix(10).joined(separator: "; "))")
    }
}
