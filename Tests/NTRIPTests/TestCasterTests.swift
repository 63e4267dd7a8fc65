// The client against the tests' own NTRIP 2 caster: chunked streams, the GGA a VRS caster waits for,
// a 401, a ban, an unknown mountpoint, the sourcetable and the nearest mountpoint, and the socket
// closed (the caster reads the end of the stream) once the linger after the last subscriber is over.
import Foundation
import GNSSProtocol
import LinuxSystem
import GNSSHatTesting
import NTRIP
import Signals
import Testing
import TestSupport

/// The test caster's sourcetable: MOUNT in Berlin (near ``ClientRig/position``), FAR in Munich.
let testSourcetable = """
    STR;MOUNT;Berlin;RTCM 3.3;1077(1),1087(1),1230(5);2;GPS+GLO;TEST;DEU;52.52;13.40;1;0;test;none;B;N;2400;\r
    STR;FAR;Muenchen;RTCM 3.3;1077(1);2;GPS;TEST;DEU;48.14;11.58;0;0;test;none;B;N;2400;\r

    """

extension TestCaster {
    convenience init(_ answer: Answer) throws {
        try self.init(answer: answer, sourcetable: testSourcetable)
    }

    var requests: [String] { seen.items.compactMap { if case .request(let text) = $0 { text } else { nil } } }
    var ggaLines: [String] { seen.items.compactMap { if case .line(let text) = $0, text.contains("GGA") { text } else { nil } } }
    var endsOfStream: Int { seen.items.filter { if case .endOfStream = $0 { true } else { false } }.count }

    func waitForGGA(_ count: Int) async throws {
        try await seen.wait(for: "\(count) GGA lines") { items in
            items.filter { if case .line(let text) = $0, text.contains("GGA") { true } else { false } }.count >= count
        }
    }

    func waitForEndOfStream(_ count: Int = 1) async throws {
        try await seen.wait(for: "\(count) ends of stream") { items in
            items.filter { if case .endOfStream = $0 { true } else { false } }.count >= count
        }
    }

    func waitForRequests(_ count: Int) async throws {
        try await seen.wait(for: "\(count) requests") { items in
            items.filter { if case .request = $0 { true } else { false } }.count >= count
        }
    }
}

@Suite("NTRIP client against the tests' caster")
struct TestCasterTests {
    @Test("NTRIP 2 chunked: frames flow while subscribed, GGA after the 200 and every 10 s; the socket closes after the linger")
    func flowAndLinger() async throws {
        let frames = try corpusFrames()
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/MOUNT")
        let token = rig.subscribe()
        try await rig.reports.line(containing: "streaming RTCM")
        let request = try #require(caster.requests.first)
        #expect(request.hasPrefix("GET /MOUNT HTTP/1.1\r\n"))
        for field in ["Ntrip-Version: Ntrip/2.0", "User-Agent: NTRIP gnss-hat/9.9.9-test",
                      "Authorization: Basic \(TestCaster.base64("rover:secret"))", "Ntrip-GGA: $GPGGA,"] {
            #expect(request.contains(field + (field.hasSuffix(",") ? "" : "\r\n")), "\(field) in \(request)")
        }
        // The GGA right after the 200, in the stream.
        try await caster.waitForGGA(1)
        for (index, frame) in frames.enumerated() {
            caster.send(frame)
            try await rig.waitForFrames(index + 1)
        }
        #expect(rig.frames.items.map { Array($0.bytes) } == frames)
        #expect(rig.frames.items.map(\.messageNumber).prefix(3) == [4072, 1077, 1087])
        #expect(rig.client.status.framesReceived == frames.count)
        // The next GGA after 10 s (on the manual clock), and a frame to keep the link alive.
        rig.clock.advance(by: .seconds(10))
        try await caster.waitForGGA(2)
        caster.send(frames[0])
        try await rig.waitForFrames(frames.count + 1)
        // The last subscriber leaves: the connection lingers 5 s, then closes.
        token.cancel()
        #expect(rig.client.corrections.state == .lingering)
        #expect(caster.endsOfStream == 0)
        #expect(caster.streamingCount == 1)
        rig.clock.advance(by: .seconds(5))
        try await caster.waitForEndOfStream()
        try await rig.reports.line(containing: "disconnected from ntrip://rover@127.0.0.1:\(caster.port)/MOUNT")
        #expect(rig.client.status.phase == .idle)
        #expect(rig.failureLines.isEmpty, "\(rig.reports.lines)")
        await rig.client.shutdown()
    }

    @Test("a VRS caster sends nothing until it has a GGA: the client's GGA right after the 200 (NTRIP 1) starts it")
    func virtualReferenceStation() async throws {
        let frames = try corpusFrames()
        let caster = try TestCaster(.virtualReferenceStation)
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/MOUNT", version: .v1)
        let token = rig.subscribe()
        try await caster.waitForGGA(1)
        #expect(caster.requests.first?.hasPrefix("GET /MOUNT HTTP/1.0\r\n") == true)
        #expect(caster.requests.first?.contains("Ntrip-GGA") == false)
        let gga = try #require(caster.ggaLines.first)
        #expect(gga.hasPrefix("$GPGGA,"))
        #expect(gga.contains(",5230.00000,N,01324.00000,E,1,12,1.00,40.0,M,"), "\(gga)")
        caster.send(frames[1])
        try await rig.waitForFrames(1)
        #expect(rig.frames.items.first?.messageNumber == 1077)
        token.cancel()
        await rig.client.shutdown()
        try await caster.waitForEndOfStream()
    }

    @Test("a wrong password: one line naming the cause, then the back-off (10 s, then 20 s)")
    func wrongPassword() async throws {
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/MOUNT", password: "wrong")
        let token = rig.subscribe()
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line == "ntrip: attempt 1 on ntrip://rover@127.0.0.1:\(caster.port)/MOUNT failed: the caster refused "
            + "user 'rover' for mountpoint MOUNT (HTTP/1.1 401 Unauthorized): check the user and the password file; "
            + "next attempt in 10 s")
        #expect(!rig.reports.lines.joined().contains("wrong"))
        #expect(rig.reports.items.count == 1, "\(rig.reports.lines)")
        guard case .backingOff(2, let retryAt) = rig.client.status.phase else {
            Issue.record("\(rig.client.status.phase)")
            return
        }
        #expect(retryAt == .seconds(10))
        #expect(caster.requests.count == 1)
        rig.clock.advance(by: .seconds(10))
        let second = try await rig.reports.line(containing: "failed:", skip: 1)
        #expect(second.hasPrefix("ntrip: attempt 2 "))
        #expect(second.hasSuffix("next attempt in 20 s"))
        #expect(caster.requests.count == 2)
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("a ban (403): one line that says so")
    func ban() async throws {
        let caster = try TestCaster(.banned)
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/MOUNT")
        let token = rig.subscribe()
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line.contains("failed: the caster banned this client (HTTP/1.1 403 Forbidden); next attempt in 10 s"))
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("an unknown mountpoint: the line names the mountpoints that exist")
    func unknownMountpoint() async throws {
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/NOPE")
        let token = rig.subscribe()
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line.contains("failed: the caster has no mountpoint NOPE (it sent its sourcetable instead); "
            + "its mountpoints: MOUNT, FAR; next attempt in 10 s"), "\(line)")
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("no mountpoint named: the sourcetable, the nearest chosen (a line and the status), then its stream")
    func nearestMountpoint() async throws {
        let frames = try corpusFrames()
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)")
        let token = rig.subscribe()
        try await rig.reports.line(containing: "streaming RTCM")
        #expect(rig.reports.lines.first == "ntrip: nearest mountpoint MOUNT (Berlin), 2.2 km away")
        #expect(rig.client.status.chosen?.mountpoint == "MOUNT")
        #expect(caster.requests.map { $0.split(separator: "\r\n").first.map(String.init) ?? "" }
            == ["GET / HTTP/1.1", "GET /MOUNT HTTP/1.1"])
        caster.send(frames[0])
        try await rig.waitForFrames(1)
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("sourcetable(): fetched on a connection of its own and parsed, nearest first")
    func sourcetable() async throws {
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)")
        let table = try await rig.client.sourcetable()
        #expect(table.mountpoints == ["MOUNT", "FAR"])
        #expect(table.isComplete)
        #expect(table.streams(nearestTo: 48, 11).map(\.stream.mountpoint) == ["FAR", "MOUNT"])
        #expect(caster.requests.first?.hasPrefix("GET / HTTP/1.1\r\n") == true)
    }

    @Test("the caster gone mid-stream: back-off 10 s on the manual clock, then the stream resumes")
    func casterGone() async throws {
        let frames = try corpusFrames()
        let caster = try TestCaster(.stream(chunked: true))
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(caster.port)/MOUNT")
        let token = rig.subscribe()
        try await rig.reports.line(containing: "streaming RTCM")
        caster.send(frames[0])
        try await rig.waitForFrames(1)
        // The caster drops every connection; the next one is answered again.
        caster.shutdown()
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line.contains("failed: the caster closed the connection; next attempt in 10 s"), "\(line)")
        let replacement = try TestCaster(answer: .stream(chunked: true), port: caster.port, sourcetable: testSourcetable)
        rig.clock.advance(by: .seconds(10))
        try await rig.reports.line(containing: "streaming RTCM", skip: 1)
        replacement.send(frames[1])
        try await rig.waitForFrames(2)
        token.cancel()
        await rig.client.shutdown()
    }
}
