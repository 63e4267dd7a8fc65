// `gnss-hat serve --mqtt ...`: the fleet bridge's options, read into an MQTTBridgeConfiguration, and
// where the service keeps its state (the journal of unsent fixes; issue 16's aiding state later).
import GNSSHat
import LinuxSystem
import MQTT

enum MQTTOptions {
    /// The options `serve` takes for the bridge.
    static let specs: [OptionSpec] = [
        .value("mqtt", "URL", "publish to the MQTT broker mqtt://[USER@]HOST[:PORT] (mqtts:// for TLS)"),
        .value("mqtt-password-file", "FILE", "the broker password: the first line of FILE (never on the command line)"),
        .value("mqtt-ca", "FILE", "PEM certificate authorities for mqtts:// (default: the system's)"),
        .value("mqtt-device", "NAME", "the device name in topics (default: the host name)"),
        .value("mqtt-owntracks-user", "USER", "OwnTracks' user level, owntracks/USER/DEVICE (default: gnss-hat)"),
        .value("mqtt-every", "SECONDS", "power the receiver for a fix at least this often, 1 to 86400 (a tracker)"),
        .value("state-dir", "DIR", "where the aiding state and the MQTT journal are kept (default: see below)"),
    ]

    static let details = """
        --mqtt publishes to a broker: gnss-hat/DEVICE/status, /power, /tpv, /sky, owntracks/USER/DEVICE and
        Home Assistant discovery; a consumer's retained gnss-hat/DEVICE/demand/NAME ({} or {"interval":600})
        powers the receiver until it is cleared or its will clears it. --mqtt-every holds the receiver until a
        fix with a position, then lets it go until the next is due. Fixes are kept in DIR/mqtt/journal while
        the broker is away. DIR: --state-dir, else $STATE_DIRECTORY (systemd's StateDirectory=), else
        /var/lib/gnss-hat for root, else $XDG_STATE_HOME/gnss-hat (~/.local/state/gnss-hat).
        """

    /// The bridge's configuration, or nil without `--mqtt`. A bad URL, an unreadable password or CA
    /// file, a bad name or an option without `--mqtt` is a usage failure: exit status 2, one line.
    static func configuration(
        _ arguments: ParsedArguments, log: @escaping @Sendable (BridgeLogLevel, String) -> Void
    ) throws -> MQTTBridgeConfiguration? {
        guard let url = arguments.value("mqtt") else {
            let given = specs.dropFirst().first { arguments.value($0.name) != nil && $0.name != "state-dir" }
            if let other = given {
                throw CommandFailure(.usage, "--\(other.name) needs --mqtt")
            }
            return nil
        }
        let every = try arguments.seconds("mqtt-every")
        if let every, every < .seconds(1) || every > .seconds(86_400) {
            throw CommandFailure(.usage, "--mqtt-every needs a number of seconds from 1 to 86400, "
                + "not '\(arguments.value("mqtt-every") ?? "")'")
        }
        var configuration: MQTTBridgeConfiguration
        do {
            let broker = try BrokerAddress(url: url)
            let device = try arguments.value("mqtt-device").map { name throws(MQTTConfigurationError) in
                try DeviceName(name)
            } ?? DeviceName.hostName()
            let user = arguments.value("mqtt-owntracks-user") ?? "gnss-hat"
            try MQTTTopics.validateOwnTracksUser(user)
            let password = try arguments.value("mqtt-password-file").map { path throws(MQTTConfigurationError) in
                try MQTTConfiguration.readPassword(from: path)
            }
            if arguments.value("mqtt-ca") != nil && !broker.usesTLS {
                throw CommandFailure(.usage, "--mqtt-ca needs an mqtts:// broker, not \(broker)")
            }
            guard let state = StateDirectory.resolve(
                arguments.value("state-dir"), environment: FileSystem.environment, isRoot: FileSystem.isSuperuser)
            else {
                throw CommandFailure(.usage, "no directory for the journal: give --state-dir (no $HOME to default to)")
            }
            configuration = MQTTBridgeConfiguration(
                broker: broker, password: password, caFile: arguments.value("mqtt-ca"), device: device,
                ownTracksUser: user, journalDirectory: state + "/mqtt", every: every, log: log)
            try configuration.connection.validate()
        } catch let error as MQTTConfigurationError {
            throw CommandFailure(.usage, "\(error)")
        }
        return configuration
    }
}

/// Where the service keeps what must outlive it.
enum StateDirectory {
    /// `option` when given; else systemd's `$STATE_DIRECTORY` (its first path: `StateDirectory=`
    /// sets it, whichever user the unit runs as); else `/var/lib/gnss-hat` for root; else
    /// `$XDG_STATE_HOME/gnss-hat`, or `$HOME/.local/state/gnss-hat` (the XDG default). Nil when a user
    /// has neither variable set.
    static func resolve(
        _ option: String?, environment: (String) -> String?, isRoot: Bool
    ) -> String? {
        aidingStateDirectory(option: option, isRoot: isRoot, environment: environment)
    }
}
