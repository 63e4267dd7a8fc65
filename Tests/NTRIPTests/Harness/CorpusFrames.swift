// RTCM 3 frames from the shared F9P capture, for the casters the tests feed.
import Foundation
import GNSSProtocol
import TestSupport

/// RTCM 3 frames cut from the F9P capture (4072, 1077, 1087, 1230, ...), each whole.
func corpusFrames() throws -> [[UInt8]] {
    let bytes = try captureBytes(TestPaths.corpus().appendingPathComponent("gpsd/ublox-f9p-rtcm.log"))
    var framer = Framer()
    framer.append(contentsOf: bytes)
    var frames: [[UInt8]] = []
    while let frame = framer.next() {
        if frame.kind == .rtcm3 { frames.append(Array(frame.bytes)) }
    }
    guard frames.count >= 4 else { throw TestSetupError("only \(frames.count) RTCM frames in the capture") }
    return frames
}
