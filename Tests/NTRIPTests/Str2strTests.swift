// The client against RTKLIB's str2str as an NTRIP 1 caster (Debian's rtklib): RTCM frames written to
// its standard input one at a time, each waited for at the client before the next (str2str relays as
// it reads). It answers `ICY 200 OK` with no empty line, `HTTP/1.0 401 Unauthorized` to a wrong
// password, and its one-line sourcetable to an unknown mountpoint.
import Foundation
import Glibc
import GNSSHatTesting
import NTRIP
import Signals
import Testing
import TestSupport

/// str2str as a caster of mountpoint MOUNT for user rover, password secret, on `port`.
func startStr2str(port: Int) async throws -> Daemon {
    // str2str writes `STR;MOUNT;` before the rest of the sourcetable line itself.
    let line = "Berlin;RTCM 3.3;1077(1),1087(1);2;GPS+GLO;TEST;DEU;52.52;13.40;0;0;RTKLIB;none;B;N;2400;"
    // SIGKILL to stop it: str2str can hang on SIGTERM, and no test needs its clean exit.
    let peer = try Daemon("str2str", executable: TestPaths.tool("/usr/bin/str2str", package: "rtklib"),
                          ["-out", "ntripc://rover:secret@:\(port)/MOUNT:\(line)"], withInput: true,
                          stopSignal: SIGKILL)
    try await peer.line(containing: "stream server start")
    return peer
}

@Suite("NTRIP client against RTKLIB's str2str")
struct Str2strTests {
    @Test("frames flow (NTRIP 1 and 2 requests, ICY answers) and the connection closes after the linger",
          arguments: [NTRIPVersion.v1, .v2])
    func flow(version: NTRIPVersion) async throws {
        let frames = try corpusFrames()
        let port = try freeLoopbackPort()
        let caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/MOUNT", version: version)
        let token = rig.subscribe()
        let streaming = try await rig.waitForStreaming()
        #expect(streaming.contains("(ICY 200 OK, attempt "))
        for (index, frame) in frames.enumerated() {
            try caster.write(frame)
            try await rig.waitForFrames(index + 1)
        }
        #expect(rig.frames.items.map { Array($0.bytes) } == frames)
        token.cancel()
        rig.clock.advance(by: .seconds(5))
        try await rig.reports.line(containing: "disconnected from")
        #expect(rig.failureLines.count == rig.refusals, "\(rig.reports.lines)")
        await rig.client.shutdown()
    }

    @Test("a wrong password: str2str's 401 in one line, then the back-off")
    func wrongPassword() async throws {
        let port = try freeLoopbackPort()
        let caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/MOUNT", password: "not the password")
        let token = rig.subscribe()
        let line = try await rig.waitForLine(containing: "failed: the caster refused user")
        #expect(line.hasPrefix("ntrip: attempt "))
        #expect(line.contains(" on ntrip://rover@127.0.0.1:\(port)/MOUNT failed: the caster refused user "
            + "'rover' for mountpoint MOUNT (HTTP/1.0 401 Unauthorized): check the user and the password file; "
            + "next attempt in "), "\(line)")
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("an unknown mountpoint: str2str's sourcetable, and the line names MOUNT")
    func unknownMountpoint() async throws {
        let port = try freeLoopbackPort()
        let caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/ELSEWHERE")
        let token = rig.subscribe()
        let line = try await rig.waitForLine(containing: "failed: the caster has no mountpoint")
        #expect(line.contains("failed: the caster has no mountpoint ELSEWHERE (it sent its sourcetable instead); "
            + "its mountpoints: MOUNT; next attempt in "), "\(line)")
        let table = try await rig.client.sourcetable()
        #expect(table.stream(named: "MOUNT")?.identifier == "Berlin")
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("str2str killed mid-stream: a back-off of 10 s (manual clock), then the stream resumes on the new one")
    func killed() async throws {
        let frames = try corpusFrames()
        let port = try freeLoopbackPort()
        var caster = try await startStr2str(port: port)
        let rig = try ClientRig(url: "ntrip://rover@127.0.0.1:\(port)/MOUNT", version: .v1)
        let token = rig.subscribe()
        try await rig.waitForStreaming()
        let refusedBefore = rig.refusals
        try caster.write(frames[0])
        try await rig.waitForFrames(1)
        caster.stop(signal: SIGKILL)
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line.hasSuffix("failed: the caster closed the connection; next attempt in 10 s"), "\(line)")
        caster = try await startStr2str(port: port)
        defer { caster.stop() }
        let refusedBeforeRestart = rig.refusals
        rig.clock.advance(by: .seconds(10))
        try await rig.waitForStreaming(skip: 1, refusedBefore: refusedBeforeRestart)
        try caster.write(frames[1])
        try await rig.waitForFrames(2)
        #expect(rig.frames.items.last?.messageNumber == 1077)
        #expect(rig.failureLines.count == 1 + rig.refusals - refusedBefore, "\(rig.reports.lines)")
        token.cancel()
        await rig.client.shutdown()
    }
}
