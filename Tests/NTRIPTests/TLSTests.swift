// NTRIP over TLS: the tests' caster behind socat's OpenSSL listener with a certificate of a test CA.
// The client verifies it against that CA (and the host name or address); with another CA it refuses,
// in one line that says why.
import Foundation
import GNSSHatTesting
import NTRIP
import Signals
import Testing
import TestSupport

@Suite("NTRIP over TLS")
struct TLSTests {
    /// socat terminating TLS on a free port and relaying to `caster`.
    static func tlsFront(for caster: TestCaster, certificates: TestCertificates) async throws -> (Daemon, Int) {
        let port = try freeLoopbackPort()
        let socat = try Daemon("socat", executable: TestPaths.tool("/usr/bin/socat", package: "socat"), [
            "-d", "-d",
            "OPENSSL-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork,verify=0,cert=\(certificates.serverCertificate),"
                + "key=\(certificates.serverKey)",
            "TCP:127.0.0.1:\(caster.port)",
        ], stopSignal: SIGKILL)
        try await socat.line(containing: "listening on")
        return (socat, port)
    }

    @Test("ntrip+tls:// with the test CA: verified (name and address), frames flow", arguments: ["localhost", "127.0.0.1"])
    func verified(host: String) async throws {
        let frames = try corpusFrames()
        let certificates = try TestCertificates(directory: TestPaths.temporaryDirectory())
        let caster = try TestCaster(.stream(chunked: true))
        let (socat, port) = try await Self.tlsFront(for: caster, certificates: certificates)
        defer { socat.stop() }
        let rig = try ClientRig(url: "ntrip+tls://rover@\(host):\(port)/MOUNT", caFile: certificates.ca)
        let token = rig.subscribe()
        try await rig.reports.line(containing: "streaming RTCM from ntrip+tls://rover@\(host):\(port)/MOUNT")
        caster.send(frames[1])
        caster.send(frames[2])
        try await rig.waitForFrames(2)
        #expect(rig.frames.items.map(\.messageNumber) == [1077, 1087])
        token.cancel()
        rig.clock.advance(by: .seconds(5))
        try await caster.waitForEndOfStream()
        await rig.client.shutdown()
    }

    @Test("another CA: refused before any request, one line naming the certificate check")
    func wrongCA() async throws {
        let certificates = try TestCertificates(directory: TestPaths.temporaryDirectory())
        let caster = try TestCaster(.stream(chunked: true))
        let (socat, port) = try await Self.tlsFront(for: caster, certificates: certificates)
        defer { socat.stop() }
        let rig = try ClientRig(url: "ntrip+tls://rover@localhost:\(port)/MOUNT", caFile: certificates.wrongCA)
        let token = rig.subscribe()
        let line = try await rig.reports.line(containing: "failed:")
        #expect(line.contains("failed: the caster's TLS certificate did not verify: unable to get local issuer "
            + "certificate; next attempt in 10 s"), "\(line)")
        #expect(caster.requests.isEmpty)
        #expect(rig.frames.items.isEmpty)
        token.cancel()
        await rig.client.shutdown()
    }

    @Test("a CA file that cannot be read fails the subscription at once, with the reason")
    func missingCAFile() async throws {
        let rig = try ClientRig(url: "ntrip+tls://rover@localhost:1/MOUNT", caFile: "/nonexistent/ca.crt")
        var failure: (any Error)?
        do {
            for try await _ in rig.client.corrections.subscribe() {}
        } catch {
            failure = error
        }
        let error = try #require(failure as? TLSError)
        #expect(error.kind == .setup)
        #expect("\(error)".contains("/nonexistent/ca.crt"))
        await rig.client.shutdown()
    }
}
