// `--ntrip URL --ntrip-password-file F` on serve and watch: an NTRIP client whose corrections signal
// the Receiver takes (GNSSHat does not import NTRIP: the command line builds the client and hands the
// Receiver a signal of RTCM 3 frames), and whose GGA follows the receiver's fixes.
import GNSSHat
import GNSSHatSimulator
import GNSSProtocol
import NTRIP
import Signals

/// The NTRIP client of a command, attached to its Receiver.
struct CorrectionsLink: Sendable {
    let client: NTRIPClient
    /// Keeps the position feed observing the receiver's fixes (observing powers nothing on).
    let positions: SignalToken

    static let specs: [OptionSpec] = [
        .value("ntrip", "URL", "RTK corrections from an NTRIP caster (ntrip://[USER@]HOST[:PORT][/MOUNT], "
            + "ntrip+tls://...), taken only while a subscriber asks for RTK accuracy"),
        .value("ntrip-password-file", "FILE", "the caster password (its first line) for USER@ in --ntrip"),
    ]

    static let details = """
        --ntrip connects to the caster only while the receiver is on, has a 3D fix, and some subscriber asks for
        an accuracy at or below the board's corrections.rtkAccuracyMetres (0.5 m by default; gpsd watchers with
        "accuracy", watch with --accuracy); the connection closes 10 s after the last such subscriber leaves
        (under --speed N its timers run N times faster too, as the simulated receiver's).
        """

    /// The configuration `--ntrip` and `--ntrip-password-file` give (checked before any hardware is touched);
    /// nil without `--ntrip`.
    static func configuration(_ arguments: ParsedArguments) throws -> NTRIPConfiguration? {
        guard let url = arguments.value("ntrip") else {
            if arguments.value("ntrip-password-file") != nil {
                throw UsageError("--ntrip-password-file needs --ntrip")
            }
            return nil
        }
        do {
            let configuration = try NTRIPConfiguration(
                url: url, passwordFile: arguments.value("ntrip-password-file"),
                softwareVersion: GNSSHatVersion.current)
            _ = try configuration.credentials()
            return configuration
        } catch {
            throw UsageError("--ntrip: \(error)")
        }
    }

    /// A client of `configuration` attached to `receiver`; nil without one. With `clock` (a simulated board run
    /// faster, `--speed`), the client's timers (linger, data time-out, GGA, back-off) run on the receiver's
    /// clock, so that the link lingers as long in the receiver's time as it would in real time.
    static func attach(
        _ configuration: NTRIPConfiguration?, to receiver: Receiver, clock: AcceleratedClock? = nil,
        log: @escaping @Sendable (String) -> Void
    ) -> CorrectionsLink? {
        guard let configuration else { return nil }
        let feed = PositionFeed()
        let client = clock.map {
            NTRIPClient(configuration: configuration, clock: $0, log: { log("\($0)") }, position: feed)
        } ?? NTRIPClient(configuration: configuration, log: { log("\($0)") }, position: feed)
        // The GGA reports the receiver's latest position; observing does not keep the receiver on.
        let positions = receiver.fixes.observe(onValue: { fix in
            guard let position = Self.position(of: fix) else { return }
            feed.update(position)
        })
        receiver.useCorrections(client.corrections.map(configuration: SignalConfiguration(replay: .none)) {
            $0.frame
        })
        return CorrectionsLink(client: client, positions: positions)
    }

    /// The GGA fields of a fix with a 3D position.
    static func position(of fix: Fix) -> NTRIPPosition? {
        guard fix.mode == .threeD, let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        let quality = switch fix.status {
        case .dgps: 2
        case .rtkFixed: 4
        case .rtkFloat: 5
        default: 1
        }
        return NTRIPPosition(
            latitude: latitude, longitude: longitude, altitudeMSL: fix.altitudeMSL ?? 0, time: fix.time?.timeOfDay,
            quality: quality, satellitesUsed: fix.satellitesUsed ?? 12, hdop: fix.dops.horizontal ?? 1)
    }

    /// Detaches the client from the receiver and closes its connection.
    func stop(_ receiver: Receiver) async {
        positions.cancel()
        receiver.useCorrections(nil)
        await client.shutdown()
    }
}
