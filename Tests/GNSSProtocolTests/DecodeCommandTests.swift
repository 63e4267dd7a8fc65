// `gnss-hat decode`: the built command on a capture, its summary, and its usage errors.

import Foundation
import GNSSProtocol
import GPSDProtocol
import Testing
import TestSupport

@Suite("gnss-hat decode")
struct DecodeCommandTests {
    @Test("writes gpsd TPV and SKY lines, the same from a file and from standard input")
    func jsonLines() throws {
        let capture = try TestPaths.corpus().appendingPathComponent("gpsd/ublox-8.log")
        let fromFile = try CommandRun.run(["decode", capture.path])
        #expect(fromFile.status == 0)
        let lines = fromFile.out.split(separator: "\n")
        #expect(lines.count == 144)  // 72 epochs, a TPV and a SKY each
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["class"] as? String == "TPV" || object["class"] as? String == "SKY")
            #expect(!line.contains("null"))
        }
        let fromStdin = try CommandRun.run(["decode", "-"], input: try Data(contentsOf: capture))
        #expect(fromStdin.out == fromFile.out)
        // The library pipeline gives the same bytes (the command only adds file reading).
        var encoder = GPSDStreamEncoder()
        var output: [UInt8] = []
        try captureBytes(capture).withUnsafeBytes { encoder.append($0, to: &output) }
        encoder.finish(to: &output)
        #expect(String(decoding: output, as: UTF8.self) == fromFile.out)
    }

    @Test("--summary counts frames, errors and epochs")
    func summary() throws {
        let capture = try TestPaths.corpus().appendingPathComponent("gpsd/ublox-8.log")
        let result = try CommandRun.run(["decode", "--summary", capture.path])
        #expect(result.status == 0)
        #expect(result.out.contains("frames: 1008 (NMEA 1008, UBX 0, RTCM3 0)"))
        #expect(result.out.contains("epochs: 72 fixes (3D 72, 2D 0, no fix 0), 72 sky views"))
        #expect(result.out.contains("GSV 504"))
    }

    @Test("usage errors go to standard error with exit status 2; a missing file is status 1")
    func errors() throws {
        for arguments in [["decode"], ["decode", "--bogus", "x"], ["decode", "a", "b"], ["nosuchcommand"]] {
            let result = try CommandRun.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.out.isEmpty && result.err.contains("usage"), "\(arguments)")
        }
        let missing = try CommandRun.run(["decode", "/nonexistent/capture.log"])
        #expect(missing.status == 1 && missing.err.contains("cannot open"))
    }
}
