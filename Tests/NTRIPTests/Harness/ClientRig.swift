// A client under test: a manual clock for every timer, its log reports and received frames recorded,
// its password in a file of the test's own.
import Foundation
import GNSSHatTesting
import LinuxSystem
import NTRIP
import Signals
import TestSupport

struct ClientRig {
    /// Near the test casters' MOUNT (and pygnssutils' default station position is elsewhere: no matter).
    static let position = NTRIPPosition(latitude: 52.5, longitude: 13.4, altitudeMSL: 40)

    let clock = ManualClock()
    let reports = Recorder<NTRIPReport>("client log")
    let frames = Recorder<RTCMFrame>("received frames")
    let client: NTRIPClient

    init(
        url: String, password: String? = "secret", version: NTRIPVersion = .v2,
        position: NTRIPPosition? = ClientRig.position, linger: Duration = .seconds(5), caFile: String? = nil
    ) throws {
        var passwordFile: String?
        if let password {
            let path = try TestPaths.temporaryDirectory().appendingPathComponent("ntrip.password").path
            try (password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            passwordFile = path
        }
        var configuration = try NTRIPConfiguration(
            url: url, passwordFile: passwordFile, version: version, softwareVersion: "9.9.9-test")
        configuration.linger = linger
        configuration.caFile = caFile
        let reports = reports
        client = NTRIPClient(configuration: configuration, clock: clock, log: { reports.append($0) },
                             position: PositionFeed(position))
    }

    /// Subscribes with a callback that records every frame.
    func subscribe() -> SignalToken {
        let frames = frames
        return client.corrections.subscribe(onValue: { frames.append($0) })
    }

    /// Waits until `count` frames in all have come.
    func waitForFrames(_ count: Int) async throws {
        try await frames.wait(for: "\(count) frames") { $0.count >= count }
    }

    /// Waits for the `skip + 1`-th streaming line (see ``waitForLine(containing:skip:)``).
    @discardableResult
    func waitForStreaming(skip: Int = 0, refusedBefore: Int = 0) async throws -> String {
        try await waitForLine(containing: "streaming RTCM", skip: skip, refusedBefore: refusedBefore)
    }

    /// Waits for the `skip + 1`-th line containing `text`. A peer that says it started before it listens
    /// (str2str, gnssserver) refuses an attempt that comes too soon: each such refusal's back-off is
    /// moved on the manual clock, at most five times. `refusedBefore`: the refusals before the action that
    /// leads to the line (a fresh client's: none).
    @discardableResult
    func waitForLine(containing text: String, skip: Int = 0, refusedBefore: Int = 0) async throws -> String {
        for extra in 0..<5 {
            let items = try await reports.wait(for: "'\(text)' or a refused connect") { reports in
                reports.filter { "\($0)".contains(text) }.count > skip
                    || reports.filter { "\($0)".contains("connection refused") }.count > refusedBefore + extra
            }
            let matching = items.map { "\($0)" }.filter { $0.contains(text) }
            if matching.count > skip { return matching[skip] }
            guard case .backingOff(_, let retryAt) = client.status.phase else { continue }
            clock.advance(to: .init(offset: retryAt))
        }
        throw TestSetupError("no '\(text)' after five refused connects: \(reports.lines)")
    }

    /// Failed attempts whose connect was refused.
    var refusals: Int { reports.lines.filter { $0.contains("connection refused") }.count }

    /// The reports' lines that tell of a failed attempt.
    var failureLines: [String] { reports.lines.filter { $0.contains("failed:") } }
}
